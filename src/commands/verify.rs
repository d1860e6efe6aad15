//! `vouch verify`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use vouch_core::Sha256Digest;
use vouch_verify::{
    Policy, TrustRootSource, Verified, Verifier, VerifyError, parse_evidence, verify_with_key,
};

use crate::cli::Common;
use crate::common::{UsageError, read_regular_to_string};
use crate::output;

#[derive(Args, Debug, Clone)]
pub struct PolicyArgs {
    /// Source repository `OWNER/NAME` the certificate must name (OID .1.12).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Workflow that signed (OID .1.9): `PATH`, `OWNER/REPO/PATH`, optionally `@REF`. For
    /// reusable workflows this is the called workflow.
    #[arg(long, value_name = "WORKFLOW")]
    pub signer_workflow: Option<String>,
    /// Top-level workflow of the run (OID .1.18, the caller of a reusable workflow).
    #[arg(long, value_name = "WORKFLOW")]
    pub build_workflow: Option<String>,
    /// Source ref (OID .1.14); a trailing `*` matches any suffix, e.g. `refs/tags/v*`.
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,
    /// Source commit, 40 hex (OID .1.13).
    #[arg(long, value_name = "SHA", value_parser = parse_commit_sha)]
    pub sha: Option<String>,
    /// Build trigger, e.g. `push`, `pull_request` (OID .1.20).
    #[arg(long, value_name = "EVENT", value_parser = parse_event_name)]
    pub event: Option<String>,
    /// Workflow run id (OID .1.21).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<u64>,
    /// OIDC issuer (OID .1.8).
    /// [default: GitHub Actions' issuer]
    #[arg(long, value_name = "URL")]
    pub issuer: Option<String>,
    /// Runner environment (OID .1.11): `github-hosted`, `self-hosted`, or `any`.
    /// [default: github-hosted]
    #[arg(long, value_name = "KIND")]
    pub runner: Option<String>,
    /// Predicate type: `slsa` (SLSA provenance v1), `pep740` (PyPI publish v1), or a URI.
    /// [default: slsa]
    #[arg(long, value_name = "TYPE")]
    pub predicate_type: Option<String>,
    /// A TOML policy file: defaults, and `[[project]]` entries per distribution name. Flags
    /// given on the command line win.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Pull request the build must be for: the certificate's ref must be `refs/pull/N/merge`
    /// and the vouch statement must claim N.
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// Matrix cell the vouch statement must claim.
    #[arg(long, value_name = "CELL")]
    pub cell: Option<String>,
    /// Custom `trusted_root.json` instead of the embedded Sigstore production root.
    #[arg(long, value_name = "FILE", conflicts_with = "staging")]
    pub trust_root: Option<PathBuf>,
    /// Use the embedded Sigstore staging root.
    #[arg(long)]
    pub staging: bool,
    /// Accepted for clarity: verification never uses the network (the roots are embedded).
    #[arg(long)]
    pub offline: bool,
    /// Verify a key-signed bundle with this PEM public key instead of a certificate.
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
}

impl PolicyArgs {
    pub fn trust_root(&self) -> TrustRootSource {
        match (&self.trust_root, self.staging) {
            (Some(p), _) => TrustRootSource::File(p.clone()),
            (None, true) => TrustRootSource::Staging,
            (None, false) => TrustRootSource::Production,
        }
    }

    /// The policy from the policy file (its defaults, then the entry for `dist`), then flags.
    pub fn policy_for(
        &self,
        file: Option<&vouch_verify::PolicyFile>,
        dist: Option<&str>,
    ) -> Policy {
        let mut p = Policy::default();
        if let Some(f) = file {
            f.default.apply(&mut p);
            if let Some(spec) = dist.and_then(|d| f.project(d)) {
                spec.apply(&mut p);
            }
        }
        self.cli_spec().apply(&mut p);
        p
    }

    /// The identity flags given on the command line.
    pub fn cli_spec(&self) -> vouch_verify::PolicySpec {
        vouch_verify::PolicySpec {
            repository: self.repo.clone(),
            signer_workflow: self.signer_workflow.clone(),
            build_workflow: self.build_workflow.clone(),
            git_ref: self.git_ref.clone(),
            sha: self.sha.clone(),
            event: self.event.clone(),
            issuer: self.issuer.clone(),
            runner: self.runner.clone(),
            predicate_type: self.predicate_type.clone(),
            run_id: self.run_id,
            pr: self.pr,
            cell: self.cell.clone(),
        }
    }

