//! Pin: is this run the one the consumer expects? Every check reads API metadata the producer
//! cannot forge. The run's `path` is not compared (it may carry `@ref`); the workflow id is.
//!
//! Two kinds of run upload what a consumer installs: a push build's own run (its head is the
//! commit under test), and for pull-request builds the signer workflow's `workflow_run` run
//! (it runs the default branch's head; the build it signed is named by the signed statement,
//! which `verify` holds to the expected PR and head).

use vouch_github::{Artifact, Run, Workflow};

use crate::Expectation;

/// The run an artifact must come from, as the source knows it.
#[derive(Clone, Debug)]
pub struct Producer {
    /// The producing workflow file: runs are pinned to its id.
    pub workflow: Workflow,
    /// The repository's default branch, the one a signer must run from (signer runs only).
    pub default_branch: Option<String>,
}

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
    #[error("run is still {status:?}{}", waited_for(*.waited))]
    NotCompleted { status: String, waited: u64 },
    #[error("run's head_sha is {found}, expected {expected}")]
    HeadSha { found: String, expected: String },
    #[error(
        "run's head_branch is {}, expected {expected:?}: a signer counts only when it runs the default branch's workflow",
        .found.as_deref().map_or_else(|| "null".to_owned(), |b| format!("{b:?}"))
    )]
    HeadBranch {
        found: Option<String>,
        expected: String,
    },
    #[error("run belongs to {found:?}, expected {expected:?}")]
    Repository { found: String, expected: String },
    #[error("a {event} build's head repository is {found:?}, a fork or another repository")]
    HeadRepository { event: String, found: String },
    #[error(
        "artifact's workflow_run.id is not the run (the artifact names run {}, the run is {run})",
        display_id(*.artifact_run)
    )]
    ArtifactRun { artifact_run: Option<u64>, run: u64 },
    /// Seen in the listing already, before the run is fetched.
    #[error("artifact's workflow_run.head_sha is {found}, expected {expected}")]
    ListedHeadSha { found: String, expected: String },
    #[error("artifact names no workflow run")]
    NoRun,
}

fn display_id(id: Option<u64>) -> String {
    id.map_or_else(|| "null".into(), |n| n.to_string())
}

fn waited_for(seconds: u64) -> String {
    if seconds == 0 {
        " (not waited for)".to_owned()
    } else {
        format!(" after {seconds}s of waiting for it to complete")
    }
}

/// Checks `run` (fetched by the id `artifact` names) against `exp`; `producer` is the
/// producing workflow as the source resolved it, since runs name their workflow by id.
pub fn pin(
    run: &Run,
    artifact: &Artifact,
    exp: &Expectation,
    producer: &Producer,
) -> Result<(), PinError> {
    pin_static(run, artifact, exp, producer)?;
    let conclusion = run.conclusion.as_deref().unwrap_or("");
    if run.status != "completed" || conclusion != "success" {
        return Err(PinError::NotSucceeded {
            status: run.status.clone(),
            conclusion: conclusion.to_owned(),
        });
    }
    Ok(())
}

