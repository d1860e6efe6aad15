//! A small async GitHub REST client for what a consumer of build artifacts needs: resolve a
//! workflow file to its id, list artifacts by exact name, get a run, download an artifact by id.
//!
//! The token never leaves this crate except as the `Authorization` header of requests to the
//! API host: redirects are followed by hand, without credentials, and URLs are logged without
//! their query (download URLs carry short-lived signatures there).

use std::io::Write as _;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

use futures_util::StreamExt as _;
use secrecy::{ExposeSecret as _, SecretString};
use serde_json::Value;

pub const API_VERSION: &str = "2022-11-28";
const MAX_ATTEMPTS: u32 = 4;
const MAX_WAIT: Duration = Duration::from_secs(60);

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
    #[error("GET {url}: gave up after {attempts} attempts: {last}")]
    Exhausted {
        url: String,
        attempts: u32,
        last: String,
    },
    #[error("GET {url}: {reason}")]
    Protocol { url: String, reason: String },
    #[error("writing the download to {path:?}")]
    Io {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error(
        "API URL {0}: plain http is only allowed on loopback (the token would travel in clear)"
    )]
    InsecureApi(String),
}

/// A URL safe to log: no query string, no userinfo.
pub fn redact(url: &str) -> String {
    match url::Url::parse(url) {
        Ok(mut u) => {
            u.set_query(None);
            let _ = u.set_username("");
            let _ = u.set_password(None);
            u.to_string()
        }
        Err(_) => "<unparseable url>".into(),
    }
}

pub struct GithubClient {
    api: String,
    token: Option<SecretString>,
    http: reqwest::Client,
    calls: AtomicU64,
    /// Plain-http redirect targets are accepted only on loopback (the tests' fake server).
    allow_http_loopback: bool,
    /// Called as download bytes arrive (bytes so far, expected total), e.g. to draw a bar.
    progress: Option<ProgressFn>,
}

/// `(bytes so far, expected total)`.
pub type ProgressFn = std::sync::Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// What a successful download produced.
#[derive(Debug)]
pub struct Download {
    pub bytes: u64,
    pub sha256: vouch_core::Sha256Digest,
}

