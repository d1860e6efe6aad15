//! The one HTTP client vouch downloads with (the GitHub API, artifact blobs, toolkit archives).
//!
//! - [`Client::get_with`] retries 5xx, 429 and rate-limited 403 answers, honouring
//!   `retry-after` and `x-ratelimit-reset` (capped), and connection failures.
//! - [`save`] streams a response to a fresh file, hashing as it goes, with a size cap and a
//!   check against `Content-Length`.
//! - [`block_on`] is the only place a runtime is built for a blocking caller.
//!
//! URLs are logged and reported through [`redact`]: download URLs carry short-lived signatures
//! in their query.

use std::future::Future;
use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::time::Duration;

use futures_util::StreamExt as _;

const MAX_ATTEMPTS: u32 = 4;
const MAX_WAIT: Duration = Duration::from_secs(60);

pub use vouch_core::progress::ProgressFn;

#[derive(Debug, thiserror::Error)]
pub enum HttpError {
    #[error("cannot build the HTTP client")]
    Client(#[source] reqwest::Error),
    #[error("GET {url}: gave up after {attempts} attempts: {last}")]
    Exhausted {
        url: String,
        attempts: u32,
        last: String,
    },
    #[error("GET {url} failed with HTTP {status}")]
    Status { url: String, status: u16 },
    #[error("GET {url}: {reason}")]
    Transfer { url: String, reason: String },
    #[error("{method} {url}: {reason}")]
    Unanswered {
        method: &'static str,
        url: String,
        reason: String,
    },
    #[error("writing the download to {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot start an async runtime for a blocking download")]
    Runtime(#[source] std::io::Error),
    #[error(
        "a blocking download was started from inside an async runtime (await the async call instead)"
    )]
    NestedRuntime,
}

/// What a successful [`save`] wrote.
#[derive(Debug)]
pub struct Download {
    pub bytes: u64,
    pub sha256: vouch_core::Sha256Digest,
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

/// Plain http is acceptable only here (the tests' local servers).
pub fn is_loopback(u: &url::Url) -> bool {
    match u.host() {
        Some(url::Host::Ipv4(ip)) => ip.is_loopback(),
        Some(url::Host::Ipv6(ip)) => ip.is_loopback(),
        Some(url::Host::Domain(d)) => d == "localhost",
        None => false,
    }
}

fn secure(u: &url::Url) -> bool {
    u.scheme() == "https" || is_loopback(u)
}

/// How a [`Client`] treats redirects.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Redirects {
    /// Hand 3xx answers back: the caller follows them itself (e.g. to drop credentials).
    Manual,
    /// Follow https (or loopback) targets only; a redirect to plain http elsewhere is an error.
    FollowSecure,
}

pub struct Client {
    http: reqwest::Client,
    redirects: Redirects,
}

impl Client {
    /// `timeout` bounds a whole request, body included.
    pub fn new(redirects: Redirects, timeout: Duration) -> Result<Self, HttpError> {
        let policy = match redirects {
            Redirects::Manual => reqwest::redirect::Policy::none(),
            Redirects::FollowSecure => reqwest::redirect::Policy::custom(|attempt| {
                if secure(attempt.url()) {
                    attempt.follow()
                } else {
                    attempt.stop()
                }
            }),
        };
        let http = reqwest::Client::builder()
            .redirect(policy)
            .user_agent(concat!("vouch/", env!("CARGO_PKG_VERSION")))
            .connect_timeout(Duration::from_secs(15))
            .timeout(timeout)
            .build()
            .map_err(HttpError::Client)?;
        Ok(Client { http, redirects })
    }

    /// `GET url` with retries and no extra headers.
    pub async fn get(&self, url: &str) -> Result<reqwest::Response, HttpError> {
        self.get_with(url, |c| c.get(url)).await
    }

