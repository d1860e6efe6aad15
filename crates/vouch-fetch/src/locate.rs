//! Locate: the candidates for the expected artifact name (a lookup hint only), newest first,
//! and the cheap rejections the listing alone allows.

use vouch_github::{Artifact, Workflow};

use crate::{ArtifactSource, Expectation, FetchError, PinError, RejectKind, Rejection, reject};

pub(crate) struct Located {
    /// The expected workflow file as the source knows it: runs are pinned to its id.
    pub workflow: Workflow,
    pub candidates: Vec<Artifact>,
}

pub(crate) async fn locate(
    source: &dyn ArtifactSource,
    exp: &Expectation,
) -> Result<Located, FetchError> {
    let workflow = source.workflow(&exp.repo, &exp.workflow).await?;
    let mut candidates = source
        .artifacts_named(&exp.repo, &exp.artifact_name)
        .await?;
    // Newest first: a re-run's artifact supersedes the first attempt's.
    candidates.sort_by(|a, b| (&b.created_at, b.id).cmp(&(&a.created_at, a.id)));
    Ok(Located {
        workflow,
        candidates,
    })
}

/// The run `artifact` names, unless the listing already rules it out. The listing names the
/// run's head commit: a decoy of another commit costs no run lookup (the run's own head_sha is
/// checked when pinning).
pub(crate) fn screen(artifact: &Artifact, exp: &Expectation) -> Result<u64, Rejection> {
    let id = artifact.id;
    let run_id = artifact.run_id();
    if artifact.expired {
        return Err(reject(
            id,
            run_id,
            RejectKind::Download,
            "artifact has expired",
        ));
    }
    let pin_err = |e: PinError| reject(id, run_id, RejectKind::Pin, e.to_string());
    if let Some(h) = artifact
        .workflow_run
        .as_ref()
        .and_then(|r| r.head_sha.as_deref())
        && h != exp.sha
    {
        return Err(pin_err(PinError::ListedHeadSha {
            found: h.to_owned(),
            expected: exp.sha.clone(),
        }));
    }
    run_id.ok_or_else(|| pin_err(PinError::NoRun))
}
