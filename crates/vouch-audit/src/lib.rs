//! `vouch audit`: one verdict per distribution file, from the evidence found next to it,
//! verified offline against one trust root (loaded once) and an identity policy, in parallel.
//! [`pypi`] brings a release's files and provenance down from an index first.

pub mod pypi;
mod rebuild;

use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use vouch_core::Sha256Digest;
use vouch_verify::{
    ErrorKind, Evidence, EvidenceFormat, Policy, PolicyFile, Trust, Verified, VerifyError,
};

pub use pypi::{PypiAudit, PypiError, Release};
pub use rebuild::{Rebuild, RebuildError, RebuildReport, rebuild};

/// Evidence file suffixes, in the order they are looked for. A wheel's `.sigstore.json` may
/// also be named after the CI artifact it came in (see [`vouch_verify::bundle_for`]).
pub const EVIDENCE_SUFFIXES: &[&str] = &[
    vouch_verify::BUNDLE_SUFFIX,
    ".intoto.jsonl",
    ".publish.attestation",
    ".provenance",
];
const DIST_SUFFIXES: &[&str] = &[".whl", ".tar.gz", ".zip", ".conda"];

#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Verdict {
    Verified,
    Failed,
    NoEvidence,
}

#[derive(Clone, Debug, Serialize)]
pub struct Row {
    pub file: PathBuf,
    pub dist: String,
    pub sha256: Option<Sha256Digest>,
    pub verdict: Verdict,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub kind: Option<ErrorKind>,
    pub evidence: Vec<PathBuf>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub signed_with: Option<&'static str>,
    pub repository: Option<String>,
    pub workflow: Option<String>,
    pub git_ref: Option<String>,
    pub commit: Option<String>,
    pub run: Option<String>,
    pub predicate_type: Option<String>,
    /// For a pull-request build signed by the signer workflow: what the signer says about the
    /// build (`repository`, `workflow`, `commit` and `run` above are the signer's own).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pr_build: Option<vouch_verify::PrBuildPredicate>,
    pub reason: Option<String>,
    /// Where the file came from, for `audit --pypi` (the file itself is gone after the audit).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
}

impl Row {
    /// How a verified pull-request build reads in a report: built by the PR's run, signed by
    /// the signer workflow, never the other way round.
    pub fn pr_build_summary(&self) -> Option<String> {
        let p = self.pr_build.as_ref()?;
        Some(format!(
            "pull-request build of #{} (head {} from {}, run {} of {}), signed by {} run {}",
            p.request.pr,
            p.build_run.head_sha,
            p.build_run.head_repository,
            p.build_run.run_id,
            p.build_run.workflow_path,
            self.workflow.as_deref().unwrap_or("-"),
            self.run.as_deref().unwrap_or("-"),
        ))
    }
}

pub struct Auditor {
    /// What the command line said; applied last, so it wins over the policy file.
    pub cli: vouch_verify::PolicySpec,
    pub policy_file: Option<PolicyFile>,
    /// Loaded from a [`vouch_verify::Accept::Each`] spec: a release directory may hold files
    /// signed keyless and with a key side by side.
    pub trust: Trust,
}

fn is_dist(name: &str) -> bool {
    DIST_SUFFIXES.iter().any(|s| name.ends_with(s))
        && !EVIDENCE_SUFFIXES.iter().any(|s| name.ends_with(s))
}

