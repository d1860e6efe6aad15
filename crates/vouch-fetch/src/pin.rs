//! Pin: is this run the one the consumer expects? Every check reads API metadata the producer
//! cannot forge. The run's `path` is not compared (it may carry `@ref`); the workflow id is.

use vouch_github::{Artifact, Run, Workflow};

use crate::Expectation;

/// Why a run is not the expected one. The messages are shown per rejected candidate.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum PinError {
    #[error("run's workflow_id {} is not {expected} ({path})", display_id(*.found))]
    Workflow {
        found: Option<u64>,
        expected: u64,
        path: String,
    },
    #[error("run's event is {found:?}, expected {expected:?}")]
    Event { found: String, expected: String },
    #[error("run did not succeed (status {status:?}, conclusion {conclusion:?})")]
    NotSucceeded { status: String, conclusion: String },
    #[error("run's head_sha is {found}, expected {expected}")]
    HeadSha { found: String, expected: String },
    #[error("run belongs to {found:?}, expected {expected:?}")]
    Repository { found: String, expected: String },
    #[error("a {event} build's head repository is {found:?}, a fork or another repository")]
    HeadRepository { event: String, found: String },
    #[error(
        "artifact's workflow_run.id is not the run (the artifact names run {}, the run is {run})",
        display_id(*.artifact_run)
    )]
    ArtifactRun { artifact_run: Option<u64>, run: u64 },
    #[error("run is not for pull request #{0}")]
    PullRequest(u64),
    /// Seen in the listing already, before the run is fetched.
    #[error("artifact's workflow_run.head_sha is {found}, expected {expected}")]
    ListedHeadSha { found: String, expected: String },
    #[error("artifact names no workflow run")]
    NoRun,
}

fn display_id(id: Option<u64>) -> String {
    id.map_or_else(|| "null".into(), |n| n.to_string())
}

