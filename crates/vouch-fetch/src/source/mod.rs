//! Where artifacts come from. The pipeline sees only [`ArtifactSource`]; each source lives in
//! its own module with a [`SourceKind`] (how it is spelled and opened), registered in
//! [`SOURCES`]. Adding a source: a module, its `mod` line and its entry in [`SOURCES`];
//! `vouch fetch --source NAME[:ARG]` then reaches it.
//!
//! A source answers with the GitHub API's typed shapes ([`Workflow`], [`Artifact`], [`Run`]),
//! because pinning decides on exactly those fields; a source that cannot vouch for a field
//! (e.g. `head_repository`) must leave it empty so that `pin` rejects, never guess it.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;
use std::str::FromStr;

use secrecy::SecretString;
use vouch_core::progress::ProgressFn;
use vouch_github::{Artifact, AttestationPage, Download, Repository, Run, Workflow};

use crate::FetchError;

mod github;
mod store;

pub use store::{LocalStore, RunInfo, publish};

/// Every source, in the order their spellings are listed in messages.
pub const SOURCES: &[&SourceKind] = &[&github::KIND, &store::KIND];

/// What the caller can hand a source as it opens; each source takes what it needs.
#[derive(Default)]
pub struct SourceInputs {
    /// Given only to sources that ask for one ([`SourceKind::needs_token`]).
    pub token: Option<SecretString>,
    /// Download progress, when someone draws it.
    pub progress: Option<ProgressFn>,
}

type OpenFn = fn(Option<&str>, SourceInputs) -> Result<Box<dyn ArtifactSource>, FetchError>;

/// One kind of source: how it is spelled (`NAME` or `NAME:ARG`) and how it is opened.
pub struct SourceKind {
    pub name: &'static str,
    /// How the argument reads in messages (`DIR`); `None` when it takes none.
    pub arg: Option<&'static str>,
    /// Whether the argument may be left out.
    pub arg_optional: bool,
    /// Whether it talks to a service that wants the caller's token.
    pub needs_token: bool,
    open: OpenFn,
}

impl SourceKind {
    pub const fn new(
        name: &'static str,
        arg: Option<&'static str>,
        arg_optional: bool,
        needs_token: bool,
        open: OpenFn,
    ) -> SourceKind {
        SourceKind {
            name,
            arg,
            arg_optional,
            needs_token,
            open,
        }
    }

    fn spelling(&self) -> String {
        match (self.arg, self.arg_optional) {
            (Some(arg), true) => format!("`{}[:{arg}]`", self.name),
            (Some(arg), false) => format!("`{}:{arg}`", self.name),
            (None, _) => format!("`{}`", self.name),
        }
    }
}

/// A source as named (`github`, `github:URL`, `store:DIR`): which kind, and its argument.
#[derive(Clone)]
pub struct SourceSpec {
    kind: &'static SourceKind,
    arg: Option<String>,
}

impl std::fmt::Debug for SourceSpec {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(self.kind.name)?;
        match &self.arg {
            Some(arg) => write!(f, ":{arg}"),
            None => Ok(()),
        }
    }
}

/// A source spelling that names no source (or leaves out its argument).
#[derive(Debug, thiserror::Error)]
#[error("{value:?}: expected {}", SOURCES.iter().map(|k| k.spelling()).collect::<Vec<_>>().join(" or "))]
pub struct UnknownSource {
    pub value: String,
}

impl FromStr for SourceSpec {
    type Err = UnknownSource;

    fn from_str(value: &str) -> Result<SourceSpec, UnknownSource> {
        let (name, arg) = match value.split_once(':') {
            Some((name, arg)) => (name, Some(arg)),
            None => (value, None),
        };
        let unknown = || UnknownSource {
            value: value.to_owned(),
        };
        let kind = SOURCES
            .iter()
            .find(|k| k.name == name)
            .ok_or_else(unknown)?;
        let fits = match (kind.arg, arg) {
            (None, None) => true,
            (Some(_), Some(a)) => !a.is_empty(),
            (Some(_), None) => kind.arg_optional,
            (None, Some(_)) => false,
        };
        if !fits {
            return Err(unknown());
        }
        Ok(SourceSpec {
            kind,
            arg: arg.map(str::to_owned),
        })
    }
}

