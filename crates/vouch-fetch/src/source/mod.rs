//! Where artifacts come from. The pipeline sees only [`ArtifactSource`]; each source lives in
//! its own module and is registered below with one `mod`/`pub use` pair.
//!
//! A source answers with the GitHub API's typed shapes ([`Workflow`], [`Artifact`], [`Run`]),
//! because pinning decides on exactly those fields; a source that cannot vouch for a field
//! (e.g. `head_repository`) must leave it empty so that `pin` rejects, never guess it.

use std::future::Future;
use std::path::Path;
use std::pin::Pin;

use vouch_github::{Artifact, Download, Run, Workflow};

use crate::FetchError;

mod github;
mod store;

pub use store::{LocalStore, RunInfo, publish};

/// A boxed future, so that sources can be chosen at run time (`&dyn ArtifactSource`).
pub type BoxFuture<'a, T> = Pin<Box<dyn Future<Output = T> + Send + 'a>>;

pub trait ArtifactSource: Send + Sync {
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

    /// Remote requests made so far (reported to the user; a local source makes none).
    fn api_calls(&self) -> u64 {
        0
    }
}