fn is_loopback(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

impl GithubClient {
    pub fn new(api_url: &str, token: Option<SecretString>) -> Result<Self, GithubError> {
        let http = reqwest::Client::builder()
            .redirect(reqwest::redirect::Policy::none())
            .user_agent(concat!("vouch/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(15))
            .timeout(Duration::from_secs(600))
            .build()
            .map_err(GithubError::Client)?;
        let api = api_url.trim_end_matches('/').to_owned();
        let allow_http_loopback =
            url::Url::parse(&api).is_ok_and(|u| u.scheme() == "http" && is_loopback(&u));
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
        })
    }

    /// Reports artifact download progress to `f` (the library itself never prints).
    pub fn with_progress(mut self, f: ProgressFn) -> Self {
        self.progress = Some(f);
        self
    }

    /// API requests made so far (downloads from the redirect target not included).
    pub fn api_calls(&self) -> u64 {
        self.calls.load(Ordering::Relaxed)
    }

    fn api_request(&self, url: &str) -> reqwest::RequestBuilder {
        let mut req = self
            .http
            .get(url)
            .header("Accept", "application/vnd.github+json")
            .header("X-GitHub-Api-Version", API_VERSION);
        if let Some(t) = &self.token {
            req = req.bearer_auth(t.expose_secret());
        }
        req
    }

    /// How long to wait before retrying `resp`, or `None` when it must not be retried.
    fn retry_delay(resp: &reqwest::Response, attempt: u32) -> Option<Duration> {
        let status = resp.status().as_u16();
        let header = |name: &str| {
            resp.headers()
                .get(name)
                .and_then(|v| v.to_str().ok())
                .map(str::to_owned)
        };
        let backoff = Duration::from_millis(250 * 2u64.pow(attempt));
        match status {
            429 | 403 => {
                if let Some(secs) = header("retry-after").and_then(|v| v.parse::<u64>().ok()) {
                    return Some(Duration::from_secs(secs).min(MAX_WAIT));
                }
                if header("x-ratelimit-remaining").as_deref() == Some("0") {
                    let reset = header("x-ratelimit-reset").and_then(|v| v.parse::<u64>().ok())?;
                    let now = std::time::SystemTime::now()
                        .duration_since(std::time::UNIX_EPOCH)
                        .ok()?
                        .as_secs();
                    return Some(Duration::from_secs(reset.saturating_sub(now) + 1).min(MAX_WAIT));
                }
                (status == 429).then_some(backoff)
            }
            500..=599 => Some(backoff),
            _ => None,
        }
    }

    async fn get(&self, url: &str, count_as_api: bool) -> Result<reqwest::Response, GithubError> {
        let mut last = String::new();
        for attempt in 0..MAX_ATTEMPTS {
            if count_as_api {
                self.calls.fetch_add(1, Ordering::Relaxed);
            }
            tracing::debug!(url = %redact(url), attempt, "GET");
            let resp = if count_as_api {
                self.api_request(url)
            } else {
                self.http.get(url)
            };
            match resp.send().await {
                Ok(r)
                    if r.status().is_success()
                        || r.status().is_redirection()
                        || r.status().as_u16() == 410
                        || r.status().as_u16() == 404 =>
                {
                    return Ok(r);
                }
                Ok(r) => match Self::retry_delay(&r, attempt) {
                    Some(wait) if attempt + 1 < MAX_ATTEMPTS => {
                        tracing::info!(url = %redact(url), status = r.status().as_u16(), wait_ms = wait.as_millis() as u64, "retrying");
                        last = format!("HTTP {}", r.status().as_u16());
                        tokio::time::sleep(wait).await;
                    }
                    Some(_) => last = format!("HTTP {}", r.status().as_u16()),
                    None => return Ok(r),
                },
                Err(e) => {
                    last = if e.is_timeout() {
                        "timed out".into()
                    } else {
                        "connection failed".into()
                    };
                    tokio::time::sleep(Duration::from_millis(250 * 2u64.pow(attempt))).await;
                }
            }
        }
        Err(GithubError::Exhausted {
            url: redact(url),
            attempts: MAX_ATTEMPTS,
            last,
        })
    }

    async fn get_json(&self, path: &str) -> Result<(Value, Option<String>), GithubError> {
        let url = if path.starts_with("http") {
            path.to_owned()
        } else {
            format!("{}{path}", self.api)
        };
        let resp = self.get(&url, true).await?;
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

    /// `GET /repos/{repo}/actions/workflows/{file}` -> the workflow's id.
    pub async fn workflow_id(&self, repo: &str, file: &str) -> Result<u64, GithubError> {
        let file = file.rsplit('/').next().unwrap_or(file);
        let path = format!("/repos/{repo}/actions/workflows/{file}");
        let (v, _) = self.get_json(&path).await?;
        v["id"].as_u64().ok_or_else(|| GithubError::Protocol {
            url: path,
            reason: "no numeric `id`".into(),
        })
    }

    /// All artifacts with exactly this name (following `Link: rel="next"`).
    pub async fn artifacts_named(&self, repo: &str, name: &str) -> Result<Vec<Value>, GithubError> {
        let mut url = format!(
            "{}/repos/{repo}/actions/artifacts?name={}&per_page=100",
            self.api,
            urlencode(name)
        );
        let mut out = Vec::new();
        for _ in 0..20 {
            let (v, next) = self.get_json(&url).await?;
            out.extend(
                v["artifacts"]
                    .as_array()
                    .cloned()
                    .unwrap_or_default()
                    .into_iter()
                    .filter(|a| a["name"] == name),
            );
            match next {
                // The token goes with the request: follow only links on the API's own origin.
                Some(n) if same_origin(&n, &self.api) => url = n,
                Some(n) => {
                    return Err(GithubError::Protocol {
                        url: redact(&url),
                        reason: format!("next page {} is not on the API host", redact(&n)),
                    });
                }
                None => break,
            }
        }
        Ok(out)
    }

    pub async fn run(&self, repo: &str, id: u64) -> Result<Value, GithubError> {
        Ok(self
            .get_json(&format!("/repos/{repo}/actions/runs/{id}"))
            .await?
            .0)
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
        let resp = self.get(&url, true).await?;
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
        if target.scheme() != "https" && !(self.allow_http_loopback && is_loopback(&target)) {
            return Err(GithubError::Protocol {
                url: redact(&location),
                reason: "refusing a non-https download URL".into(),
            });
        }
        // No Authorization here: the blob store is another host, and the URL is its own credential.
        let resp = self.get(&location, false).await?;
        if !resp.status().is_success() {
            return Err(GithubError::Status {
                url: redact(&location),
                status: resp.status().as_u16(),
                detail: String::new(),
            });
        }
        let expected = resp.content_length();
        let io = |source| GithubError::Io {
            path: dest.to_owned(),
            source,
        };
        // The caller names a fresh path in its own directory: never open what is already there.
        let mut file = std::fs::File::create_new(dest).map_err(io)?;
        let mut hasher = vouch_core::Sha256Hasher::new();
        let mut bytes = 0u64;
        let mut stream = resp.bytes_stream();
        while let Some(chunk) = stream.next().await {
            let chunk = chunk.map_err(|e| GithubError::Protocol {
                url: redact(&location),
                reason: format!(
                    "download interrupted: {}",
                    if e.is_timeout() {
                        "timed out"
                    } else {
                        "connection error"
                    }
                ),
            })?;
            bytes += chunk.len() as u64;
            if bytes > max_bytes {
                return Err(GithubError::Protocol {
                    url: redact(&location),
                    reason: format!("download exceeds {max_bytes} bytes"),
                });
            }
            hasher.update(&chunk);
            file.write_all(&chunk).map_err(io)?;
            if let Some(report) = &self.progress {
                report(bytes, expected);
            }
        }
        if let Some(n) = expected
            && n != bytes
        {
            return Err(GithubError::Protocol {
                url: redact(&location),
                reason: format!("truncated download: {bytes} of {n} bytes"),
            });
        }
        file.sync_all().map_err(io)?;
        Ok(Download {
            bytes,
            sha256: hasher.finish(),
        })
    }
}

fn same_origin(a: &str, b: &str) -> bool {
    match (url::Url::parse(a), url::Url::parse(b)) {
        (Ok(a), Ok(b)) => a.origin() == b.origin(),
        _ => false,
    }
}

fn urlencode(s: &str) -> String {
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
    fn links_and_redaction() {
        let h = r#"<https://api.github.com/repositories/1/actions/artifacts?page=2>; rel="next", <https://api.github.com/repositories/1/actions/artifacts?page=5>; rel="last""#;
        assert_eq!(
            next_link(h).unwrap(),
            "https://api.github.com/repositories/1/actions/artifacts?page=2"
        );
        assert_eq!(next_link(r#"<https://x/?page=1>; rel="prev""#), None);
        assert_eq!(
            redact("https://blob.example/x.zip?sig=SECRET&se=1"),
            "https://blob.example/x.zip"
        );
        assert_eq!(redact("https://user:pw@h/p"), "https://h/p");
    }
}