impl SourceSpec {
    /// `kind` with `arg`; for callers that take the argument from a flag of their own.
    pub fn of(kind: &'static SourceKind, arg: Option<String>) -> SourceSpec {
        SourceSpec { kind, arg }
    }

    pub fn kind(&self) -> &'static SourceKind {
        self.kind
    }

    pub fn open(&self, inputs: SourceInputs) -> Result<Box<dyn ArtifactSource>, FetchError> {
        (self.kind.open)(self.arg.as_deref(), inputs)
    }
}

/// A boxed future, so that sources can be chosen at run time (`&dyn ArtifactSource`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub trait ArtifactSource: Send + Sync {
    /// The repository itself: its default branch is where a signer workflow must run from.
    fn repository<'a>(&'a self, repo: &'a str) -> BoxFuture<'a, Result<Repository, FetchError>>;

    /// The workflow at `path` (`.github/workflows/ci.yml`): its id is what runs are pinned to.
    fn workflow<'a>(
        &'a self,
        repo: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Workflow, FetchError>>;

    /// Every artifact with exactly this name, in any order.
    fn artifacts_named<'a>(
        &'a self,
        repo: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Artifact>, FetchError>>;

    /// The run `id`, as the source's own records describe it (not as the artifact claims).
    fn run<'a>(&'a self, repo: &'a str, id: u64) -> BoxFuture<'a, Result<Run, FetchError>>;

    /// Writes `artifact`'s zip to `dest`, a fresh path that must not be opened if it exists.
    fn download<'a>(
        &'a self,
        repo: &'a str,
        artifact: &'a Artifact,
        dest: &'a Path,
    ) -> BoxFuture<'a, Result<Download, FetchError>>;

    /// One page of the attestations GitHub's attestation store of `repo` holds for `digest`
    /// (`sha256:<hex>`) of `predicate_type`, unverified: the first when `next` is `None`,
    /// else the page `next` names; entries numbered from `first_index`. The type is a filter
    /// for the store to apply where it can, never a check. A source without such a store
    /// says so.
    fn attestation_page<'a>(
        &'a self,
        repo: &'a str,
        digest: &'a str,
        predicate_type: &'a str,
        next: Option<&'a str>,
        first_index: usize,
    ) -> BoxFuture<'a, Result<AttestationPage, FetchError>> {
        let _ = (repo, digest, predicate_type, next, first_index);
        Box::pin(async { Err(FetchError::NoAttestationStore) })
    }

    /// The artifacts uploaded by the successful runs of workflow `workflow_id` under `event`
    /// at `head_sha`, whatever their names: where candidates come from when no artifact has
    /// the expected name and evidence is found by digest. A source that cannot list runs
    /// finds none.
    fn artifacts_of_runs<'a>(
        &'a self,
        repo: &'a str,
        workflow_id: u64,
        event: &'a str,
        head_sha: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Artifact>, FetchError>> {
        let _ = (repo, workflow_id, event, head_sha);
        Box::pin(async { Ok(Vec::new()) })
    }

    /// Remote requests made so far (reported to the user; a local source makes none).
    fn api_calls(&self) -> u64 {
        0
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn spellings_pick_a_source_or_say_what_is_expected() {
        // (spelling, the source and argument it names; `None`: refused)
        type Case<'a> = (&'a str, Option<(&'a str, Option<&'a str>)>);
        let cases: &[Case] = &[
            ("github", Some(("github", None))),
            (
                "github:http://127.0.0.1:8080",
                Some(("github", Some("http://127.0.0.1:8080"))),
            ),
            (
                "store:/srv/artifacts",
                Some(("store", Some("/srv/artifacts"))),
            ),
            (
                "store:C:\\artifacts",
                Some(("store", Some("C:\\artifacts"))),
            ),
            ("store", None),
            ("store:", None),
            ("github:", None),
            ("s3:bucket", None),
            ("", None),
        ];
        for (value, want) in cases {
            let got = value.parse::<SourceSpec>();
            match (want, got) {
                (Some((name, arg)), Ok(spec)) => {
                    assert_eq!(spec.kind().name, *name, "{value}");
                    assert_eq!(spec.arg.as_deref(), *arg, "{value}");
                }
                (None, Err(e)) => assert_eq!(
                    e.to_string(),
                    format!("{value:?}: expected `github[:API_URL]` or `store:DIR`")
                ),
                (want, got) => panic!("{value}: expected {want:?}, got {got:?}"),
            }
        }
    }
}
