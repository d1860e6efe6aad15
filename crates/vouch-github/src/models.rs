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
    #[serde(default)]
    pub event: String,
    #[serde(default)]
    pub status: String,
    #[serde(default)]
    pub conclusion: Option<String>,
    #[serde(default)]
    pub head_sha: String,
    #[serde(default)]
    pub repository: Option<Repository>,
    #[serde(default)]
    pub head_repository: Option<Repository>,
    /// Absent and empty mean different things: fork PRs list none by design.
    #[serde(default)]
    pub pull_requests: Option<Vec<PullRequestRef>>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
pub struct Repository {
    #[serde(default)]
    pub full_name: String,
    #[serde(default)]
    pub fork: bool,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
pub struct PullRequestRef {
    pub number: u64,
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
    }
}
