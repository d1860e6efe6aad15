//! The trusted signer of pull-request builds (what `vouch-sign.yml` runs, as `vouch pr-run`).
//!
//! A `pull_request` run, a fork's above all, has no OIDC token and runs the PR's own workflow
//! file, so it never signs. The signer workflow runs afterwards (`workflow_run`, from the
//! default branch, checking out nothing) and, for one finished build run:
//! - [`pin`]s it through the GitHub API: the build workflow's successful `pull_request` run of
//!   this repository; the one open pull request whose `/test` request for the run's head was
//!   recorded by a default-branch `issue_comment` run of the trigger workflow, from a comment
//!   that named that head (`@<sha>`) by someone who can write to the repository; that pull
//!   request, still at that head and base branch, not changing the build workflow; the run
//!   created after the request, and for each cell the first run to build it since; the run's
//!   `unsigned-*` artifacts of that PR and head;
//! - [`sign`]s one of those artifacts: downloads it by id, requires exactly one wheel, of the
//!   artifact's cell, and signs a pr-build statement about that wheel's digest whose claims come
//!   from the API and the request, with the build's own record only as reported data.
//!
//! This crate is a producer and a trust boundary of its own, which is why it is not part of
//! `vouch-fetch` (the consumer): it shares only fetch's download and safe extraction.

mod pin;
mod refusal;
mod request;
mod sign;

use std::path::{Path, PathBuf};

use vouch_github::{Artifact, GithubClient, GithubError};

pub use pin::{Cell, PinInputs, PinOutcome, Pinned, Skipped, matrix, pin};
pub use refusal::{Candidate, Refusal};
pub use request::{
    MIN_NAMED_DIGITS, MIN_SHA_PREFIX, NamedCommit, REQUEST_SCHEMA, RequestFiles, TestRequest,
    named_commit, request_artifact_name,
};
pub use sign::{SignRequest, Signed, sign};

/// What a PR build names the artifact of one cell: `unsigned-<artifact>`.
pub const UNSIGNED_PREFIX: &str = "unsigned-";

/// A name the pull request chose (an artifact's), made safe to put in a log line: the runner
/// reads a line that starts with `::` (or the older `##[`) as a workflow command, on stdout
/// and stderr alike, so CR and LF (which would start a new line), `%` (GitHub's escape
/// character) and the `::`/`##[` openers are percent-escaped, as are other control
/// characters. A name without them is unchanged.
pub fn log_safe(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut chars = name.chars().peekable();
    while let Some(c) = chars.next() {
        match c {
            '%' => out.push_str("%25"),
            ':' if chars.peek() == Some(&':') => {
                chars.next();
                out.push_str("%3A%3A");
            }
            '#' if chars.peek() == Some(&'#') => {
                chars.next();
                out.push_str("%23%23");
            }
            c if c.is_control() || c == '\u{2028}' || c == '\u{2029}' => {
                let mut buf = [0u8; 4];
                for b in c.encode_utf8(&mut buf).bytes() {
                    out.push_str(&format!("%{b:02X}"));
                }
            }
            c => out.push(c),
        }
    }
    out
}

#[derive(Debug, thiserror::Error)]
pub enum PrRunError {
    #[error("GitHub API")]
    Github(#[from] GithubError),
    /// No scratch directory for a download.
    #[error(transparent)]
    Fetch(#[from] vouch_fetch::FetchError),
    #[error("build run {run} is not signed")]
    Refused {
        run: u64,
        #[source]
        refusal: Refusal,
    },
    #[error("request artifact {artifact_id} is not a test request record: {reason}")]
    Request { artifact_id: u64, reason: String },
    #[error("artifact {artifact:?} (id {artifact_id}) is not one cell's wheel: {reason}")]
    Cell {
        artifact: String,
        artifact_id: u64,
        reason: String,
    },
    #[error("artifact {name:?} (id {artifact_id}) could not be downloaded: {reason}")]
    Download {
        name: String,
        artifact_id: u64,
        reason: String,
    },
    #[error("artifact {name:?} (id {artifact_id}) is unsafe to extract: {reason}")]
    Archive {
        name: String,
        artifact_id: u64,
        reason: String,
    },
    #[error("signing")]
    Sign(#[from] vouch_attest::SignError),
    #[error("cannot serialize the bundle")]
    Bundle(#[source] Box<dyn std::error::Error + Send + Sync>),
    #[error("writing {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
}

/// An artifact's files, extracted safely; removed with `work`.
pub(crate) struct Extracted {
    /// Held so the files stay until this is dropped.
    _work: tempfile::TempDir,
    pub(crate) dir: PathBuf,
    pub(crate) files: Vec<PathBuf>,
}

/// Downloads `artifact` by its id and extracts it with fetch's safe extraction.
pub(crate) async fn fetch_files(
    gh: &GithubClient,
    repo: &str,
    artifact: &Artifact,
) -> Result<Extracted, PrRunError> {
    let dl = vouch_fetch::download_zip(gh, repo, artifact)
        .await?
        .map_err(|reason| PrRunError::Download {
            name: artifact.name.clone(),
            artifact_id: artifact.id,
            reason,
        })?;
    let dir = dl.work.path().join("x");
    let files = vouch_fetch::extract_safely(&dl.zip, &dir, &vouch_fetch::ExtractLimits::default())
        .map_err(|reason| PrRunError::Archive {
            name: artifact.name.clone(),
            artifact_id: artifact.id,
            reason,
        })?;
    Ok(Extracted {
        _work: dl.work,
        dir,
        files,
    })
}

/// The file name of an extracted member, when it lies directly in `dir`.
pub(crate) fn top_level_name<'a>(dir: &Path, file: &'a Path) -> Option<&'a str> {
    let rel = file.strip_prefix(dir).ok()?;
    (rel.components().count() == 1)
        .then(|| rel.to_str())
        .flatten()
}

#[cfg(test)]
mod tests {
    #[test]
    fn log_safe_names() {
        let cases = [
            (
                "vouch-sample-py3.11-linux-64-pr7-abc",
                "vouch-sample-py3.11-linux-64-pr7-abc",
            ),
            ("a\n::add-mask::x", "a%0A%3A%3Aadd-mask%3A%3Ax"),
            ("::error::x", "%3A%3Aerror%3A%3Ax"),
            (
                "a\r\n##[set-output name=x]y",
                "a%0D%0A%23%23[set-output name=x]y",
            ),
            ("100%", "100%25"),
            ("a:b", "a:b"),
            ("tab\there", "tab%09here"),
        ];
        for (name, want) in cases {
            assert_eq!(super::log_safe(name), want, "{name:?}");
        }
    }
}
