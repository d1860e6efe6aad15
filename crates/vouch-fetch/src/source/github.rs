//! GitHub's REST API as an artifact source.

use std::path::Path;

use vouch_github::{Artifact, Download, GithubClient, Run, Workflow};

use super::{ArtifactSource, BoxFuture};
use crate::FetchError;

/// An artifact zip larger than this is not downloaded to the end.
const MAX_ARTIFACT_BYTES: u64 = 8 << 30;

impl ArtifactSource for GithubClient {
    fn workflow<'a>(
        &'a self,
        repo: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Workflow, FetchError>> {
        Box::pin(async move { Ok(GithubClient::workflow(self, repo, path).await?) })
    }

    fn artifacts_named<'a>(
        &'a self,
        repo: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Artifact>, FetchError>> {
        Box::pin(async move { Ok(GithubClient::artifacts_named(self, repo, name).await?) })
    }

    fn run<'a>(&'a self, repo: &'a str, id: u64) -> BoxFuture<'a, Result<Run, FetchError>> {
        Box::pin(async move { Ok(GithubClient::run(self, repo, id).await?) })
    }

    fn download<'a>(
        &'a self,
        repo: &'a str,
        artifact: &'a Artifact,
        dest: &'a Path,
    ) -> BoxFuture<'a, Result<Download, FetchError>> {
        Box::pin(async move {
            Ok(self
                .download_artifact(repo, artifact.id, dest, MAX_ARTIFACT_BYTES)
                .await?)
        })
    }

    fn api_calls(&self) -> u64 {
        GithubClient::api_calls(self)
    }
}
