//! The fields of GitHub's REST answers that vouch decides on. Identifiers are required (a
//! missing `id` is a protocol error, never artifact 0); a field that only feeds a check is
//! optional, so the check, not the parser, rejects it with a message that names it.

use serde::{Deserialize, Serialize};

/// `GET /repos/{repo}/actions/workflows/{file}`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Workflow {
    pub id: u64,
    #[serde(default)]
    pub path: String,
}

/// One entry of `GET /repos/{repo}/actions/artifacts`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Artifact {
    pub id: u64,
    pub name: String,
    #[serde(default)]
    pub expired: bool,
    #[serde(default)]
    pub created_at: Option<String>,
    /// `sha256:<hex>`, computed by the uploader: proves a download intact, never who made it.
    #[serde(default)]
    pub digest: Option<String>,
    #[serde(default)]
    pub workflow_run: Option<RunRef>,
}

/// The run an artifact names (as listed, before the run itself is fetched).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct RunRef {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub head_sha: Option<String>,
    #[serde(default)]
    pub repository_id: Option<u64>,
    /// The repository the run's head came from: not the base repository's id for a fork.
    #[serde(default)]
    pub head_repository_id: Option<u64>,
    #[serde(default)]
    pub head_branch: Option<String>,
}

impl Artifact {
    pub fn run_id(&self) -> Option<u64> {
        self.workflow_run.as_ref().and_then(|r| r.id)
    }
}

/// `GET /repos/{repo}/actions/runs/{id}`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct Run {
    pub id: u64,
    #[serde(default)]
    pub workflow_id: Option<u64>,
    /// The workflow file, possibly with `@ref`; decide on `workflow_id`.
    #[serde(default)]
    pub path: Option<String>,
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub head_sha: String,
    /// The branch the head is on (a fork's branch for fork PRs).
    #[serde(default)]
    pub head_branch: Option<String>,
    #[serde(default)]
    pub run_attempt: Option<u64>,
    #[serde(default)]
    pub repository: Option<Repository>,
    #[serde(default)]
    pub head_repository: Option<Repository>,
    /// Absent and empty mean different things: fork PRs list none by design.
    #[serde(default)]
    pub pull_requests: Option<Vec<PullRequestRef>>,
}

/// A run with the time GitHub created it (`GET runs/{id}` and the runs listings). Kept apart
/// from [`Run`] so the many places that build a `Run` by hand need not change; `created_at`
/// is set by GitHub when the event is processed and stays the same across re-run attempts.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct TimedRun {
    #[serde(flatten)]
    pub run: Run,
    /// RFC 3339, e.g. `2026-08-20T10:21:00Z`.
    #[serde(default)]
    pub created_at: Option<String>,
}

/// One entry of `GET /repos/{repo}/pulls/{n}/files`: a file the pull request changes
/// (against the merge base), as GitHub computes it.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullFile {
    pub filename: String,
    /// `added`, `removed`, `modified`, `renamed`, `copied`, `changed`, `unchanged`.
    #[serde(default)]
    pub status: String,
    /// For renames: the path the file had before.
    #[serde(default)]
    pub previous_filename: Option<String>,
}

/// `GET /repos/{repo}/collaborators/{user}/permission`.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct CollaboratorPermission {
    /// The legacy base role: `admin`, `write`, `read` or `none` (`maintain` is reported as
    /// `write`, `triage` as `read`; a custom role as the role it is based on).
    pub permission: String,
    #[serde(default)]
    pub role_name: Option<String>,
}

/// A repository as runs and pull requests embed it, and as `GET /repos/{repo}` answers.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Repository {
    #[serde(default)]
    pub id: Option<u64>,
    #[serde(default)]
    pub full_name: String,
    #[serde(default)]
    pub fork: bool,
    #[serde(default)]
    pub owner: Option<Owner>,
    /// Given by `GET /repos/{repo}`; embedded copies may leave it out.
    #[serde(default)]
    pub default_branch: Option<String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Owner {
    #[serde(default)]
    pub login: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullRequestRef {
    pub number: u64,
}

/// `GET /repos/{repo}/pulls/{n}` (and each entry of the pulls listing).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullRequest {
    pub number: u64,
    /// `open` or `closed`.
    #[serde(default)]
    pub state: String,
    pub head: PullEnd,
    pub base: PullEnd,
}

/// A pull request's head or base.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullEnd {
    /// The branch name (`main`, a fork's `feature`).
    #[serde(default, rename = "ref")]
    pub git_ref: String,
    #[serde(default)]
    pub sha: String,
    /// `null` when the head's fork was deleted.
    #[serde(default)]
    pub repo: Option<Repository>,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_missing_id_is_an_error_not_zero() {
        let e = serde_json::from_str::<Artifact>(r#"{"name": "a"}"#).unwrap_err();
        assert!(e.to_string().contains("missing field `id`"), "{e}");
        assert!(serde_json::from_str::<Run>(r#"{"event": "push"}"#).is_err());
        assert!(serde_json::from_str::<Workflow>(r#"{"path": "x"}"#).is_err());
    }

    #[test]
    fn optional_fields_default() {
        let a: Artifact = serde_json::from_str(r#"{"id": 7, "name": "a"}"#).unwrap();
        assert_eq!((a.id, a.expired, a.run_id()), (7, false, None));
        let r: Run = serde_json::from_str(r#"{"id": 1, "pull_requests": []}"#).unwrap();
        assert_eq!(r.pull_requests, Some(vec![]));
        assert_eq!(r.head_repository, None);
        let p: PullRequest = serde_json::from_str(
            r#"{"number": 7, "head": {"ref": "f", "sha": "h", "repo": null}, "base": {"ref": "main"}}"#,
        )
        .unwrap();
        assert_eq!((p.head.git_ref.as_str(), p.head.repo), ("f", None));
        assert!(serde_json::from_str::<PullRequest>(r#"{"number": 7}"#).is_err());
    }
}