/// Distribution files under `paths` (files as given, directories walked, links followed),
/// sorted, and the places that could not be read (each becomes a failed row: an audit never
/// passes over what it could not see).
pub fn find_files(paths: &[PathBuf]) -> (Vec<PathBuf>, Vec<(PathBuf, String)>) {
    let mut out = Vec::new();
    let mut errors = Vec::new();
    for p in paths {
        if p.is_dir() {
            for e in walkdir::WalkDir::new(p)
                .follow_links(true)
                .sort_by_file_name()
            {
                match e {
                    // Anything but a directory with a distribution's name is listed, so a FIFO or
                    // socket posing as a wheel fails the audit instead of being passed over.
                    Ok(e)
                        if !e.file_type().is_dir() && is_dist(&e.file_name().to_string_lossy()) =>
                    {
                        out.push(e.path().to_owned())
                    }
                    Ok(_) => {}
                    Err(err) => errors.push((err.path().unwrap_or(p).to_owned(), err.to_string())),
                }
            }
        } else {
            out.push(p.clone());
        }
    }
    out.sort();
    out.dedup();
    (out, errors)
}

/// The normalized distribution name a file belongs to.
pub fn dist_name(file_name: &str) -> String {
    if let Ok(w) = file_name.parse::<vouch_wheel::WheelFilename>() {
        return w.normalized_name();
    }
    let stem = DIST_SUFFIXES
        .iter()
        .find_map(|s| file_name.strip_suffix(s))
        .unwrap_or(file_name);
    let name = if file_name.ends_with(".conda") {
        stem.rsplitn(3, '-').last().unwrap_or(stem)
    } else {
        stem.rsplit_once('-').map_or(stem, |(n, _)| n)
    };
    vouch_core::normalize_dist_name(name)
}

fn load_evidence(path: &Path) -> Result<Vec<Evidence>, VerifyError> {
    let text = vouch_verify::read_evidence_file(path)?;
    let origin = path.display().to_string();
    if path.to_string_lossy().ends_with(".intoto.jsonl") {
        let mut all = Vec::new();
        for line in text.lines().filter(|l| !l.trim().is_empty()) {
            all.extend(vouch_verify::parse_evidence(line, &origin)?);
        }
        return Ok(all);
    }
    vouch_verify::parse_evidence(&text, &origin)
}

/// The Sigstore bundle for `file` in its directory, by the rule `fetch` follows too
/// ([`vouch_verify::bundle_for`]): its own `<file>.sigstore.json`, or the one named after the
/// CI artifact a wheel came in.
fn sigstore_bundle(file: &Path) -> Result<Option<PathBuf>, String> {
    let dir = match file.parent() {
        Some(d) if !d.as_os_str().is_empty() => d,
        _ => Path::new("."),
    };
    let listing = std::fs::read_dir(dir)
        .map_err(|e| format!("cannot list {} for its evidence: {e}", dir.display()))?;
    let mut siblings = Vec::new();
    for entry in listing {
        let entry =
            entry.map_err(|e| format!("cannot list {} for its evidence: {e}", dir.display()))?;
        // Spelled like `file`, so that its own bundle's name compares equal.
        siblings.push(file.with_file_name(entry.file_name()));
    }
    vouch_verify::bundle_for(file, &siblings, vouch_verify::BundleScope::Directory)
        .map_err(|e| with_causes(&e))
}

/// The evidence files next to `file`. A path with an evidence name that exists but is not a
/// regular file (a directory, a FIFO, a socket, a link to any of those, a dangling link) fails
/// the file: evidence someone put there and that cannot be read must never be skipped.
fn find_evidence(file: &Path) -> Result<Vec<PathBuf>, String> {
    let mut found = Vec::new();
    for suffix in EVIDENCE_SUFFIXES {
        let path = if *suffix == vouch_verify::BUNDLE_SUFFIX {
            match sigstore_bundle(file)? {
                Some(p) => p,
                None => continue,
            }
        } else {
            PathBuf::from(format!("{}{suffix}", file.display()))
        };
        // Stat only: nothing is opened until it is known to be a regular file.
        match std::fs::symlink_metadata(&path) {
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => continue,
            Err(e) => return Err(format!("evidence {}: cannot stat: {e}", path.display())),
            Ok(_) => {}
        }
        match std::fs::metadata(&path) {
            Ok(m) if m.is_file() => found.push(path),
            Ok(m) => {
                return Err(format!(
                    "evidence {} is {}, not a regular file",
                    path.display(),
                    vouch_verify::kind_of(m.file_type())
                ));
            }
            Err(e) => {
                return Err(format!(
                    "evidence {} is a symbolic link that cannot be followed: {e}",
                    path.display()
                ));
            }
        }
    }
    Ok(found)
}

