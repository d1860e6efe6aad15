//! Commit statuses (`GET /repos/{repo}/commits/{ref}/statuses`, `POST /repos/{repo}/statuses/{sha}`)
//! and a pull request's comments (`POST /repos/{repo}/issues/{n}/comments`): what a test farm's
//! dispatcher reports on a commit besides the farm's own statuses.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::attestations::error_detail;
use crate::{GithubClient, GithubError, parse, redact};

/// One status as GitHub lists it (newest first; a context may appear more than once).
#[derive(Clone, Debug, PartialEq, Eq, Deserialize)]
pub struct CommitStatus {
    pub context: String,
    pub state: String,
    #[serde(default)]
    pub description: Option<String>,
    #[serde(default)]
    pub target_url: Option<String>,
    /// RFC 3339, as GitHub writes it (so it sorts as text).
    #[serde(default)]
    pub updated_at: Option<String>,
}

/// A status to set.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct NewStatus {
    pub context: String,
    /// `success`, `failure`, `error` or `pending`.
    pub state: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub description: Option<String>,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub target_url: Option<String>,
}

impl GithubClient {
    /// Every status set on `sha` (at most [`crate::MAX_PAGES`] pages).
    pub async fn commit_statuses(
        &self,
        repo: &str,
        sha: &str,
    ) -> Result<Vec<CommitStatus>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/commits/{sha}/statuses?per_page=100",
            self.api
        );
        self.list(url, None)
            .await?
            .into_iter()
            .map(|(s, page)| parse(s, || page))
            .collect()
    }

    /// Sets one status on `sha`. Setting the same status twice is harmless, so the request is
    /// retried as GETs are.
    pub async fn create_status(
        &self,
        repo: &str,
        sha: &str,
        status: &NewStatus,
    ) -> Result<(), GithubError> {
        let url = format!("{}/repos/{repo}/statuses/{sha}", self.api);
        let body = serde_json::to_value(status).expect("a status serializes");
        let resp = self.api_post(&url, &body).await?;
        let code = resp.status().as_u16();
        if !(200..300).contains(&code) {
            let body: Value = resp.json().await.unwrap_or(Value::Null);
            return Err(GithubError::Status {
                url: redact(&url),
                status: code,
                detail: error_detail(&body),
            });
        }
        Ok(())
    }

    /// Comments on issue or pull request `n`; its page (`html_url`).
    pub async fn create_issue_comment(
        &self,
        repo: &str,
        n: u64,
        text: &str,
    ) -> Result<String, GithubError> {
        let url = format!("{}/repos/{repo}/issues/{n}/comments", self.api);
        let resp = self
            .api_post(&url, &serde_json::json!({ "body": text }))
            .await?;
        let code = resp.status().as_u16();
        let body: Value = resp.json().await.unwrap_or(Value::Null);
        if !(200..300).contains(&code) {
            return Err(GithubError::Status {
                url: redact(&url),
                status: code,
                detail: error_detail(&body),
            });
        }
        body["html_url"]
            .as_str()
            .map(str::to_owned)
            .ok_or_else(|| GithubError::Protocol {
                url: redact(&url),
                reason: "the answer names no html_url".into(),
            })
    }
}
