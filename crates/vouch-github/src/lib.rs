//! A small async GitHub REST client for what vouch needs: resolve a workflow file to its id,
//! list artifacts by exact name or by run, get a run, a repository and pull requests, download
//! an artifact by id; record and look up attestations (module `attestations`); read and set
//! commit statuses and comment on a pull request (module `statuses`).
//!
//! The token never leaves this crate except as the `Authorization` header of requests to the
//! API host: redirects are followed by hand, without credentials, and URLs are logged without
//! their query (download URLs carry short-lived signatures there).

mod attestations;
mod models;
mod statuses;

use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};
use serde::de::DeserializeOwned;
use serde_json::Value;
use vouch_http::{HttpError, Redirects};

pub use attestations::{
    AttestationPage, BULK_MAX_DIGESTS, BundleOrigin, StoredAttestation, check_digest, decode_blob,
};
pub use models::{
    Artifact, CollaboratorPermission, Owner, PullEnd, PullFile, PullRequest, PullRequestRef,
    Repository, Run, RunRef, TimedRun, Workflow,
};
pub use statuses::{CommitStatus, NewStatus};
pub use vouch_http::{Download, ProgressFn, redact};

/// The REST API version vouch sends by default. It still returns attestations' inline
/// `bundle`; [`GithubClient::with_api_version`] can ask for a newer one.
pub const API_VERSION: &str = "2022-11-28";
/// The version that drops the listings' inline `bundle` (only `bundle_url` remains).
pub const API_VERSION_NO_INLINE_BUNDLE: &str = "2026-03-10";
/// GitHub's public API.
pub const DEFAULT_API_URL: &str = "https://api.github.com";
/// Pages of a listing followed at most (100 entries each).
pub(crate) const MAX_PAGES: usize = 20;

#[derive(Debug, thiserror::Error)]
pub enum GithubError {
    #[error("GET {url} failed with HTTP {status}{detail}")]
    Status {
        url: String,
        status: u16,
        detail: String,
    },
    #[error("artifact {id} has expired (HTTP 410); it can no longer be downloaded")]
    Expired { id: u64 },
    #[error("GET {url}: {reason}")]
    Protocol { url: String, reason: String },
    #[error(transparent)]
    Http(#[from] HttpError),
    #[error(
        "API URL {0}: plain http is only allowed on loopback (the token would travel in clear)"
    )]
    InsecureApi(String),
}

pub struct GithubClient {
    api: String,
    token: Option<SecretString>,
    http: vouch_http::Client,
    calls: AtomicU64,
    /// Plain-http redirect targets are accepted only on loopback (the tests' fake server).
    allow_http_loopback: bool,
    progress: Option<ProgressFn>,
    api_version: &'static str,
}

impl GithubClient {
    pub fn new(api_url: &str, token: Option<SecretString>) -> Result<Self, GithubError> {
        // Redirects are followed by hand: the token must not travel to the blob store.
        let http = vouch_http::Client::new(Redirects::Manual, Duration::from_secs(600))?;
        let api = api_url.trim_end_matches('/').to_owned();
        let allow_http_loopback = url::Url::parse(&api)
            .is_ok_and(|u| u.scheme() == "http" && vouch_http::is_loopback(&u));
        if !api.starts_with("https://") && !allow_http_loopback {
            return Err(GithubError::InsecureApi(redact(&api)));
        }
        Ok(GithubClient {
            api,
            token,
            http,
            calls: AtomicU64::new(0),
            allow_http_loopback,
            progress: None,
            api_version: API_VERSION,
        })
    }

    /// Reports artifact download progress to `f` (the library itself never prints).
    pub fn with_progress(mut self, f: ProgressFn) -> Self {
        self.progress = Some(f);
        self
    }

    /// Sends `X-GitHub-Api-Version: version` instead of [`API_VERSION`].
    pub fn with_api_version(mut self, version: &'static str) -> Self {
        self.api_version = version;
        self
    }