/// An error and the causes that add something to it, joined as `a: b: c`.
pub fn with_causes(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        let more = c.to_string();
        // sigstore errors are wrapped with their own text as the message: say it once.
        if !text.ends_with(&more) {
            text.push_str(": ");
            text.push_str(&more);
        }
        cur = c.source();
    }
    text
}

/// The sha256 of a regular file; anything else is refused before it is opened.
fn hash_regular(path: &Path) -> std::io::Result<Sha256Digest> {
    Ok(Sha256Digest::of_reader(vouch_verify::open_regular(path)?)?.0)
}

impl Row {
    /// A row with nothing found yet.
    fn new(file: &Path, dist: String, verdict: Verdict) -> Row {
        Row {
            file: file.to_owned(),
            dist,
            sha256: None,
            verdict,
            kind: None,
            evidence: Vec::new(),
            signed_with: None,
            repository: None,
            workflow: None,
            git_ref: None,
            commit: None,
            run: None,
            predicate_type: None,
            pr_build: None,
            reason: None,
            url: None,
        }
    }

    /// A row for something that could not even be read.
    /// Marks the row verified with what `v` says about the signer and statement.
    pub fn set_verified(&mut self, v: Verified) {
        self.verdict = Verdict::Verified;
        self.kind = None;
        self.reason = None;
        self.signed_with = Some(v.signed_with);
        self.repository = v.signer.repository;
        self.workflow = v.signer.build_workflow;
        self.git_ref = v.signer.git_ref;
        self.commit = v.signer.sha;
        self.run = v.signer.run;
        self.predicate_type = Some(v.statement.predicate_type);
        self.pr_build = v.statement.pr_build;
    }

    pub fn unreadable(path: &Path, reason: String) -> Row {
        Row {
            reason: Some(format!("cannot read: {reason}")),
            ..Row::new(path, String::new(), Verdict::Failed)
        }
    }
}

impl Auditor {
    fn policy_for(&self, dist: &str, format: EvidenceFormat) -> Policy {
        let mut p = Policy::default();
        if let Some(f) = &self.policy_file {
            f.default.apply(&mut p);
            if let Some(spec) = f.project(dist) {
                spec.apply(&mut p);
            }
        }
        self.cli.apply(&mut p);
        // A PEP 740 attestation only ever carries the PyPI publish predicate.
        if matches!(
            format,
            EvidenceFormat::Pep740Attestation | EvidenceFormat::PypiProvenance
        ) {
            p.predicate_type = vouch_verify::PREDICATE_PEP740.to_owned();
        }
        p
    }

    fn verify_one(
        &self,
        dist: &str,
        digest: &Sha256Digest,
        ev: &Evidence,
    ) -> Result<Verified, VerifyError> {
        self.trust
            .verify(digest, ev, &self.policy_for(dist, ev.format))
    }