    /// The `--key` file's text, checked to be a PEM public key before anything else is done.
    pub fn read_key(&self) -> anyhow::Result<Option<String>> {
        self.key.as_deref().map(read_public_key).transpose()
    }

    pub fn load_policy_file(&self) -> anyhow::Result<Option<vouch_verify::PolicyFile>> {
        Ok(match &self.policy {
            Some(path) => Some(vouch_verify::PolicyFile::load(path)?),
            None => None,
        })
    }

    /// Flags that cannot hold together, refused before anything is verified.
    pub fn refuse_conflicts(&self) -> anyhow::Result<()> {
        if self.key.is_some() && self.issuer.is_some() {
            // A key-signed bundle has no certificate, so no issuer: the flag could not be held.
            anyhow::bail!(UsageError(
                "--issuer applies to certificates; a bundle verified with --key has none".into()
            ));
        }
        Ok(())
    }

    /// The policy for one file (or digest), refusing keyless verification without an identity.
    pub fn policy(&self, dist: Option<&str>) -> anyhow::Result<Policy> {
        self.refuse_conflicts()?;
        let file = self.load_policy_file()?;
        if let (None, Some(f), Some(path)) = (dist, &file, &self.policy)
            && !f.project.is_empty()
        {
            // Entries are chosen by the file's distribution name; a bare digest has none, so
            // they would be read and then ignored.
            anyhow::bail!(UsageError(format!(
                "--policy {path:?} has [[project]] entries, but --digest gives no file name to choose one by; verify the file itself, or give the identity as flags"
            )));
        }
        let p = self.policy_for(file.as_ref(), dist);
        // The source repository must be named: a reusable workflow's signer URI names the
        // repository that holds the workflow, not the one that was built.
        if self.key.is_none() && p.repository.is_none() {
            anyhow::bail!(UsageError(
                "keyless verification needs an identity: give --repo OWNER/NAME (or `repository` in a --policy file)".into()
            ));
        }
        Ok(p)
    }
}

/// `--sha`: a full commit, as certificates and statements carry it; a short one never matches.
pub fn parse_commit_sha(s: &str) -> Result<String, String> {
    if vouch_verify::is_commit_sha(s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a full commit SHA (40 lowercase hex digits, e.g. 0123456789abcdef0123456789abcdef01234567)"
        ))
    }
}

/// `--event`: a GitHub Actions event name (`push`, `pull_request`, `workflow_dispatch`, ...).
pub fn parse_event_name(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a GitHub Actions event name (lowercase letters and _, e.g. push, pull_request)"
        ))
    }
}

/// A `--key` file's text, checked to be a PEM public key before anything else is done (and
/// read only if it is a regular file: a FIFO would block).
pub fn read_public_key(path: &std::path::Path) -> anyhow::Result<String> {
    let pem = vouch_verify::read_regular_to_string(path)
        .with_context(|| format!("reading key {path:?}"))?;
    vouch_verify::check_public_key(&pem).with_context(|| format!("--key {path:?}"))?;
    Ok(pem)
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("subject").required(true).args(["file", "digest"])))]
#[command(group(clap::ArgGroup::new("evidence").required(true).args(["bundle", "attestation", "provenance"])))]
pub struct VerifyArgs {
    /// The file to verify (wheel, sdist, anything).
    pub file: Option<PathBuf>,
    /// Verify a digest instead of a file (`sha256:HEX`).
    #[arg(long, value_name = "sha256:HEX")]
    pub digest: Option<Sha256Digest>,
    /// Sigstore bundle (`.sigstore.json`).
    #[arg(long, value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// PEP 740 attestation (`.publish.attestation`).
    #[arg(long, value_name = "FILE")]
    pub attestation: Option<PathBuf>,
    /// PyPI provenance object (the integrity API's response).
    #[arg(long, value_name = "FILE")]
    pub provenance: Option<PathBuf>,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(serde::Serialize)]
struct Failure<'a> {
    verified: bool,
    kind: &'a str,
    message: String,
    /// What lies under `message`, outermost first: the parser's or sigstore's own words.
    causes: Vec<String>,
}

/// The error's causes, each once: sigstore errors are wrapped with their own text as message,
/// and parsers repeat their cause's text at the end of their own.
fn causes(e: &VerifyError) -> Vec<String> {
    let mut out: Vec<String> = Vec::new();
    let mut cur = std::error::Error::source(e);
    while let Some(c) = cur {
        let text = c.to_string();
        let said = out.last().unwrap_or(&e.message);
        if !said.ends_with(&text) {
            out.push(text);
        }
        cur = c.source();
    }
    out
}

