//! Download: the candidate's zip by its immutable id into a private scratch directory, checked
//! against the digest the listing gave.

use std::path::PathBuf;

use vouch_github::Artifact;

use crate::{ArtifactSource, Expectation, FetchError, RejectKind, Stop, error_chain, reject};

pub(crate) struct Downloaded {
    /// Removed when dropped, with everything extracted into it.
    pub work: tempfile::TempDir,
    pub zip: PathBuf,
}

pub(crate) async fn download(
    source: &dyn ArtifactSource,
    exp: &Expectation,
    artifact: &Artifact,
    run_id: u64,
) -> Result<Downloaded, Stop> {
    let work = tempfile::Builder::new()
        .prefix("vouch-fetch-")
        .tempdir()
        .map_err(|e| FetchError::Io {
            path: std::env::temp_dir(),
            source: e,
        })?;
    let zip = work.path().join("artifact.zip");
    let rejected = |reason: String| {
        Stop::Reject(reject(
            artifact.id,
            Some(run_id),
            RejectKind::Download,
            reason,
        ))
    };
    let dl = source
        .download(&exp.repo, artifact, &zip)
        .await
        .map_err(|e| {
            rejected(match &e {
                FetchError::Github(vouch_github::GithubError::Expired { .. }) => {
                    "artifact has expired (HTTP 410)".to_owned()
                }
                other => error_chain(other),
            })
        })?;
    // The uploader computed this digest: it proves the download is intact, never who made it.
    if let Some(d) = &artifact.digest
        && *d != dl.sha256.to_string()
    {
        return Err(rejected(format!(
            "download's digest {} is not the artifact's {d}",
            dl.sha256
        )));
    }
    Ok(Downloaded { work, zip })
}
