//! The consumer's side of vouch. An artifact's name is only a lookup hint: what decides is the
//! producing run (metadata the producer cannot forge: workflow id, event, conclusion, head SHA,
//! repository) and the signed provenance inside the artifact.
//!
//! Who produced the artifact depends on the build: a push build signs in its own run, so its
//! artifact comes from the build workflow's run and carries SLSA provenance; a pull-request
//! build (forks included) is signed afterwards by the signer workflow (`workflow_run`, default
//! branch), so its artifact comes from the signer's run and carries a pr-build statement that
//! names the build run and the `/test` request (see [`Expectation::signed_by_signer`]).
//!
//! [`fetch`] runs the design's stages, one module each, for each candidate until one passes:
//! `locate` → `pin` (static facts) → `wait` → `pin` → `download` → `extract` → `pair` → `by_digest` → `verify` →
//! `commit` (`by_digest` only with [`VerifyConfig::attestation_store`]). A candidate that
//! fails a stage is recorded as a [`Rejection`] and the next one is tried; nothing reaches
//! `out` before `commit`. Artifacts come from any [`ArtifactSource`] (see `source/`).
//! [`pip_install_verified`] hands the committed wheels to pip; with extras,
//! [`plan_dependencies`] and [`pip_install_dependencies`] install what they require, apart.

mod by_digest;
mod checkout;
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
mod wait;

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use serde::Serialize;
use vouch_core::Sha256Digest;
use vouch_verify::{Trust, TrustSpec, Verified, VerifyError};

pub use by_digest::{STORE_PAGE_BUDGET, StoreReport, ignored_summary, judge};
pub use checkout::Checkout;
pub use download::{Downloaded, download_zip};
pub use extract::{ExtractLimits, extract_safely};
pub use install::{
    Dependencies, InstallError, Installed, pip_install_dependencies, pip_install_verified,
    plan_dependencies,
};
pub use pin::{PinError, Producer, pin, pin_static};
pub use source::{
    ArtifactSource, BoxFuture, LocalStore, RunInfo, SOURCES, SourceInputs, SourceKind, SourceSpec,
    UnknownSource, publish,
};
pub use vouch_github::{Artifact, Repository, Run, Workflow};

/// The build workflow the generated workflows build with.
pub const DEFAULT_BUILD_WORKFLOW: &str = ".github/workflows/vouch-build.yml";
/// The workflow that signs pull-request builds (`workflow_run`, from the default branch).
pub const DEFAULT_SIGNER_WORKFLOW: &str = ".github/workflows/vouch-sign.yml";
/// The event a signer workflow runs under.
pub const SIGNER_EVENT: &str = vouch_verify::SIGNER_EVENT;

/// What the consumer expects to find.
#[derive(Clone, Debug)]
pub struct Expectation {
    /// `owner/name`.
    pub repo: String,
    /// The build workflow, `.github/workflows/vouch-build.yml`.
    pub workflow: String,
    /// The workflow that signs pull-request builds, `.github/workflows/vouch-sign.yml`.
    pub signer_workflow: String,
    /// The build's event.
    pub event: String,
    /// The commit under test: for PR builds the PR head.
    pub sha: String,
    pub pr: Option<u64>,
    pub artifact_name: String,
    pub cell: Option<String>,
    /// How long to wait for the producing run to complete: a push build dispatches its tests
    /// from inside its own run, so they may start before it ends. Zero: do not wait.
    pub wait_for_run: Duration,
    /// The checkout the tests will run from (a test farm's): every wheel must have been
    /// built from its commit, or nothing is written. `None`: no tests follow here.
    pub checkout: Option<Checkout>,
}

impl Expectation {
    /// Whether the artifact was signed by the signer workflow rather than in the build run: a
    /// pull-request build's run holds no OIDC token it could be trusted with.
    pub fn signed_by_signer(&self) -> bool {
        self.event == "pull_request"
    }

    /// The workflow whose run uploaded the artifact: the signer's for PR builds, else the
    /// build's.
    pub fn producing_workflow(&self) -> &str {
        if self.signed_by_signer() {
            &self.signer_workflow
        } else {
            &self.workflow
        }
    }

    /// The event of the run that uploaded the artifact.
    pub fn producing_event(&self) -> &str {
        if self.signed_by_signer() {
            SIGNER_EVENT
        } else {
            &self.event
        }
    }
}

