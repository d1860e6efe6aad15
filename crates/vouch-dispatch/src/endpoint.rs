//! Where a dispatch goes, and the one POST it makes there.

use std::time::Duration;

use crate::DispatchError;

/// Replies are a few hundred bytes; anything past this is not the service we expect.
const MAX_REPLY: usize = 1 << 20;
const TIMEOUT: Duration = Duration::from_secs(120);

/// A base URL: https, or plain http on loopback (the tests' servers). Kept as given, without
/// a trailing `/`, because CuPy's dispatcher appends its paths to the text.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Endpoint {
    base: String,
}

impl Endpoint {
    /// `flag` names the option in messages.
    pub fn parse(flag: &'static str, text: &str) -> Result<Endpoint, DispatchError> {
        let bad = |reason: &str| DispatchError::Endpoint {
            flag,
            // What cannot be parsed has no credentials to hide either.
            url: match url::Url::parse(text) {
                Ok(_) => vouch_http::redact(text),
                Err(_) => text.to_owned(),
            },
            reason: reason.to_owned(),
        };
        let url = url::Url::parse(text).map_err(|e| bad(&format!("not a URL ({e})")))?;
        let secure =
            url.scheme() == "https" || (url.scheme() == "http" && vouch_http::is_loopback(&url));
        if !secure {
            return Err(bad(
                "expected an https URL (plain http only on loopback): the request carries the event and its signature",
            ));
        }
        if !url.username().is_empty() || url.password().is_some() {
            return Err(bad("expected no user name or password in the URL"));
        }
        if url.query().is_some() || url.fragment().is_some() {
            return Err(bad("expected a base URL without a query or fragment"));
        }
        Ok(Endpoint {
            base: text.trim_end_matches('/').to_owned(),
        })
    }

    /// The base URL followed by `rest` (which starts with `/`).
    pub fn join(&self, rest: &str) -> String {
        format!("{}{rest}", self.base)
    }

    pub fn as_str(&self) -> &str {
        &self.base
    }
}

/// An HTTP answer: its status and body.
#[derive(Debug)]
pub struct Reply {
    pub status: u16,
    pub body: Vec<u8>,
}

/// POSTs `body` once. A webhook or a dispatch may have been acted on even when its answer was
/// lost, so nothing is retried, and a redirect is an answer, not followed.
pub async fn post_once(
    url: &str,
    headers: &[(&str, &str)],
    body: Vec<u8>,
) -> Result<Reply, DispatchError> {
    let unanswered = |source| DispatchError::Unanswered {
        url: vouch_http::redact(url),
        source,
    };
    let client =
        vouch_http::Client::new(vouch_http::Redirects::Manual, TIMEOUT).map_err(unanswered)?;
    let mut resp = client
        .send_once("POST", url, |c| {
            headers
                .iter()
                .fold(c.post(url), |req, (name, value)| req.header(*name, *value))
                .body(body)
        })
        .await
        .map_err(unanswered)?;
    let status = resp.status().as_u16();
    let mut reply = Vec::new();
    loop {
        match resp.chunk().await {
            Ok(Some(chunk)) => {
                if reply.len() + chunk.len() > MAX_REPLY {
                    return Err(DispatchError::Reply {
                        url: vouch_http::redact(url),
                        status,
                        reason: format!("the reply exceeds {MAX_REPLY} bytes"),
                    });
                }
                reply.extend_from_slice(&chunk);
            }
            Ok(None) => break,
            Err(e) => {
                return Err(DispatchError::Reply {
                    url: vouch_http::redact(url),
                    status,
                    reason: format!(
                        "the reply was cut off ({})",
                        if e.is_timeout() {
                            "timed out"
                        } else {
                            "connection error"
                        }
                    ),
                });
            }
        }
    }
    tracing::debug!(url = %vouch_http::redact(url), status, bytes = reply.len(), "reply");
    Ok(Reply {
        status,
        body: reply,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn endpoints_are_https_or_loopback() {
        let cases: &[(&str, Result<&str, &str>)] = &[
            ("https://ci.preferred.jp", Ok("https://ci.preferred.jp")),
            ("https://ci.preferred.jp/", Ok("https://ci.preferred.jp")),
            ("https://h.example/base/", Ok("https://h.example/base")),
            ("http://127.0.0.1:8080", Ok("http://127.0.0.1:8080")),
            ("http://localhost:1", Ok("http://localhost:1")),
            ("http://ci.preferred.jp", Err("expected an https URL")),
            ("ftp://h.example", Err("expected an https URL")),
            ("ci.preferred.jp", Err("not a URL")),
            ("https://u:p@h.example", Err("no user name or password")),
            ("https://h.example/?a=b", Err("without a query")),
        ];
        for (text, want) in cases {
            let got = Endpoint::parse("--flexci-uri", text);
            match (got, want) {
                (Ok(e), Ok(w)) => assert_eq!(e.as_str(), *w),
                (Err(e), Err(w)) => {
                    let e = e.to_string();
                    assert!(e.contains(w) && e.contains("--flexci-uri"), "{text}: {e}");
                    assert!(!e.contains("u:p@"), "{e}");
                }
                (got, want) => panic!("{text}: got {got:?}, want {want:?}"),
            }
        }
    }
}
