//! The consumer's side of vouch. An artifact's name is only a lookup hint: what decides is the
//! producing run (metadata the producer cannot forge: workflow id, event, conclusion, head SHA,
//! repository) and the signed provenance inside the artifact.

mod extract;
mod source;

use std::path::{Path, PathBuf};

use serde::Serialize;
use serde_json::Value;
use vouch_core::Sha256Digest;
use vouch_verify::{Evidence, Policy, Trust, TrustSpec, Verified, VerifyError};

pub use extract::{ExtractLimits, extract_safely};
pub use source::{LocalStore, RunInfo, Source, publish};

/// What the consumer expects to find.
#[derive(Clone, Debug)]
pub struct Expectation {
    /// `owner/name`.
    pub repo: String,
    /// `.github/workflows/ci.yml`.
    pub workflow: String,
    pub event: String,
    /// The commit under test: for PR builds the PR head.
    pub sha: String,
    pub pr: Option<u64>,
    pub artifact_name: String,
    pub cell: Option<String>,
}

#[derive(Clone, Debug)]
pub struct VerifyConfig {
    /// How the wheels inside are verified.
    pub trust: TrustSpec,
    /// `None` accepts any runner.
    pub runner: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum FetchError {
    #[error("{}", summarize(.name, .rejected))]
    NoCandidate {
        name: String,
        rejected: Vec<Rejection>,
    },
    #[error("GitHub API")]
    Github(#[from] vouch_github::GithubError),
    #[error("trust root")]
    Trust(#[source] VerifyError),
    #[error("local artifact store {path:?}: {reason}")]
    Store { path: PathBuf, reason: String },
    #[error("file I/O on {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

fn summarize(name: &str, r: &[Rejection]) -> String {
    // Only when the listing had nothing at all can expiry be the explanation; when candidates
    // were turned down, their reasons are the explanation.
    if r.is_empty() {
        return format!(
            "no artifact named {name:?} is listed (expired artifacts are no longer listed)"
        );
    }
    let reasons = r
        .iter()
        .map(|x| {
            format!(
                "artifact {} (run {}): {}",
                x.artifact_id,
                x.run_id.map_or("?".into(), |r| r.to_string()),
                x.reason
            )
        })
        .collect::<Vec<_>>()
        .join("; ");
    format!("no artifact named {name:?} passed: {reasons}")
}

/// Why one candidate was turned down. `kind` orders the exit code.
#[derive(Clone, Debug, Serialize)]
pub struct Rejection {
    pub artifact_id: u64,
    pub run_id: Option<u64>,
    pub kind: RejectKind,
    pub reason: String,
    #[serde(skip)]
    pub verify_kind: Option<vouch_verify::ErrorKind>,
}

/// Ordered by how far a candidate got.
#[derive(Clone, Copy, Debug, Serialize, PartialEq, Eq, PartialOrd, Ord)]
#[serde(rename_all = "kebab-case")]
pub enum RejectKind {
    /// The producing run is not the expected one.
    Pin,
    /// Download failed, expired, truncated or does not match its digest.
    Download,
    /// The zip is unsafe to extract.
    Archive,
    /// The wheels do not verify.
    Verify,
}

#[derive(Clone, Debug, Serialize)]
pub struct FetchedWheel {
    pub path: PathBuf,
    pub sha256: Sha256Digest,
    pub bundle: PathBuf,
    pub verified: Verified,
}

#[derive(Clone, Debug, Serialize)]
pub struct FetchReport {
    pub artifact_name: String,
    pub artifact_id: u64,
    pub run_id: u64,
    pub wheels: Vec<FetchedWheel>,
    pub rejected: Vec<Rejection>,
    pub api_calls: u64,
}

fn reject(
    artifact_id: u64,
    run_id: Option<u64>,
    kind: RejectKind,
    reason: impl Into<String>,
) -> Rejection {
    Rejection {
        artifact_id,
        run_id,
        kind,
        reason: reason.into(),
        verify_kind: None,
    }
}

/// Checks the run against the expectation. Every check uses API metadata the producer cannot
/// forge; `path` is not compared (it may carry `@ref`), the workflow id is.
fn pin(run: &Value, artifact: &Value, exp: &Expectation, workflow_id: u64) -> Result<(), String> {
    let s = |v: &Value| v.as_str().unwrap_or("").to_owned();
    if run["workflow_id"].as_u64() != Some(workflow_id) {
        return Err(format!(
            "run's workflow_id {} is not {} ({})",
            run["workflow_id"], workflow_id, exp.workflow
        ));
    }
    if run["event"] != exp.event.as_str() {
        return Err(format!(
            "run's event is {:?}, expected {:?}",
            s(&run["event"]),
            exp.event
        ));
    }
    if run["status"] != "completed" || run["conclusion"] != "success" {
        return Err(format!(
            "run did not succeed (status {:?}, conclusion {:?})",
            s(&run["status"]),
            s(&run["conclusion"])
        ));
    }
    if run["head_sha"] != exp.sha.as_str() {
        return Err(format!(
            "run's head_sha is {}, expected {}",
            s(&run["head_sha"]),
            exp.sha
        ));
    }
    if run["repository"]["full_name"] != exp.repo.as_str() {
        return Err(format!(
            "run belongs to {:?}, expected {:?}",
            s(&run["repository"]["full_name"]),
            exp.repo
        ));
    }
    let head_repo = &run["head_repository"]["full_name"];
    if exp.event != "pull_request"
        && (head_repo != exp.repo.as_str() || run["head_repository"]["fork"] == true)
    {
        return Err(format!(
            "a {} build's head repository is {:?}, a fork or another repository",
            exp.event,
            s(head_repo)
        ));
    }
    if artifact["workflow_run"]["id"] != run["id"] {
        return Err("artifact's workflow_run.id is not the run".into());
    }
    if let Some(n) = exp.pr {
        let listed = run["pull_requests"]
            .as_array()
            .map(|prs| prs.iter().any(|p| p["number"].as_u64() == Some(n)));
        if listed == Some(false) && run["head_repository"]["fork"] != true {
            // Fork PRs have an empty pull_requests list by design; same-repo PRs list theirs.
            return Err(format!("run is not for pull request #{n}"));
        }
    }
    Ok(())
}

fn policy_for(exp: &Expectation, run_id: u64, cfg: &VerifyConfig) -> Policy {
    let pr_build = exp.event == "pull_request";
    Policy {
        repository: Some(exp.repo.clone()),
        build_workflow: Some(exp.workflow.clone()),
        event: Some(exp.event.clone()),
        run_id: Some(run_id.to_string()),
        // Under pull_request the certificate names the merge commit; the head is checked
        // through the statement's pr_head_sha below.
        sha: (!pr_build).then(|| exp.sha.clone()),
        runner: cfg.runner.clone(),
        pr: exp.pr,
        cell: exp.cell.clone(),
        ..Policy::default()
    }
}

fn verify_wheel(
    file: &Path,
    bundle: &Path,
    exp: &Expectation,
    run_id: u64,
    cfg: &VerifyConfig,
    trust: &Trust,
) -> Result<(Sha256Digest, Verified), VerifyError> {
    let data = std::fs::read(file).map_err(|e| {
        VerifyError::with_source(
            vouch_verify::ErrorKind::Bundle,
            format!("cannot read the extracted {}", file.display()),
            e,
        )
    })?;
    let digest = Sha256Digest::of(&data);
    let text = std::fs::read_to_string(bundle).map_err(|e| {
        VerifyError::with_source(
            vouch_verify::ErrorKind::Bundle,
            format!("cannot read {}", bundle.display()),
            e,
        )
    })?;
    let evidence: Vec<Evidence> =
        vouch_verify::parse_evidence(&text, &bundle.display().to_string())?;
    let policy = policy_for(exp, run_id, cfg);
    if evidence.is_empty() {
        return Err(VerifyError::new(
            vouch_verify::ErrorKind::Bundle,
            "empty evidence",
        ));
    }
    let mut verified = None;
    for ev in &evidence {
        verified = Some(trust.verify(&digest, ev, &policy)?);
    }
    let verified = verified.expect("evidence is not empty");
    if exp.event == "pull_request" {
        let head = verified
            .statement
            .vouch
            .as_ref()
            .and_then(|v| v["pr_head_sha"].as_str());
        if head != Some(exp.sha.as_str()) {
            return Err(VerifyError::mismatch(
                vouch_verify::ErrorKind::Statement,
                "statement PR head SHA (internalParameters.vouch.pr_head_sha)",
                &exp.sha,
                head,
            ));
        }
    }
    Ok((digest, verified))
}

/// Finds, pins, downloads, extracts and verifies; writes the verified wheels and their bundles
/// to `out` only when everything passed.
pub async fn fetch(
    source: &Source,
    exp: &Expectation,
    cfg: &VerifyConfig,
    out: &Path,
) -> Result<FetchReport, FetchError> {
    let workflow_id = source.workflow_id(&exp.repo, &exp.workflow).await?;
    let mut candidates = source
        .artifacts_named(&exp.repo, &exp.artifact_name)
        .await?;
    // Newest first: a re-run's artifact supersedes the first attempt's.
    candidates.sort_by_key(|a| {
        std::cmp::Reverse((
            a["created_at"].as_str().unwrap_or("").to_owned(),
            a["id"].as_u64().unwrap_or(0),
        ))
    });
    let trust = cfg.trust.load().map_err(FetchError::Trust)?;
    let mut rejected = Vec::new();
    for artifact in &candidates {
        let id = artifact["id"].as_u64().unwrap_or(0);
        let run_id = artifact["workflow_run"]["id"].as_u64();
        if artifact["expired"] == true {
            rejected.push(reject(
                id,
                run_id,
                RejectKind::Download,
                "artifact has expired",
            ));
            continue;
        }
        // The listing already names the run's head commit: a decoy of another commit costs no
        // run lookup; the run's own head_sha is checked when pinning.
        if let Some(h) = artifact["workflow_run"]["head_sha"].as_str()
            && h != exp.sha
        {
            rejected.push(reject(
                id,
                run_id,
                RejectKind::Pin,
                format!(
                    "artifact's workflow_run.head_sha is {h}, expected {}",
                    exp.sha
                ),
            ));
            continue;
        }
        let Some(run_id) = run_id else {
            rejected.push(reject(
                id,
                None,
                RejectKind::Pin,
                "artifact names no workflow run",
            ));
            continue;
        };
        let run = source.run(&exp.repo, run_id).await?;
        if let Err(reason) = pin(&run, artifact, exp, workflow_id) {
            tracing::info!(artifact = id, run = run_id, %reason, "rejected candidate");
            rejected.push(reject(id, Some(run_id), RejectKind::Pin, reason));
            continue;
        }
        let work = tempfile::Builder::new()
            .prefix("vouch-fetch-")
            .tempdir()
            .map_err(|e| FetchError::Io {
                path: std::env::temp_dir(),
                source: e,
            })?;
        let zip = work.path().join("artifact.zip");
        let dl = match source.download(&exp.repo, id, &zip).await {
            Ok(d) => d,
            Err(e) => {
                let reason = match &e {
                    FetchError::Github(vouch_github::GithubError::Expired { .. }) => {
                        "artifact has expired (HTTP 410)".to_owned()
                    }
                    other => error_chain(other),
                };
                rejected.push(reject(id, Some(run_id), RejectKind::Download, reason));
                continue;
            }
        };
        // The uploader computed this digest: it proves the download is intact, never who made it.
        if let Some(d) = artifact["digest"].as_str()
            && d != dl.sha256.to_string()
        {
            rejected.push(reject(
                id,
                Some(run_id),
                RejectKind::Download,
                format!("download's digest {} is not the artifact's {d}", dl.sha256),
            ));
            continue;
        }
        let dir = work.path().join("x");
        let files = match extract_safely(&zip, &dir, &ExtractLimits::default()) {
            Ok(f) => f,
            Err(reason) => {
                rejected.push(reject(id, Some(run_id), RejectKind::Archive, reason));
                continue;
            }
        };
        let wheels: Vec<&PathBuf> = files
            .iter()
            .filter(|f| f.extension().is_some_and(|x| x == "whl"))
            .collect();
        let bundles: Vec<&PathBuf> = files
            .iter()
            .filter(|f| f.to_string_lossy().ends_with(".sigstore.json"))
            .collect();
        if wheels.is_empty() {
            rejected.push(reject(
                id,
                Some(run_id),
                RejectKind::Verify,
                "the artifact holds no wheel",
            ));
            continue;
        }
        let mut verified = Vec::new();
        let mut failure = None;
        for w in &wheels {
            let own = PathBuf::from(format!("{}.sigstore.json", w.display()));
            let bundle = if own.is_file() {
                own
            } else if bundles.len() == 1 {
                bundles[0].clone()
            } else {
                failure = Some(reject(
                    id,
                    Some(run_id),
                    RejectKind::Verify,
                    format!("no bundle for {}", w.display()),
                ));
                break;
            };
            match verify_wheel(w, &bundle, exp, run_id, cfg, &trust) {
                Ok((sha256, v)) => verified.push(((*w).clone(), bundle, sha256, v)),
                Err(e) => {
                    let name = w
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let mut r =
                        reject(id, Some(run_id), RejectKind::Verify, format!("{name}: {e}"));
                    r.verify_kind = Some(e.kind);
                    failure = Some(r);
                    break;
                }
            }
        }
        if let Some(r) = failure {
            rejected.push(r);
            continue;
        }
        std::fs::create_dir_all(out).map_err(|e| FetchError::Io {
            path: out.to_owned(),
            source: e,
        })?;
        let mut wheels_out = Vec::new();
        for (w, b, sha256, v) in verified {
            let name = w.file_name().expect("extracted files have names");
            let dest = out.join(name);
            let bundle_dest = out.join(format!("{}.sigstore.json", name.to_string_lossy()));
            // Exclusive temp file + rename: a link planted at any name in `out` is never
            // written through.
            for (from, to) in [(&b, &bundle_dest), (&w, &dest)] {
                vouch_fs::copy_atomically(from, to, vouch_fs::Mode::Public).map_err(|e| {
                    FetchError::Io {
                        path: to.clone(),
                        source: e,
                    }
                })?;
            }
            wheels_out.push(FetchedWheel {
                path: dest,
                sha256,
                bundle: bundle_dest,
                verified: v,
            });
        }
        return Ok(FetchReport {
            artifact_name: exp.artifact_name.clone(),
            artifact_id: id,
            run_id,
            wheels: wheels_out,
            rejected,
            api_calls: source.api_calls(),
        });
    }
    Err(FetchError::NoCandidate {
        name: exp.artifact_name.clone(),
        rejected,
    })
}

fn error_chain(e: &dyn std::error::Error) -> String {
    let mut s = e.to_string();
    let mut cur = e.source();
    while let Some(c) = cur {
        s.push_str(": ");
        s.push_str(&c.to_string());
        cur = c.source();
    }
    s
}