/// Checks `run` (fetched by the id `artifact` names) against `exp`; `workflow` is the expected
/// workflow file as the source resolved it, since runs name their workflow by id.
pub fn pin(
    run: &Run,
    artifact: &Artifact,
    exp: &Expectation,
    workflow: &Workflow,
) -> Result<(), PinError> {
    if run.workflow_id != Some(workflow.id) {
        return Err(PinError::Workflow {
            found: run.workflow_id,
            expected: workflow.id,
            path: exp.workflow.clone(),
        });
    }
    if run.event != exp.event {
        return Err(PinError::Event {
            found: run.event.clone(),
            expected: exp.event.clone(),
        });
    }
    let conclusion = run.conclusion.as_deref().unwrap_or("");
    if run.status != "completed" || conclusion != "success" {
        return Err(PinError::NotSucceeded {
            status: run.status.clone(),
            conclusion: conclusion.to_owned(),
        });
    }
    if run.head_sha != exp.sha {
        return Err(PinError::HeadSha {
            found: run.head_sha.clone(),
            expected: exp.sha.clone(),
        });
    }
    let repo = run.repository.clone().unwrap_or_default();
    if repo.full_name != exp.repo {
        return Err(PinError::Repository {
            found: repo.full_name,
            expected: exp.repo.clone(),
        });
    }
    let head = run.head_repository.clone().unwrap_or_default();
    // Only pull_request builds may come from a fork; they are held to the PR checks instead.
    if exp.event != "pull_request" && (head.full_name != exp.repo || head.fork) {
        return Err(PinError::HeadRepository {
            event: exp.event.clone(),
            found: head.full_name,
        });
    }
    if artifact.run_id() != Some(run.id) {
        return Err(PinError::ArtifactRun {
            artifact_run: artifact.run_id(),
            run: run.id,
        });
    }
    if let Some(n) = exp.pr
        && let Some(prs) = &run.pull_requests
        // Fork PRs have an empty pull_requests list by design; same-repo PRs list theirs.
        && !head.fork
        && !prs.iter().any(|p| p.number == n)
    {
        return Err(PinError::PullRequest(n));
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use vouch_github::{PullRequestRef, Repository, RunRef};

    use super::*;

    const SHA: &str = "1111111111111111111111111111111111111111";
    const OTHER: &str = "3333333333333333333333333333333333333333";

    fn exp(event: &str, pr: Option<u64>) -> Expectation {
        Expectation {
            repo: "cupy/cupy".into(),
            workflow: ".github/workflows/ci.yml".into(),
            event: event.into(),
            sha: SHA.into(),
            pr,
            artifact_name: "a".into(),
            cell: None,
        }
    }

    fn repo(name: &str, fork: bool) -> Option<Repository> {
        Some(Repository {
            full_name: name.into(),
            fork,
        })
    }

    fn run(event: &str, prs: Option<Vec<u64>>) -> Run {
        Run {
            id: 500,
            workflow_id: Some(7),
            event: event.into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            head_sha: SHA.into(),
            repository: repo("cupy/cupy", false),
            head_repository: repo("cupy/cupy", false),
            pull_requests: prs.map(|v| {
                v.into_iter()
                    .map(|number| PullRequestRef { number })
                    .collect()
            }),
        }
    }

    fn artifact(run: Option<u64>) -> Artifact {
        Artifact {
            id: 1001,
            name: "a".into(),
            expired: false,
            created_at: None,
            digest: None,
            workflow_run: Some(RunRef {
                id: run,
                head_sha: Some(SHA.into()),
            }),
        }
    }

    const WORKFLOW: Workflow = Workflow {
        id: 7,
        path: String::new(),
    };

    #[test]
    fn each_rejection_reason() {
        type Edit = fn(&mut Run, &mut Artifact);
        let cases: &[(&str, Expectation, Edit, Option<PinError>)] = &[
            ("the expected run", exp("push", None), |_, _| {}, None),
            (
                "sibling workflow",
                exp("push", None),
                |r, _| r.workflow_id = Some(999),
                Some(PinError::Workflow {
                    found: Some(999),
                    expected: 7,
                    path: ".github/workflows/ci.yml".into(),
                }),
            ),
            (
                "no workflow id",
                exp("push", None),
                |r, _| r.workflow_id = None,
                Some(PinError::Workflow {
                    found: None,
                    expected: 7,
                    path: ".github/workflows/ci.yml".into(),
                }),
            ),
            (
                "another event",
                exp("push", None),
                |r, _| r.event = "workflow_dispatch".into(),
                Some(PinError::Event {
                    found: "workflow_dispatch".into(),
                    expected: "push".into(),
                }),
            ),
            (
                "failed",
                exp("push", None),
                |r, _| r.conclusion = Some("failure".into()),
                Some(PinError::NotSucceeded {
                    status: "completed".into(),
                    conclusion: "failure".into(),
                }),
            ),
            (
                "still running",
                exp("push", None),
                |r, _| {
                    r.status = "in_progress".into();
                    r.conclusion = None;
                },
                Some(PinError::NotSucceeded {
                    status: "in_progress".into(),
                    conclusion: String::new(),
                }),
            ),
            (
                "another commit",
                exp("push", None),
                |r, _| r.head_sha = OTHER.into(),
                Some(PinError::HeadSha {
                    found: OTHER.into(),
                    expected: SHA.into(),
                }),
            ),
            (
                "another repository",
                exp("push", None),
                |r, _| r.repository = repo("attacker/cupy", false),
                Some(PinError::Repository {
                    found: "attacker/cupy".into(),
                    expected: "cupy/cupy".into(),
                }),
            ),
            (
                "no repository",
                exp("push", None),
                |r, _| r.repository = None,
                Some(PinError::Repository {
                    found: String::new(),
                    expected: "cupy/cupy".into(),
                }),
            ),
            (
                "push from a fork",
                exp("push", None),
                |r, _| r.head_repository = repo("attacker/cupy", true),
                Some(PinError::HeadRepository {
                    event: "push".into(),
                    found: "attacker/cupy".into(),
                }),
            ),
            (
                "push whose head repository is flagged a fork",
                exp("push", None),
                |r, _| r.head_repository = repo("cupy/cupy", true),
                Some(PinError::HeadRepository {
                    event: "push".into(),
                    found: "cupy/cupy".into(),
                }),
            ),
            (
                "artifact of another run",
                exp("push", None),
                |_, a| *a = artifact(Some(501)),
                Some(PinError::ArtifactRun {
                    artifact_run: Some(501),
                    run: 500,
                }),
            ),
            (
                "PR build listing another PR",
                exp("pull_request", Some(7)),
                |r, _| *r = run("pull_request", Some(vec![8])),
                Some(PinError::PullRequest(7)),
            ),
            (
                "PR build listing its PR",
                exp("pull_request", Some(7)),
                |r, _| *r = run("pull_request", Some(vec![8, 7])),
                None,
            ),
            (
                "fork PR: empty list by design",
                exp("pull_request", Some(7)),
                |r, _| {
                    *r = run("pull_request", Some(vec![]));
                    r.head_repository = repo("contributor/cupy", true);
                },
                None,
            ),
            (
                "PR list absent",
                exp("pull_request", Some(7)),
                |r, _| *r = run("pull_request", None),
                None,
            ),
        ];
        for (what, exp, edit, want) in cases {
            let mut r = run(&exp.event, None);
            let mut a = artifact(Some(500));
            edit(&mut r, &mut a);
            assert_eq!(pin(&r, &a, exp, &WORKFLOW).err(), *want, "{what}");
        }
    }

    /// The messages tests/fetch.rs (and users' scripts) look for.
    #[test]
    fn messages() {
        let cases = [
            (
                PinError::Workflow {
                    found: Some(999),
                    expected: 161335,
                    path: "ci.yml".into(),
                },
                "run's workflow_id 999 is not 161335 (ci.yml)",
            ),
            (
                PinError::Workflow {
                    found: None,
                    expected: 1,
                    path: "ci.yml".into(),
                },
                "run's workflow_id null is not 1 (ci.yml)",
            ),
            (
                PinError::Event {
                    found: "workflow_dispatch".into(),
                    expected: "push".into(),
                },
                "run's event is \"workflow_dispatch\", expected \"push\"",
            ),
            (
                PinError::ArtifactRun {
                    artifact_run: Some(501),
                    run: 500,
                },
                "artifact's workflow_run.id is not the run (the artifact names run 501, the run is 500)",
            ),
            (PinError::PullRequest(7), "run is not for pull request #7"),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