    pub fn audit_file(&self, file: &Path) -> Row {
        let name = file
            .file_name()
            .map(|n| n.to_string_lossy().into_owned())
            .unwrap_or_default();
        let dist = dist_name(&name);
        let mut row = Row::new(file, dist.clone(), Verdict::NoEvidence);
        let evidence = match find_evidence(file) {
            Ok(e) => e,
            Err(reason) => {
                row.verdict = Verdict::Failed;
                row.kind = Some(ErrorKind::Bundle);
                row.reason = Some(reason);
                return row;
            }
        };
        row.evidence.clone_from(&evidence);
        let digest = match hash_regular(file) {
            Ok(d) => d,
            Err(e) => {
                row.verdict = Verdict::Failed;
                row.reason = Some(format!("cannot read the file: {e}"));
                return row;
            }
        };
        row.sha256 = Some(digest);
        if evidence.is_empty() {
            row.reason = Some(format!(
                "no evidence next to it (looked for {})",
                EVIDENCE_SUFFIXES.join(", ")
            ));
            return row;
        }
        let mut last = None;
        for path in &evidence {
            let result = load_evidence(path).and_then(|evs| {
                if evs.is_empty() {
                    return Err(VerifyError::new(
                        ErrorKind::Bundle,
                        format!("{} holds no evidence", path.display()),
                    ));
                }
                evs.iter()
                    .map(|ev| self.verify_one(&dist, &digest, ev))
                    .collect::<Result<Vec<_>, _>>()
            });
            match result {
                Ok(mut v) => last = v.pop(),
                Err(e) => {
                    row.verdict = Verdict::Failed;
                    row.kind = Some(e.kind);
                    row.reason = Some(format!(
                        "{}: {}",
                        path.file_name().unwrap_or_default().to_string_lossy(),
                        with_causes(&e)
                    ));
                    return row;
                }
            }
        }
        if let Some(v) = last {
            row.set_verified(v);
        }
        row
    }

    /// Verifies evidence found elsewhere than next to the file (GitHub's attestation store)
    /// for the file `row` describes, under the same policy as evidence next to it.
    pub fn verify_found(
        &self,
        row: &Row,
        evidence_json: &str,
        origin: &str,
    ) -> Result<Verified, VerifyError> {
        let digest = row
            .sha256
            .as_ref()
            .ok_or_else(|| VerifyError::new(ErrorKind::Bundle, "the file's digest is unknown"))?;
        let evs = vouch_verify::parse_evidence(evidence_json, origin)?;
        if evs.is_empty() {
            return Err(VerifyError::new(
                ErrorKind::Bundle,
                format!("{origin} holds no evidence"),
            ));
        }
        let mut last = None;
        for ev in &evs {
            last = Some(self.verify_one(&row.dist, digest, ev)?);
        }
        Ok(last.expect("not empty"))
    }

    /// Audits every file, in parallel, in the order given.
    pub fn audit(&self, files: &[PathBuf]) -> Vec<Row> {
        files.par_iter().map(|f| self.audit_file(f)).collect()
    }
}

/// A Markdown table of the rows.
pub fn markdown(rows: &[Row]) -> String {
    let mut s = String::from(
        "| file | verdict | repository | workflow | ref | commit | run | predicate | reason |\n|---|---|---|---|---|---|---|---|---|\n",
    );
    let cell = |o: &Option<String>| o.as_deref().unwrap_or("").replace('|', "\\|");
    for r in rows {
        let verdict = match r.verdict {
            Verdict::Verified => "verified",
            Verdict::Failed => "**FAILED**",
            Verdict::NoEvidence => "**no evidence**",
        };
        s.push_str(&format!(
            "| `{}` | {verdict} | {} | {} | {} | {} | {} | {} | {} |\n",
            r.file.file_name().unwrap_or_default().to_string_lossy(),
            cell(&r.repository),
            cell(&r.workflow),
            cell(&r.git_ref),
            cell(&r.commit),
            cell(&r.run),
            cell(&r.predicate_type),
            cell(&r.reason.clone().or_else(|| r.pr_build_summary()))
        ));
    }
    s
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names() {
        assert_eq!(
            dist_name("cupy_cuda13x-14.2.0-cp312-cp312-linux_x86_64.whl"),
            "cupy-cuda13x"
        );
        assert_eq!(
            dist_name("pypi_attestations-0.0.19.tar.gz"),
            "pypi-attestations"
        );
        assert_eq!(
            dist_name("signed-package-2.1.0-hb0f4dca_0.conda"),
            "signed-package"
        );
        assert!(
            is_dist("a-1.0.tar.gz") && !is_dist("a-1.0.tar.gz.sigstore.json") && !is_dist("x.txt")
        );
    }
}