pub fn run(args: VerifyArgs) -> anyhow::Result<ExitCode> {
    let dist = args
        .file
        .as_ref()
        .and_then(|f| f.file_name())
        .map(|n| vouch_audit::dist_name(&n.to_string_lossy()));
    let policy = args.policy.policy(dist.as_deref())?;
    let key_pem = args.policy.read_key()?;
    let digest = match (&args.file, args.digest) {
        (Some(f), _) => crate::common::hash_file(f)?,
        (None, Some(d)) => d,
        (None, None) => unreachable!("clap requires one"),
    };
    let evidence_path = args
        .bundle
        .as_ref()
        .or(args.attestation.as_ref())
        .or(args.provenance.as_ref())
        .expect("clap requires one");
    let text = read_regular_to_string(evidence_path)?;
    let result = (|| -> Result<Vec<Verified>, VerifyError> {
        let evidence = parse_evidence(&text, &evidence_path.display().to_string())?;
        if let Some(pem) = &key_pem {
            // Key-signed bundles with log entries are checked against the trust root too.
            let root = Some(args.policy.trust_root().load()?);
            evidence
                .iter()
                .map(|e| verify_with_key(&digest, e, pem, &policy, root.as_ref()))
                .collect()
        } else {
            let verifier = Verifier::new(args.policy.trust_root())?;
            evidence
                .iter()
                .map(|e| verifier.verify(&digest, e, &policy))
                .collect()
        }
    })();
    match result {
        Ok(all) => {
            let shown = args
                .file
                .as_ref()
                .map_or_else(|| digest.to_string(), |f| f.display().to_string());
            output::step_summary(&format!(
                "| vouch verify | `{}` | verified ({} evidence) |\n",
                shown,
                all.len()
            ));
            if args.common.json {
                output::json(&serde_json::json!({ "verified": true, "results": all }));
            } else {
                let what = args.file.as_ref().map_or_else(
                    || digest.to_string(),
                    |f| format!("{} ({digest})", f.display()),
                );
                for v in &all {
                    print_verified(&what, v);
                }
            }
            Ok(ExitCode::SUCCESS)
        }
        Err(e) => {
            output::step_summary(&format!(
                "| vouch verify | `{}` | **FAILED** ({}): {} |\n",
                evidence_path.display(),
                e.kind.as_str(),
                e.message.replace('|', "\\|")
            ));
            if args.common.json {
                output::json(&Failure {
                    verified: false,
                    kind: e.kind.as_str(),
                    message: e.message.clone(),
                    causes: causes(&e),
                });
            }
            Err(anyhow::Error::new(e).context(format!(
                "verification of {} failed",
                evidence_path.display()
            )))
        }
    }
}

fn print_verified(what: &str, v: &Verified) {
    let s = &v.signer;
    output::data(format!("verified: {what}"));
    if v.signed_with == "certificate" {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        output::data(format!("  signer:     {}", opt(&s.san)));
        output::data(format!("  issuer:     {}", opt(&s.issuer)));
        output::data(format!(
            "  repository: {}  ref: {}  commit: {}",
            opt(&s.repository),
            opt(&s.git_ref),
            opt(&s.sha)
        ));
        output::data(format!(
            "  workflow:   {}  event: {}  runner: {}",
            opt(&s.build_workflow),
            opt(&s.event),
            opt(&s.runner)
        ));
        output::data(format!("  run:        {}", opt(&s.run)));
    } else {
        let opt = |o: &Option<String>| o.clone().unwrap_or_else(|| "-".into());
        output::data("  signer:     the public key given with --key");
        output::data(format!(
            "  claimed:    repository {}  ref {}  commit {}  runner {}",
            opt(&s.repository),
            opt(&s.git_ref),
            opt(&s.sha),
            opt(&s.runner)
        ));
    }
    output::data(format!("  predicate:  {}", v.statement.predicate_type));
    let c = &v.checks;
    let mark = |b: bool| if b { "ok" } else { "not checked" };
    output::data(format!(
        "  checks:     certificate chain {}, SCT {}, transparency log {}, signature ok, statement ok, digest ok, identity policy {}{}",
        mark(c.certificate_chain),
        mark(c.sct),
        mark(c.transparency_log),
        mark(c.identity_policy),
        if v.signed_with == "certificate" {
            ""
        } else {
            " (against the statement's own claims)"
        }
    ));
    for n in &v.notes {
        output::data(format!("  note:       {n}"));
    }
}
