//! Download: the candidate's zip by its immutable id into a private scratch directory, checked
//! against the digest the listing gave.

use std::path::PathBuf;

use vouch_github::Artifact;

use crate::{ArtifactSource, Expectation, FetchError, RejectKind, Stop, error_chain, reject};

/// A downloaded artifact zip, in a scratch directory of its own.
pub struct Downloaded {
    /// Removed when dropped, with everything extracted into it.
    pub work: tempfile::TempDir,
    pub zip: PathBuf,
}

/// Downloads `artifact` of `repo` by its id. `Err` only when no scratch directory can be made;
/// `Ok(Err(reason))` when this artifact cannot be had: the download failed, it expired, or the
/// bytes are not the ones the listing's digest names.
pub async fn download_zip(
    source: &dyn ArtifactSource,
    repo: &str,
    artifact: &Artifact,
) -> Result<Result<Downloaded, String>, FetchError> {
    let work = tempfile::Builder::new()
        .prefix("vouch-fetch-")
        .tempdir()
        .map_err(|e| FetchError::Io {
            path: std::env::temp_dir(),
            source: e,
        })?;
    let zip = work.path().join("artifact.zip");
    let dl = match source.download(repo, artifact, &zip).await {
        Ok(dl) => dl,
        Err(FetchError::Github(vouch_github::GithubError::Expired { .. })) => {
            return Ok(Err("artifact has expired (HTTP 410)".to_owned()));
        }
        Err(other) => return Ok(Err(error_chain(&other))),
    };
    // The uploader computed this digest: it proves the download is intact, never who made it.
    if let Some(d) = &artifact.digest
        && *d != dl.sha256.to_string()
    {
        return Ok(Err(format!(
            "download's digest {} is not the artifact's {d}",
            dl.sha256
        )));
    }
    Ok(Ok(Downloaded { work, zip }))
}

/// [`download_zip`] as a pipeline stage: a failure turns the candidate down.
pub(crate) async fn download(
    source: &dyn ArtifactSource,
    exp: &Expectation,
    artifact: &Artifact,
    run_id: u64,
) -> Result<Downloaded, Stop> {
    download_zip(source, &exp.repo, artifact)
        .await?
        .map_err(|reason| {
            Stop::Reject(reject(
                artifact.id,
                Some(run_id),
                RejectKind::Download,
                reason,
            ))
        })
}