    /// API requests made so far, retries included (downloads from the redirect target not
    /// included).
    pub fn api_calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    /// A GET on the API host, with the token; every attempt counts as a call.
    async fn api_get(&self, url: &str) -> Result<reqwest::Response, GithubError> {
        Ok(self
            .http
            .get_with(url, |c| {
                self.calls.fetch_add(1, Ordering::Relaxed);
                let mut req = c
                    .get(url)
                    .header("Accept", "application/vnd.github+json")
                    .header("X-GitHub-Api-Version", self.api_version);
                if let Some(t) = &self.token {
                    req = req.bearer_auth(t.expose_secret());
                }
                req
            })
            .await?)
    }

    async fn get_json(&self, path: &str) -> Result<(Value, Option<String>), GithubError> {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.api)
        };
        let resp = self.api_get(&url).await?;
        let status = resp.status().as_u16();
        if !resp.status().is_success() {
            let detail = resp
                .json::<Value>()
                .await
                .ok()
                .and_then(|v| v["message"].as_str().map(|m| format!(": {m}")))
                .unwrap_or_default();
            return Err(GithubError::Status {
                url: redact(&url),
                status,
                detail,
            });
        }
        let next = resp
            .headers()
            .get("link")
            .and_then(|v| v.to_str().ok())
            .and_then(next_link);
        let value = resp.json().await.map_err(|e| GithubError::Protocol {
            url: redact(&url),
            reason: format!("invalid JSON: {e}"),
        })?;
        Ok((value, next))
    }

    /// Reads one object of the API's shape, naming the URL and the field when it is not.
    async fn get_typed<T: DeserializeOwned>(&self, path: &str) -> Result<T, GithubError> {
        let (v, _) = self.get_json(path).await?;
        parse(v, || format!("{}{path}", self.api))
    }

    /// `GET /repos/{repo}/actions/workflows/{file}`.
    pub async fn workflow(&self, repo: &str, file: &str) -> Result<Workflow, GithubError> {
        let file = file.rsplit('/').next().unwrap_or(file);
        self.get_typed(&format!("/repos/{repo}/actions/workflows/{file}"))
            .await
    }

    /// Every entry of a paginated listing (following `Link: rel="next"`), each with the URL of
    /// the page it came from. `key` names the array in the answer; `None` when the answer is
    /// the array itself.
    async fn list(
        &self,
        first: String,
        key: Option<&str>,
    ) -> Result<Vec<(Value, String)>, GithubError> {
        let mut url = first;
        let mut out = Vec::new();
        for _ in 0..MAX_PAGES {
            let (items, next) = self.page(&url, key).await?;
            out.extend(items.into_iter().map(|i| (i, url.clone())));
            match next {
                Some(n) => url = n,
                None => break,
            }
        }
        Ok(out)
    }

    /// One page of a listing: its entries, and the next page's URL when there is one.
    async fn page(
        &self,
        url: &str,
        key: Option<&str>,
    ) -> Result<(Vec<Value>, Option<String>), GithubError> {
        let (mut v, next) = self.get_json(url).await?;
        let items = match key {
            Some(k) => v[k].take(),
            None => v,
        };
        let Value::Array(items) = items else {
            return Err(GithubError::Protocol {
                url: redact(url),
                reason: format!("the answer holds no array {}", key.unwrap_or("")),
            });
        };
        match next {
            // The token goes with the request: follow only links on the API's own origin.
            Some(n) if !same_origin(&n, &self.api) => Err(GithubError::Protocol {
                url: redact(url),
                reason: format!("next page {} is not on the API host", redact(&n)),
            }),
            next => Ok((items, next)),
        }
    }

    /// All artifacts with exactly this name. Entries of other names are skipped unread; a
    /// matching entry that is malformed is an error.
    pub async fn artifacts_named(
        &self,
        repo: &str,
        name: &str,
    ) -> Result<Vec<Artifact>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/actions/artifacts?name={}&per_page=100",
            self.api,
            urlencode(name)
        );
        self.list(url, Some("artifacts"))
            .await?
            .into_iter()
            .filter(|(a, _)| a["name"] == name)
            .map(|(a, page)| parse(a, || page))
            .collect()
    }

    /// `GET /repos/{repo}/actions/runs/{id}/artifacts`: every artifact the run uploaded.
    pub async fn run_artifacts(&self, repo: &str, id: u64) -> Result<Vec<Artifact>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/actions/runs/{id}/artifacts?per_page=100",
            self.api
        );
        self.list(url, Some("artifacts"))
            .await?
            .into_iter()
            .map(|(a, page)| parse(a, || page))
            .collect()
    }

    /// `GET /repos/{repo}`: its id and default branch among others.
    pub async fn repository(&self, repo: &str) -> Result<Repository, GithubError> {
        self.get_typed(&format!("/repos/{repo}")).await
    }

    /// `GET /repos/{repo}/pulls/{n}`.
    pub async fn pull_request(&self, repo: &str, n: u64) -> Result<PullRequest, GithubError> {
        self.get_typed(&format!("/repos/{repo}/pulls/{n}")).await
    }

    /// The open pull requests whose head is `owner:branch` (`GET /repos/{repo}/pulls?head=`):
    /// how a fork PR's run is tied to its PR, since its `pull_requests` list is empty.
    pub async fn open_pulls_from(
        &self,
        repo: &str,
        head: &str,
    ) -> Result<Vec<PullRequest>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/pulls?head={}&state=open&per_page=100",
            self.api,
            urlencode(head)
        );
        self.list(url, None)
            .await?
            .into_iter()
            .map(|(p, page)| parse(p, || page))
            .collect()
    }

    /// The successful runs of workflow `workflow_id` under `event` at commit `head_sha`
    /// (`GET /repos/{repo}/actions/workflows/{id}/runs`), newest first as GitHub lists them.
    pub async fn workflow_runs(
        &self,
        repo: &str,
        workflow_id: u64,
        event: &str,
        head_sha: &str,
    ) -> Result<Vec<Run>, GithubError> {
        self.runs_of(repo, workflow_id, event, head_sha, "&status=success")
            .await
    }

    /// `GET /repos/{repo}/actions/runs/{id}`.
    pub async fn run(&self, repo: &str, id: u64) -> Result<Run, GithubError> {
        self.get_typed(&format!("/repos/{repo}/actions/runs/{id}"))
            .await
    }

    /// `GET /repos/{repo}/actions/runs/{id}`, with the time GitHub created the run.
    pub async fn timed_run(&self, repo: &str, id: u64) -> Result<TimedRun, GithubError> {
        self.get_typed(&format!("/repos/{repo}/actions/runs/{id}"))
            .await
    }

    /// Every run of workflow `workflow_id` under `event` at commit `head_sha`, whatever its
    /// status, with its creation time (`GET /repos/{repo}/actions/workflows/{id}/runs`).
    pub async fn all_workflow_runs(
        &self,
        repo: &str,
        workflow_id: u64,
        event: &str,
        head_sha: &str,
    ) -> Result<Vec<TimedRun>, GithubError> {
        self.runs_of(repo, workflow_id, event, head_sha, "").await
    }

    /// The runs of a workflow under `event` at `head_sha`, with `filter` (`&status=…` or
    /// nothing) added to the query, each parsed as `T`.
    async fn runs_of<T: DeserializeOwned>(
        &self,
        repo: &str,
        workflow_id: u64,
        event: &str,
        head_sha: &str,
        filter: &str,
    ) -> Result<Vec<T>, GithubError> {
        let url = format!(
            "{}/repos/{repo}/actions/workflows/{workflow_id}/runs?event={}&head_sha={}{filter}&per_page=100",
            self.api,
            urlencode(event),
            urlencode(head_sha)
        );
        self.list(url, Some("workflow_runs"))
            .await?
            .into_iter()
            .map(|(r, page)| parse(r, || page))
            .collect()
    }

    /// `GET /repos/{repo}/pulls/{n}/files`: the files the pull request changes. GitHub lists
    /// at most 3000; a caller that must see every file treats that many as "maybe more".
    pub async fn pull_files(&self, repo: &str, n: u64) -> Result<Vec<PullFile>, GithubError> {
        let url = format!("{}/repos/{repo}/pulls/{n}/files?per_page=100", self.api);
        self.list(url, None)
            .await?
            .into_iter()
            .map(|(f, page)| parse(f, || page))
            .collect()
    }

    /// `GET /repos/{repo}/collaborators/{user}/permission`: what `user` may do in the
    /// repository itself (organization membership alone gives no write access).
    pub async fn collaborator_permission(
        &self,
        repo: &str,
        user: &str,
    ) -> Result<CollaboratorPermission, GithubError> {
        self.get_typed(&format!(
            "/repos/{repo}/collaborators/{}/permission",
            urlencode(user)
        ))
        .await
    }

    /// Downloads artifact `id`'s zip to `dest` (which must not exist), following the redirect
    /// without credentials.
    pub async fn download_artifact(
        &self,
        repo: &str,
        id: u64,
        dest: &Path,
        max_bytes: u64,
    ) -> Result<Download, GithubError> {
        let url = format!("{}/repos/{repo}/actions/artifacts/{id}/zip", self.api);
        let resp = self.api_get(&url).await?;
        let status = resp.status().as_u16();
        if status == 410 {
            return Err(GithubError::Expired { id });
        }
        if !resp.status().is_redirection() {
            return Err(GithubError::Status {
                url: redact(&url),
                status,
                detail: " (expected a 302 to the blob store)".into(),
            });
        }
        let location = resp
            .headers()
            .get("location")
            .and_then(|v| v.to_str().ok())
            .ok_or_else(|| GithubError::Protocol {
                url: redact(&url),
                reason: "302 without Location".into(),
            })?
            .to_owned();
        let target = url::Url::parse(&location).map_err(|_| GithubError::Protocol {
            url: redact(&url),
            reason: "unparseable Location".into(),
        })?;
        if target.scheme() != "https"
            && !(self.allow_http_loopback && vouch_http::is_loopback(&target))
        {
            return Err(GithubError::Protocol {
                url: redact(&location),
                reason: "refusing a non-https download URL".into(),
            });
        }
        // No Authorization here: the blob store is another host, and the URL is its own credential.
        let resp = self.http.get(&location).await?;
        if !resp.status().is_success() {
            return Err(GithubError::Status {
                url: redact(&location),
                status: resp.status().as_u16(),
                detail: String::new(),
            });
        }
        Ok(vouch_http::save(
            resp,
            &location,
            dest,
            Some(max_bytes),
            self.progress.as_ref(),
        )
        .await?)
    }
}

pub(crate) fn parse<T: DeserializeOwned>(
    v: Value,
    url: impl FnOnce() -> String,
) -> Result<T, GithubError> {
    serde_json::from_value(v).map_err(|e| GithubError::Protocol {
        url: redact(&url()),
        reason: format!("unexpected answer: {e}"),
    })
}

fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

pub(crate) fn urlencode(s: &str) -> String {
    s.bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect()
}

/// The `rel="next"` URL of a `Link` header.
pub fn next_link(header: &str) -> Option<String> {
    header.split(',').find_map(|part| {
        let (url, params) = part.split_once(';')?;
        params.contains("rel=\"next\"").then(|| {
            url.trim()
                .trim_start_matches('<')
                .trim_end_matches('>')
                .to_owned()
        })
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn links() {
        let h = r#"<https://api.github.com/repositories/1/actions/artifacts?page=2>; rel="next", <https://api.github.com/repositories/1/actions/artifacts?page=5>; rel="last""#;
        assert_eq!(
            next_link(h).unwrap(),
            "https://api.github.com/repositories/1/actions/artifacts?page=2"
        );
        assert_eq!(next_link(r#"<https://x/?page=1>; rel="prev""#), None);
    }
}