/// Every check of [`pin`] on facts a run has from the start and never changes (workflow,
/// event, head, repository, head repository, artifact's run): whether it succeeded is left
/// out. A candidate is waited for only once these pass, so a decoy whose run never ends (a
/// fork's, another workflow's) is turned down at once instead of holding the fetch.
pub fn pin_static(
    run: &Run,
    artifact: &Artifact,
    exp: &Expectation,
    producer: &Producer,
) -> Result<(), PinError> {
    let workflow = &producer.workflow;
    if run.workflow_id != Some(workflow.id) {
        return Err(PinError::Workflow {
            found: run.workflow_id,
            expected: workflow.id,
            path: exp.producing_workflow().to_owned(),
        });
    }
    let event = exp.producing_event();
    if run.event != event {
        return Err(PinError::Event {
            found: run.event.clone(),
            expected: event.to_owned(),
        });
    }
    match &producer.default_branch {
        // A signer run is of the default branch; the commit under test is the statement's.
        Some(branch) if exp.signed_by_signer() => {
            if run.head_branch.as_deref() != Some(branch.as_str()) {
                return Err(PinError::HeadBranch {
                    found: run.head_branch.clone(),
                    expected: branch.clone(),
                });
            }
        }
        _ => {
            if run.head_sha != exp.sha {
                return Err(PinError::HeadSha {
                    found: run.head_sha.clone(),
                    expected: exp.sha.clone(),
                });
            }
        }
    }
    let repo = run.repository.clone().unwrap_or_default();
    if repo.full_name != exp.repo {
        return Err(PinError::Repository {
            found: repo.full_name,
            expected: exp.repo.clone(),
        });
    }
    // Both kinds of producing run run the repository's own code: never a fork's.
    let head = run.head_repository.clone().unwrap_or_default();
    if head.full_name != exp.repo || head.fork {
        return Err(PinError::HeadRepository {
            event: event.to_owned(),
            found: head.full_name,
        });
    }
    if artifact.run_id() != Some(run.id) {
        return Err(PinError::ArtifactRun {
            artifact_run: artifact.run_id(),
            run: run.id,
        });
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use vouch_github::{Repository, RunRef};

    use super::*;

    const SHA: &str = "1111111111111111111111111111111111111111";
    const OTHER: &str = "3333333333333333333333333333333333333333";
    const MAIN: &str = "5555555555555555555555555555555555555555";

    fn exp(event: &str, pr: Option<u64>) -> Expectation {
        Expectation {
            repo: "cupy/cupy".into(),
            workflow: ".github/workflows/ci.yml".into(),
            signer_workflow: ".github/workflows/vouch-sign.yml".into(),
            event: event.into(),
            sha: SHA.into(),
            pr,
            artifact_name: "a".into(),
            cell: None,
            wait_for_run: std::time::Duration::ZERO,
            checkout: None,
        }
    }

    fn repo(name: &str, fork: bool) -> Option<Repository> {
        Some(Repository {
            full_name: name.into(),
            fork,
            ..Repository::default()
        })
    }

    fn run(event: &str) -> Run {
        Run {
            id: 500,
            workflow_id: Some(7),
            path: None,
            event: event.into(),
            status: "completed".into(),
            conclusion: Some("success".into()),
            head_sha: SHA.into(),
            head_branch: Some("main".into()),
            run_attempt: Some(1),
            repository: repo("cupy/cupy", false),
            head_repository: repo("cupy/cupy", false),
            pull_requests: None,
        }
    }

    /// The signer's run for PR 7: of the default branch's head, not of the PR's.
    fn sign_run() -> Run {
        Run {
            head_sha: MAIN.into(),
            ..run("workflow_run")
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
                ..RunRef::default()
            }),
        }
    }

    fn producer(signer: bool) -> Producer {
        Producer {
            workflow: Workflow {
                id: 7,
                path: String::new(),
            },
            default_branch: signer.then(|| "main".to_owned()),
        }
    }

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
        ];
        for (what, exp, edit, want) in cases {
            let mut r = run(&exp.event);
            let mut a = artifact(Some(500));
            edit(&mut r, &mut a);
            assert_eq!(pin(&r, &a, exp, &producer(false)).err(), *want, "{what}");
        }
    }

    /// A PR build's artifact comes from the signer's run: `workflow_run`, on the default
    /// branch, of the repository itself; its head commit is not the PR's.
    #[test]
    fn signer_runs() {
        type Edit = fn(&mut Run);
        let cases: &[(&str, Edit, Option<PinError>)] = &[
            ("the signer's run", |_| {}, None),
            (
                "the PR's own build run",
                |r| r.event = "pull_request".into(),
                Some(PinError::Event {
                    found: "pull_request".into(),
                    expected: "workflow_run".into(),
                }),
            ),
            (
                "a signer run of another branch",
                |r| r.head_branch = Some("feature".into()),
                Some(PinError::HeadBranch {
                    found: Some("feature".into()),
                    expected: "main".into(),
                }),
            ),
            (
                "no branch",
                |r| r.head_branch = None,
                Some(PinError::HeadBranch {
                    found: None,
                    expected: "main".into(),
                }),
            ),
            (
                "a fork's head",
                |r| r.head_repository = repo("contributor/cupy", true),
                Some(PinError::HeadRepository {
                    event: "workflow_run".into(),
                    found: "contributor/cupy".into(),
                }),
            ),
            (
                "a cancelled signer",
                |r| r.conclusion = Some("cancelled".into()),
                Some(PinError::NotSucceeded {
                    status: "completed".into(),
                    conclusion: "cancelled".into(),
                }),
            ),
        ];
        for (what, edit, want) in cases {
            let mut r = sign_run();
            edit(&mut r);
            let got = pin(
                &r,
                &artifact(Some(500)),
                &exp("pull_request", Some(7)),
                &producer(true),
            );
            assert_eq!(got.err(), *want, "{what}");
        }
    }

    /// A run still going is judged on what it already is: a decoy of a fork (or of another
    /// workflow) fails at once, so nobody waits for it; the expected run passes and is waited
    /// for, and `pin` still refuses it until it succeeded.
    #[test]
    fn static_checks_judge_a_run_still_going() {
        let going = |edit: fn(&mut Run)| {
            let mut r = run("push");
            r.status = "in_progress".into();
            r.conclusion = None;
            edit(&mut r);
            r
        };
        let (a, e, p) = (artifact(Some(500)), exp("push", None), producer(false));
        let fork = going(|r| r.head_repository = repo("attacker/cupy", true));
        assert_eq!(
            pin_static(&fork, &a, &e, &p),
            Err(PinError::HeadRepository {
                event: "push".into(),
                found: "attacker/cupy".into(),
            })
        );
        let sibling = going(|r| r.workflow_id = Some(999));
        assert!(matches!(
            pin_static(&sibling, &a, &e, &p),
            Err(PinError::Workflow { .. })
        ));
        let expected = going(|_| {});
        assert_eq!(pin_static(&expected, &a, &e, &p), Ok(()));
        assert!(matches!(
            pin(&expected, &a, &e, &p),
            Err(PinError::NotSucceeded { .. })
        ));
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
            (
                PinError::NotCompleted {
                    status: "in_progress".into(),
                    waited: 0,
                },
                "run is still \"in_progress\" (not waited for)",
            ),
            (
                PinError::NotCompleted {
                    status: "queued".into(),
                    waited: 900,
                },
                "run is still \"queued\" after 900s of waiting for it to complete",
            ),
            (
                PinError::HeadBranch {
                    found: Some("feature".into()),
                    expected: "main".into(),
                },
                "run's head_branch is \"feature\", expected \"main\": a signer counts only when it runs the default branch's workflow",
            ),
        ];
        for (e, want) in cases {
            assert_eq!(e.to_string(), want);
        }
    }
}
