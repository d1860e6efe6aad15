//! Where a build ran. In GitHub Actions this comes from the `GITHUB_*` variables and the event
//! payload; locally from flags. None of it is trusted by a verifier on its own: the verifier
//! compares these claims with the signing certificate.

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};

#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct RunContext {
    /// `https://github.com` (or a GitHub Enterprise host).
    pub server_url: String,
    /// `owner/name`.
    pub repository: String,
    pub repository_id: Option<String>,
    pub repository_owner_id: Option<String>,
    /// Path of the top-level workflow file, e.g. `.github/workflows/ci.yml`.
    pub workflow_path: String,
    /// `refs/heads/main`, `refs/pull/7/merge`, `refs/tags/v1`.
    pub git_ref: String,
    /// `GITHUB_SHA`: under `pull_request` this is the merge commit, not the PR head.
    pub sha: String,
    pub event_name: String,
    pub run_id: Option<String>,
    pub run_attempt: Option<String>,
    /// `github-hosted` or `self-hosted`.
    pub runner_environment: Option<String>,
    pub pr_number: Option<u64>,
    pub pr_head_sha: Option<String>,
    /// `owner/repo/path@ref` of the workflow whose job signs: the OIDC token's
    /// `job_workflow_ref` (a reusable workflow's, not the caller's). Only the token carries it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub job_workflow_ref: Option<String>,
}

#[derive(Debug, thiserror::Error)]
pub enum ContextError {
    #[error("environment variable {0} is not set; is this running in GitHub Actions?")]
    Missing(&'static str),
    #[error("{var} = {value:?} is not of the form {expected}")]
    Malformed {
        var: &'static str,
        value: String,
        expected: &'static str,
    },
    #[error("cannot read the event payload {path:?}")]
    Event {
        path: String,
        #[source]
        source: std::io::Error,
    },
    #[error("the event payload {path:?} is not JSON")]
    EventJson {
        path: String,
        #[source]
        source: serde_json::Error,
    },
}

impl RunContext {
    /// Reads the context from a map of environment variables (the process environment in
    /// production; a fixed map in tests).
    pub fn from_github_env(env: &BTreeMap<String, String>) -> Result<RunContext, ContextError> {
        let get = |k: &'static str| env.get(k).filter(|v| !v.is_empty()).cloned();
        let need = |k: &'static str| get(k).ok_or(ContextError::Missing(k));
        let repository = need("GITHUB_REPOSITORY")?;
        // GITHUB_WORKFLOW_REF: owner/repo/.github/workflows/ci.yml@refs/heads/main
        let workflow_ref = need("GITHUB_WORKFLOW_REF")?;
        let malformed = || ContextError::Malformed {
            var: "GITHUB_WORKFLOW_REF",
            value: workflow_ref.clone(),
            expected: "<owner>/<repo>/<path>@<ref>",
        };
        let (path_part, _) = workflow_ref.rsplit_once('@').ok_or_else(malformed)?;
        let workflow_path = path_part
            .strip_prefix(&format!("{repository}/"))
            .ok_or_else(malformed)?
            .to_owned();
        let event_name = need("GITHUB_EVENT_NAME")?;
        let mut ctx = RunContext {
            server_url: get("GITHUB_SERVER_URL").unwrap_or_else(|| "https://github.com".into()),
            repository,
            repository_id: get("GITHUB_REPOSITORY_ID"),
            repository_owner_id: get("GITHUB_REPOSITORY_OWNER_ID"),
            workflow_path,
            git_ref: need("GITHUB_REF")?,
            sha: need("GITHUB_SHA")?,
            event_name,
            run_id: get("GITHUB_RUN_ID"),
            run_attempt: get("GITHUB_RUN_ATTEMPT"),
            runner_environment: get("RUNNER_ENVIRONMENT"),
            pr_number: None,
            pr_head_sha: None,
            // The signing token names it; the signer fills it in.
            job_workflow_ref: None,
        };
        if let Some(path) = get("GITHUB_EVENT_PATH")
            && ctx.event_name.starts_with("pull_request")
        {
            let text = std::fs::read_to_string(Path::new(&path)).map_err(|source| {
                ContextError::Event {
                    path: path.clone(),
                    source,
                }
            })?;
            let event: serde_json::Value =
                serde_json::from_str(&text).map_err(|source| ContextError::EventJson {
                    path: path.clone(),
                    source,
                })?;
            ctx.pr_number = event["pull_request"]["number"]
                .as_u64()
                .or_else(|| event["number"].as_u64());
            ctx.pr_head_sha = event["pull_request"]["head"]["sha"]
                .as_str()
                .map(str::to_owned);
        }
        Ok(ctx)
    }

    /// `https://github.com/<repo>/actions/runs/<id>/attempts/<n>`, when the run is known.
    pub fn invocation_id(&self) -> Option<String> {
        let run = self.run_id.as_deref()?;
        let attempt = self.run_attempt.as_deref().unwrap_or("1");
        Some(format!(
            "{}/{}/actions/runs/{run}/attempts/{attempt}",
            self.server_url, self.repository
        ))
    }

    pub fn repository_uri(&self) -> String {
        format!("{}/{}", self.server_url, self.repository)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env(pairs: &[(&str, &str)]) -> BTreeMap<String, String> {
        pairs
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn reads_a_pull_request_run() {
        let dir = std::env::temp_dir().join(format!("vouch-ctx-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let event = dir.join("event.json");
        std::fs::write(&event, r#"{"number": 7, "pull_request": {"number": 7, "head": {"sha": "1111111111111111111111111111111111111111"}}}"#).unwrap();
        let ctx = RunContext::from_github_env(&env(&[
            ("GITHUB_REPOSITORY", "cupy/cupy"),
            (
                "GITHUB_WORKFLOW_REF",
                "cupy/cupy/.github/workflows/ci.yml@refs/pull/7/merge",
            ),
            ("GITHUB_EVENT_NAME", "pull_request"),
            ("GITHUB_REF", "refs/pull/7/merge"),
            ("GITHUB_SHA", "2222222222222222222222222222222222222222"),
            ("GITHUB_RUN_ID", "5"),
            ("GITHUB_RUN_ATTEMPT", "2"),
            ("RUNNER_ENVIRONMENT", "github-hosted"),
            ("GITHUB_EVENT_PATH", event.to_str().unwrap()),
        ]))
        .unwrap();
        assert_eq!(ctx.workflow_path, ".github/workflows/ci.yml");
        assert_eq!(ctx.pr_number, Some(7));
        assert_eq!(
            ctx.pr_head_sha.as_deref(),
            Some("1111111111111111111111111111111111111111")
        );
        assert_eq!(
            ctx.invocation_id().unwrap(),
            "https://github.com/cupy/cupy/actions/runs/5/attempts/2"
        );
        std::fs::remove_dir_all(dir).unwrap();
    }

    #[test]
    fn names_the_missing_variable() {
        let err = RunContext::from_github_env(&env(&[("GITHUB_REPOSITORY", "a/b")])).unwrap_err();
        assert_eq!(
            err.to_string(),
            "environment variable GITHUB_WORKFLOW_REF is not set; is this running in GitHub Actions?"
        );
        let err = RunContext::from_github_env(&env(&[
            ("GITHUB_REPOSITORY", "a/b"),
            (
                "GITHUB_WORKFLOW_REF",
                "other/repo/.github/workflows/x.yml@refs/heads/main",
            ),
        ]))
        .unwrap_err();
        assert!(
            err.to_string().contains("<owner>/<repo>/<path>@<ref>"),
            "{err}"
        );
    }
}
