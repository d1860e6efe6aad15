//! Why a build run, or one of its artifacts, is not signed. Each reason quotes what the API
//! said and what was required, so a maintainer reading a red sign run knows what moved.

/// One open pull request that was considered for a run, and why it did not carry a usable
/// request.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Candidate {
    pub pr: u64,
    pub why: String,
}

fn list_candidates(c: &[Candidate]) -> String {
    c.iter()
        .map(|c| format!("#{}: {}", c.pr, c.why))
        .collect::<Vec<_>>()
        .join("; ")
}

#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum Refusal {
    #[error(
        "its workflow_id is {}, not {expected} ({path}): another workflow's run",
        .found.map_or_else(|| "null".to_owned(), |n| n.to_string())
    )]
    Workflow {
        found: Option<u64>,
        expected: u64,
        path: String,
    },
    #[error("its workflow path is {found:?}, not {expected:?}")]
    WorkflowPath { found: String, expected: String },
    #[error(
        "its event is {found:?}: only pull_request builds are signed here (push builds sign in their own run)"
    )]
    Event { found: String },
    #[error("it did not succeed (status {status:?}, conclusion {conclusion:?})")]
    NotSucceeded { status: String, conclusion: String },
    #[error("it belongs to {found:?}, not {expected:?}")]
    Repository { found: String, expected: String },
    #[error("the API names no {what} for it")]
    Missing { what: &'static str },
    #[error("no open pull request has head {head:?}")]
    NoOpenPull { head: String },
    #[error(
        "no open pull request from {head:?} has a /test request for {sha} recorded by a default-branch run of this repository ({})",
        list_candidates(.candidates)
    )]
    NoRequest {
        head: String,
        sha: String,
        candidates: Vec<Candidate>,
    },
    #[error(
        "pull requests {} all have a /test request for {sha}: which one the run built cannot be told",
        .prs.iter().map(|n| format!("#{n}")).collect::<Vec<_>>().join(", ")
    )]
    Ambiguous { prs: Vec<u64>, sha: String },
    #[error(
        "its request for #{pr} was recorded by run {run}, which is {reason}, not an issue_comment run of {trigger}"
    )]
    RequestRun {
        pr: u64,
        run: u64,
        reason: String,
        trigger: String,
    },
    #[error("the request recorded for #{pr} says {field} is {found:?}, the API says {expected:?}")]
    RequestMismatch {
        pr: u64,
        field: &'static str,
        found: String,
        expected: String,
    },
    #[error("pull request #{pr} is {state:?}, no longer open")]
    PullNotOpen { pr: u64, state: String },
    #[error(
        "pull request #{pr}'s head is now {now}; the run built {built}, which nobody has asked to test since"
    )]
    PullMoved { pr: u64, now: String, built: String },
    #[error("pull request #{pr}'s head repository is now {now:?}; the run built {built:?}")]
    PullHeadRepository { pr: u64, now: String, built: String },
    #[error("pull request #{pr} now targets {now:?}; the request was for {requested:?}")]
    BaseChanged {
        pr: u64,
        now: String,
        requested: String,
    },
    #[error(
        "none of its {count} unsigned-* artifact(s) is for #{pr} at {sha}: {}",
        .skipped.join("; ")
    )]
    NothingForRequest {
        count: usize,
        pr: u64,
        sha: String,
        skipped: Vec<String>,
    },
    #[error("{artifact:?} is not an artifact of it to sign ({reason})")]
    NotPinned { artifact: String, reason: String },
    #[error(
        "the event recorded for #{pr} says {field} is {found:?}, the request says {expected:?}"
    )]
    EventMismatch {
        pr: u64,
        field: &'static str,
        found: String,
        expected: String,
    },
    #[error(
        "the /test comment {comment_id} on #{pr} {problem}: a request vouches only for the commit it names (/test <targets> @<sha>, at least {} hex digits)",
        crate::request::MIN_NAMED_DIGITS
    )]
    CommitNotNamed {
        pr: u64,
        comment_id: u64,
        problem: String,
    },
    #[error(
        "the newest request for #{pr} is `/test {target} @…`, which builds nothing (it supersedes any earlier /test of this head): no build of it is signed"
    )]
    BuildsNothing { pr: u64, target: String },
    #[error(
        "the /test comment on #{pr} named @{named}, but the request recorded head {head}: a head pushed after the comment is never vouched for"
    )]
    NamedOtherCommit {
        pr: u64,
        named: String,
        head: String,
    },
    #[error(
        "{author:?}, who asked for the /test on #{pr}, has permission {permission:?} on this repository: only write, maintain or admin can vouch for a build"
    )]
    AuthorPermission {
        pr: u64,
        author: String,
        permission: String,
    },
    #[error(
        "it was created at {run_created}, not after its request (artifact {artifact}, uploaded at {request_created}): a request vouches only for build runs created after it"
    )]
    RunBeforeRequest {
        run_created: String,
        artifact: u64,
        request_created: String,
    },
    #[error(
        "run {other}, created at {created} after the same request, is still {status:?}: which run builds each cell first cannot be told yet"
    )]
    EarlierRunInFlight {
        other: u64,
        created: String,
        status: String,
    },
    #[error(
        "every cell it built was built first by another run created after the same request ({}); a re-run attempt of that run still counts as it, or comment /test again to build again",
        .cells.join("; ")
    )]
    BuiltFirstElsewhere { cells: Vec<String> },
    #[error(
        "pull request #{pr} changes the build workflow {path} ({status}): its run executed the pull request's own copy, not the one on the default branch"
    )]
    ChangesBuildWorkflow {
        pr: u64,
        path: String,
        status: String,
    },
    #[error(
        "pull request #{pr} lists {count} changed files, as many as the signer reads: whether it changes the build workflow cannot be told"
    )]
    TooManyFiles { pr: u64, count: usize },
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The wording a maintainer (and the integration tests) read.
    #[test]
    fn messages() {
        let cases = [
            (
                Refusal::Workflow {
                    found: Some(9),
                    expected: 11,
                    path: ".github/workflows/vouch-build.yml".into(),
                },
                "its workflow_id is 9, not 11 (.github/workflows/vouch-build.yml): another workflow's run",
            ),
            (
                Refusal::NoRequest {
                    head: "fork:feature".into(),
                    sha: "1".repeat(40),
                    candidates: vec![Candidate {
                        pr: 7,
                        why: "no request artifact".into(),
                    }],
                },
                "no open pull request from \"fork:feature\" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: no request artifact)",
            ),
            (
                Refusal::PullMoved {
                    pr: 7,
                    now: "2".repeat(40),
                    built: "1".repeat(40),
                },
                "pull request #7's head is now 2222222222222222222222222222222222222222; the run built 1111111111111111111111111111111111111111, which nobody has asked to test since",
            ),
            (
                Refusal::Ambiguous {
                    prs: vec![7, 9],
                    sha: "h".into(),
                },
                "pull requests #7, #9 all have a /test request for h: which one the run built cannot be told",
            ),
        ];
        for (r, want) in cases {
            assert_eq!(r.to_string(), want);
        }
    }
}
