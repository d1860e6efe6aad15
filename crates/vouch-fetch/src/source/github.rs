//! GitHub's REST API as an artifact source.

use std::path::Path;

use vouch_github::{
    Artifact, AttestationPage, DEFAULT_API_URL, Download, GithubClient, Repository, Run, Workflow,
};

use super::{ArtifactSource, BoxFuture, SourceInputs, SourceKind};
use crate::FetchError;

/// `github` or `github:API_URL` (GitHub's public API, unless the spec names another: GitHub
/// Enterprise, a test double).
pub const KIND: SourceKind = SourceKind::new("github", Some("API_URL"), true, true, open);

fn open(
    api_url: Option<&str>,
    inputs: SourceInputs,
) -> Result<Box<dyn ArtifactSource>, FetchError> {
    let mut client = GithubClient::new(api_url.unwrap_or(DEFAULT_API_URL), inputs.token)?;
    if let Some(progress) = inputs.progress {
        client = client.with_progress(progress);
    }
    Ok(Box::new(client))
}

/// Runs of one workflow at one commit whose artifacts are listed when looking past names.
const MAX_RUNS: usize = 10;

/// An artifact zip larger than this is not downloaded to the end.
const MAX_ARTIFACT_BYTES: u64 = 8 << 30;

impl ArtifactSource for GithubClient {
    fn repository<'a>(&'a self, repo: &'a str) -> BoxFuture<'a, Result<Repository, FetchError>> {
        Box::pin(async move { Ok(GithubClient::repository(self, repo).await?) })
    }

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

    fn attestation_page<'a>(
        &'a self,
        repo: &'a str,
        digest: &'a str,
        predicate_type: &'a str,
        next: Option<&'a str>,
        first_index: usize,
    ) -> BoxFuture<'a, Result<AttestationPage, FetchError>> {
        Box::pin(async move {
            let page = GithubClient::attestation_page(
                self,
                repo,
                digest,
                Some(predicate_type),
                next,
                first_index,
            )
            .await?;
            Ok(page)
        })
    }

    fn artifacts_of_runs<'a>(
        &'a self,
        repo: &'a str,
        workflow_id: u64,
        event: &'a str,
        head_sha: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Artifact>, FetchError>> {
        Box::pin(async move {
            let runs = self
                .workflow_runs(repo, workflow_id, event, head_sha)
                .await?;
            let mut out = Vec::new();
            // Bounded: a commit has a handful of runs (re-runs are attempts of one run).
            for run in runs.iter().take(MAX_RUNS) {
                out.extend(self.run_artifacts(repo, run.id).await?);
            }
            Ok(out)
        })
    }

    fn api_calls(&self) -> u64 {
        GithubClient::api_calls(self)
    }
}
