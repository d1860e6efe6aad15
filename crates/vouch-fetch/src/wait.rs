//! Wait: the producing run, once it has completed or the time to wait for it is up. A push
//! build dispatches its tests from inside its own run, and the signer dispatches them before
//! its run ends, so a consumer may start while the run it needs is still going. What it then
//! concluded is for `pin` to judge; a run still going when the time is up is turned down.
//! Only a run that already passed `pin_static` is waited for: what a decoy's run is (a fork's,
//! another workflow's) is known at once, and it must not spend the deadline all candidates share.

use std::time::{Duration, Instant};

use vouch_github::Run;

use crate::{ArtifactSource, FetchError};

/// How soon a run that is still going is first asked again; the pause doubles up to
/// [`MAX_POLL`], so a long wait costs a few dozen API calls (many test jobs may share a token).
const FIRST_POLL: Duration = Duration::from_secs(2);
const MAX_POLL: Duration = Duration::from_secs(30);

/// `run` (as just fetched), asked again (ever less often, and never past the deadline) until
/// it has completed or `deadline` has passed.
pub(crate) async fn until_completed(
    source: &dyn ArtifactSource,
    repo: &str,
    mut run: Run,
    deadline: Instant,
) -> Result<Run, FetchError> {
    let mut pause = FIRST_POLL;
    loop {
        let now = Instant::now();
        if run.status == "completed" || now >= deadline {
            return Ok(run);
        }
        tracing::info!(run = run.id, status = %run.status, "waiting for the run to complete");
        tokio::time::sleep(pause.min(deadline - now)).await;
        pause = (pause * 2).min(MAX_POLL);
        run = source.run(repo, run.id).await?;
    }
}
