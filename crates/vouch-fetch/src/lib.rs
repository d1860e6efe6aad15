//! The consumer's side of vouch. An artifact's name is only a lookup hint: what decides is the
//! producing run (metadata the producer cannot forge: workflow id, event, conclusion, head SHA,
//! repository) and the signed provenance inside the artifact.
//!
//! [`fetch`] runs the design's stages, one module each, for each candidate until one passes:
//! `locate` → `pin` → `download` → `extract` → `pair` → `verify` → `commit`. A candidate that
//! fails a stage is recorded as a [`Rejection`] and the next one is tried; nothing reaches
//! `out` before `commit`. Artifacts come from any [`ArtifactSource`] (see `source/`).
//! [`pip_install_verified`] hands the committed wheels to pip; with extras,
//! [`plan_dependencies`] and [`pip_install_dependencies`] install what they require, apart.

mod commit;
mod download;
mod extract;
pub mod flexci;
mod install;
mod locate;
mod pair;
mod pin;
mod source;
mod verify;

use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch_core::Sha256Digest;
use vouch_verify::{Trust, TrustSpec, Verified, VerifyError};

pub use extract::{ExtractLimits, extract_safely};
pub use install::{
    Dependencies, InstallError, Installed, pip_install_dependencies, pip_install_verified,
    plan_dependencies,
};
pub use pin::{PinError, pin};
pub use source::{
    ArtifactSource, BoxFuture, LocalStore, RunInfo, SOURCES, SourceInputs, SourceKind, SourceSpec,
    UnknownSource, publish,
};
pub use vouch_github::{Artifact, Run, Workflow};

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
    /// For sources added later, so that a new source needs no new variant here.
    #[error("artifact source {name}")]
    Source {
        name: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
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

/// Why a stage stopped with a candidate: it was turned down (try the next one), or the fetch
/// as a whole cannot go on.
enum Stop {
    Reject(Rejection),
    Fatal(FetchError),
}

impl From<FetchError> for Stop {
    fn from(e: FetchError) -> Self {
        Stop::Fatal(e)
    }
}

impl From<Rejection> for Stop {
    fn from(r: Rejection) -> Self {
        Stop::Reject(r)
    }
}

/// Finds, pins, downloads, extracts and verifies; writes the verified wheels and their bundles
/// to `out` only when everything passed.
pub async fn fetch(
    source: &dyn ArtifactSource,
    exp: &Expectation,
    cfg: &VerifyConfig,
    out: &Path,
) -> Result<FetchReport, FetchError> {
    let located = locate::locate(source, exp).await?;
    let trust = cfg.trust.load().map_err(FetchError::Trust)?;
    let mut rejected = Vec::new();
    for artifact in &located.candidates {
        match candidate(source, exp, cfg, &trust, &located.workflow, artifact, out).await {
            Ok((run_id, wheels)) => {
                return Ok(FetchReport {
                    artifact_name: exp.artifact_name.clone(),
                    artifact_id: artifact.id,
                    run_id,
                    wheels,
                    rejected,
                    api_calls: source.api_calls(),
                });
            }
            Err(Stop::Reject(r)) => {
                tracing::info!(artifact = r.artifact_id, run = ?r.run_id, reason = %r.reason, "rejected candidate");
                rejected.push(r);
            }
            Err(Stop::Fatal(e)) => return Err(e),
        }
    }
    Err(FetchError::NoCandidate {
        name: exp.artifact_name.clone(),
        rejected,
    })
}

/// Every stage after locate, for one candidate: its run id and the wheels written to `out`.
async fn candidate(
    source: &dyn ArtifactSource,
    exp: &Expectation,
    cfg: &VerifyConfig,
    trust: &Trust,
    workflow: &Workflow,
    artifact: &Artifact,
    out: &Path,
) -> Result<(u64, Vec<FetchedWheel>), Stop> {
    let id = artifact.id;
    let run_id = locate::screen(artifact, exp)?;
    let run = source.run(&exp.repo, run_id).await?;
    pin(&run, artifact, exp, workflow)
        .map_err(|e| reject(id, Some(run_id), RejectKind::Pin, e.to_string()))?;
    let dl = download::download(source, exp, artifact, run_id).await?;
    let files = extract_safely(
        &dl.zip,
        &dl.work.path().join("x"),
        &ExtractLimits::default(),
    )
    .map_err(|reason| reject(id, Some(run_id), RejectKind::Archive, reason))?;
    let pairs = pair::pair(&files)
        .map_err(|e| reject(id, Some(run_id), RejectKind::Verify, e.to_string()))?;
    let verified = verify::verify_all(pairs, id, exp, run_id, cfg, trust)?;
    Ok((run_id, commit::commit(out, verified)?))
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