#[derive(Clone, Debug)]
pub struct VerifyConfig {
    /// How the wheels inside are verified.
    pub trust: TrustSpec,
    /// `None` accepts any runner.
    pub runner: Option<String>,
    /// `owner/name` whose GitHub attestation store supplies evidence by digest for a wheel its
    /// artifact carries no bundle for. With it, a push build's artifact is also found when it
    /// has another name: every artifact of the build's runs at the commit is a candidate, and
    /// only a wheel of the expected cell, signed as that artifact, can pass.
    pub attestation_store: Option<String>,
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
    #[error(
        "this artifact source has no attestation store to look evidence up in (use the github source)"
    )]
    NoAttestationStore,
    #[error(
        "the checkout {dir:?} is at {checkout}, but {wheel} was built from {}: the tests would be another commit's than the wheel's. Check out the built commit (for a pull request, the vouched head itself, not refs/pull/<N>/merge) and run again",
        .built.as_deref().unwrap_or("a commit its evidence does not name")
    )]
    WrongCheckout {
        dir: PathBuf,
        checkout: String,
        wheel: String,
        built: Option<String>,
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
    /// The stored attestations looked at for the wheels that came without a bundle.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub attestation_store: Vec<StoreReport>,
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
    let deadline = Instant::now() + exp.wait_for_run;
    let located = locate::locate(source, exp, cfg.attestation_store.is_some()).await?;
    let trust = cfg.trust.load().map_err(FetchError::Trust)?;
    let run = Fetch {
        source,
        exp,
        cfg,
        trust: &trust,
        producer: &located.producer,
        by_run: !located.named,
        out,
        deadline,
    };
    let mut rejected = Vec::new();
    for artifact in &located.candidates {
        match run.candidate(artifact).await {
            Ok((run_id, wheels, attestation_store)) => {
                return Ok(FetchReport {
                    artifact_name: exp.artifact_name.clone(),
                    artifact_id: artifact.id,
                    run_id,
                    wheels,
                    rejected,
                    api_calls: source.api_calls(),
                    attestation_store,
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

/// What every candidate of one fetch is held to.
struct Fetch<'a> {
    source: &'a dyn ArtifactSource,
    exp: &'a Expectation,
    cfg: &'a VerifyConfig,
    trust: &'a Trust,
    producer: &'a Producer,
    /// The candidates were found by run, not by name: each must show it is the expected one.
    by_run: bool,
    out: &'a Path,
    /// When waiting for a producing run to complete stops, for all candidates together.
    deadline: Instant,
}

impl Fetch<'_> {
    /// Every stage after locate, for one candidate: its run id and the wheels written to
    /// `out`.
    async fn candidate(
        &self,
        artifact: &Artifact,
    ) -> Result<(u64, Vec<FetchedWheel>, Vec<StoreReport>), Stop> {
        let (source, exp) = (self.source, self.exp);
        let id = artifact.id;
        let run_id = locate::screen(artifact, exp)?;
        let pin_reject = |e: PinError| reject(id, Some(run_id), RejectKind::Pin, e.to_string());
        let run = source.run(&exp.repo, run_id).await?;
        // What a run is never changes while it runs: a candidate that cannot pass is turned
        // down before any waiting, so a decoy's never-ending run cannot spend the deadline
        // every candidate shares.
        pin_static(&run, artifact, exp, self.producer).map_err(pin_reject)?;
        let run = wait::until_completed(source, &exp.repo, run, self.deadline).await?;
        if run.status != "completed" {
            let e = PinError::NotCompleted {
                status: run.status.clone(),
                waited: exp.wait_for_run.as_secs(),
            };
            return Err(reject(id, Some(run_id), RejectKind::Pin, e.to_string()).into());
        }
        pin(&run, artifact, exp, self.producer).map_err(pin_reject)?;
        let dl = download::download(source, exp, artifact, run_id).await?;
        let files = extract_safely(
            &dl.zip,
            &dl.work.path().join("x"),
            &ExtractLimits::default(),
        )
        .map_err(|reason| reject(id, Some(run_id), RejectKind::Archive, reason))?;
        let store = self.cfg.attestation_store.as_deref();
        let mut pairs = pair::pair(&files, store.is_some())
            .map_err(|e| reject(id, Some(run_id), RejectKind::Verify, e.to_string()))?;
        if self.by_run {
            locate::of_expected_cell(&pairs, exp)
                .map_err(|reason| reject(id, Some(run_id), RejectKind::Pin, reason))?;
        }
        let mut reports = Vec::new();
        if let Some(store) = store {
            self.bundles_by_digest(store, &mut pairs, id, run_id, dl.work.path(), &mut reports)
                .await?;
        }
        let verified =
            verify::verify_all(pairs, id, exp, run_id, self.producer, self.cfg, self.trust)?;
        if self.by_run {
            locate::signed_as_expected(&verified, exp)
                .map_err(|reason| reject(id, Some(run_id), RejectKind::Verify, reason))?;
        }
        // Fatal, not a rejection: every candidate passed the same policy, so each was built
        // from the same commit, and the checkout will not move.
        if let Some(checkout) = &exp.checkout {
            checkout::check(&verified, checkout)?;
        }
        Ok((run_id, commit::commit(self.out, verified)?, reports))
    }
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