    /// Sends `request(client)` (built afresh for each attempt, so headers and counters stay
    /// with the caller) until it is answered with anything but a retryable status. A
    /// non-retryable error status is returned, not raised: callers read GitHub's `message`.
    pub async fn get_with(
        &self,
        url: &str,
        mut request: impl FnMut(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, HttpError> {
        let mut last = String::new();
        for attempt in 0..MAX_ATTEMPTS {
            tracing::debug!(url = %redact(url), attempt, "GET");
            match request(&self.http).send().await {
                Ok(r) if r.status().is_success() || r.status().is_redirection() => {
                    return self.checked(url, r);
                }
                Ok(r) => match retry_delay(&r, attempt) {
                    Some(wait) if attempt + 1 < MAX_ATTEMPTS => {
                        tracing::info!(url = %redact(url), status = r.status().as_u16(), wait_ms = wait.as_millis() as u64, "retrying");
                        last = format!("HTTP {}", r.status().as_u16());
                        tokio::time::sleep(wait).await;
                    }
                    Some(_) => last = format!("HTTP {}", r.status().as_u16()),
                    None => return self.checked(url, r),
                },
                Err(e) => {
                    last = if e.is_timeout() {
                        "timed out".into()
                    } else {
                        "connection failed".into()
                    };
                    if attempt + 1 < MAX_ATTEMPTS {
                        tokio::time::sleep(backoff(attempt)).await;
                    }
                }
            }
        }
        Err(HttpError::Exhausted {
            url: redact(url),
            attempts: MAX_ATTEMPTS,
            last,
        })
    }

    /// Sends `request(client)` once, whatever comes back: for a request that must not be
    /// repeated (a webhook the server may have acted on before its answer was lost). The
    /// answer is returned as it is, error statuses and (with [`Redirects::Manual`]) 3xx too.
    pub async fn send_once(
        &self,
        method: &'static str,
        url: &str,
        request: impl FnOnce(&reqwest::Client) -> reqwest::RequestBuilder,
    ) -> Result<reqwest::Response, HttpError> {
        tracing::debug!(url = %redact(url), method, "sending once");
        request(&self.http)
            .send()
            .await
            .map_err(|e| HttpError::Unanswered {
                method,
                url: redact(url),
                reason: if e.is_builder() {
                    "the request could not be built".into()
                } else if e.is_timeout() {
                    "timed out".into()
                } else if e.is_connect() {
                    "connection failed".into()
                } else {
                    "no answer (the connection broke)".into()
                },
            })
    }

    /// Where redirects were followed, the final answer must be a success over https.
    fn checked(&self, url: &str, r: reqwest::Response) -> Result<reqwest::Response, HttpError> {
        if self.redirects == Redirects::Manual {
            return Ok(r);
        }
        if !secure(r.url()) {
            return Err(HttpError::Transfer {
                url: redact(url),
                reason: "served over plain http (https is required off loopback)".into(),
            });
        }
        if !r.status().is_success() {
            return Err(HttpError::Status {
                url: redact(url),
                status: r.status().as_u16(),
            });
        }
        Ok(r)
    }
}

fn backoff(attempt: u32) -> Duration {
    Duration::from_millis(250 * 2u64.pow(attempt))
}

/// How long to wait before retrying `resp`, or `None` when it must not be retried.
fn retry_delay(resp: &reqwest::Response, attempt: u32) -> Option<Duration> {
    let header = |name: &str| {
        resp.headers()
            .get(name)
            .and_then(|v| v.to_str().ok())
            .map(str::to_owned)
    };
    delay_for(
        resp.status().as_u16(),
        header("retry-after").as_deref(),
        header("x-ratelimit-remaining").as_deref(),
        header("x-ratelimit-reset").as_deref(),
        attempt,
    )
}

fn delay_for(
    status: u16,
    retry_after: Option<&str>,
    remaining: Option<&str>,
    reset: Option<&str>,
    attempt: u32,
) -> Option<Duration> {
    match status {
        429 | 403 => {
            if let Some(secs) = retry_after.and_then(|v| v.parse::<u64>().ok()) {
                return Some(Duration::from_secs(secs).min(MAX_WAIT));
            }
            if remaining == Some("0") {
                let reset = reset.and_then(|v| v.parse::<u64>().ok())?;
                let now = std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .ok()?
                    .as_secs();
                return Some(Duration::from_secs(reset.saturating_sub(now) + 1).min(MAX_WAIT));
            }
            (status == 429).then_some(backoff(attempt))
        }
        500..=599 => Some(backoff(attempt)),
        _ => None,
    }
}

/// Streams `resp`'s body into `dest`, which must not exist yet (the caller names a fresh path
/// in its own directory, so nothing already there is ever opened). `url` is for messages.
pub async fn save(
    resp: reqwest::Response,
    url: &str,
    dest: &Path,
    max_bytes: Option<u64>,
    progress: Option<&ProgressFn>,
) -> Result<Download, HttpError> {
    let transfer = |reason: String| HttpError::Transfer {
        url: redact(url),
        reason,
    };
    let io = |source| HttpError::Io {
        path: dest.to_owned(),
        source,
    };
    let expected = resp.content_length();
    let mut file = std::fs::File::create_new(dest).map_err(io)?;
    let mut hasher = vouch_core::Sha256Hasher::new();
    let mut bytes = 0u64;
    let mut stream = resp.bytes_stream();
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(|e| {
            transfer(format!(
                "download interrupted: {}",
                if e.is_timeout() {
                    "timed out"
                } else {
                    "connection error"
                }
            ))
        })?;
        bytes += chunk.len() as u64;
        if let Some(max) = max_bytes
            && bytes > max
        {
            return Err(transfer(format!("download exceeds {max} bytes")));
        }
        hasher.update(&chunk);
        file.write_all(&chunk).map_err(io)?;
        if let Some(report) = progress {
            report(bytes, expected);
        }
    }
    // A short body is caught here, before a digest check would call it a mismatch.
    if let Some(n) = expected
        && n != bytes
    {
        return Err(transfer(format!(
            "truncated download: {bytes} of {n} bytes"
        )));
    }
    file.sync_all().map_err(io)?;
    Ok(Download {
        bytes,
        sha256: hasher.finish(),
    })
}

/// Runs `fut` to completion for a blocking caller. This is the one place a library builds a
/// runtime; async callers await the future on their own.
pub fn block_on<F: Future>(fut: F) -> Result<F::Output, HttpError> {
    if tokio::runtime::Handle::try_current().is_ok() {
        // Blocking a runtime thread on a nested runtime would panic or deadlock.
        return Err(HttpError::NestedRuntime);
    }
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(HttpError::Runtime)?;
    Ok(rt.block_on(fut))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn redaction_drops_query_and_userinfo() {
        assert_eq!(
            redact("https://blob.example/x.zip?sig=SECRET&se=1"),
            "https://blob.example/x.zip"
        );
        assert_eq!(redact("https://user:pw@h/p"), "https://h/p");
        assert_eq!(redact("not a url"), "<unparseable url>");
    }

    #[test]
    fn only_https_or_loopback_is_secure() {
        for (url, ok) in [
            ("https://example.com/a", true),
            ("http://127.0.0.1:8080/a", true),
            ("http://localhost/a", true),
            ("http://[::1]/a", true),
            ("http://0.0.0.0/a", false),
            ("http://example.com/a", false),
        ] {
            assert_eq!(secure(&url::Url::parse(url).unwrap()), ok, "{url}");
        }
    }

    #[test]
    fn retry_decisions() {
        let far = (std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_secs()
            + 3600)
            .to_string();
        // (status, retry-after, x-ratelimit-remaining, x-ratelimit-reset, wait)
        type Header<'a> = Option<&'a str>;
        type Case<'a> = (u16, Header<'a>, Header<'a>, Header<'a>, Option<Duration>);
        let cases: &[Case] = &[
            (200, None, None, None, None),
            (404, None, None, None, None),
            (410, None, None, None, None),
            (401, None, None, None, None),
            (500, None, None, None, Some(backoff(0))),
            (503, None, None, None, Some(backoff(0))),
            (429, None, None, None, Some(backoff(0))),
            (429, Some("2"), None, None, Some(Duration::from_secs(2))),
            (403, Some("7"), None, None, Some(Duration::from_secs(7))),
            (403, Some("9999"), None, None, Some(MAX_WAIT)),
            // A plain 403 is a refusal, not a rate limit.
            (403, None, None, None, None),
            (403, None, Some("0"), Some(&far), Some(MAX_WAIT)),
            (403, None, Some("0"), None, None),
        ];
        for &(status, after, remaining, reset, want) in cases {
            assert_eq!(
                delay_for(status, after, remaining, reset, 0),
                want,
                "{status} {after:?} {remaining:?}"
            );
        }
        assert_eq!(
            delay_for(500, None, None, None, 2),
            Some(Duration::from_secs(1))
        );
    }

    #[test]
    fn block_on_refuses_to_nest() {
        let inner = block_on(async { block_on(async { 1 }) }).unwrap();
        assert!(matches!(inner, Err(HttpError::NestedRuntime)));
        assert_eq!(block_on(async { 2 }).unwrap(), 2);
    }
}
