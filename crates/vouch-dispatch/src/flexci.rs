//! FlexCI's webhook, as CuPy's `flexci_dispatcher.py` sends it: the recorded GitHub event
//! re-serialised by Python's `json.dumps`, POSTed to `/x/github_webhook` with the projects to
//! run, and signed with the webhook secret the way GitHub signs its own deliveries.

use aws_lc_rs::hmac;
use secrecy::{ExposeSecret as _, SecretString};

use crate::DispatchError;
use crate::endpoint::{Endpoint, Reply, post_once};
use crate::pyjson::PyValue;
use crate::targets::Event;

/// The request, ready to send (or to show, for a dry run).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WebhookRequest {
    pub url: String,
    /// In the order CuPy's dispatcher sets them. The signatures are absent without a secret.
    pub headers: Vec<(&'static str, String)>,
    pub body: Vec<u8>,
}

/// A FlexCI job the webhook started.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Job {
    pub id: String,
    /// Its page: `<base>/r/job/<id>`.
    pub url: String,
}

impl WebhookRequest {
    /// `projects` are dispatched together, in one request, as FlexCI expects them.
    pub fn new(
        endpoint: &Endpoint,
        event: Event,
        payload: &PyValue,
        projects: &[String],
        secret: Option<&SecretString>,
    ) -> WebhookRequest {
        let body = payload.dumps().into_bytes();
        // `%2B` is `+`: the rule is the regular expression `<event>:.+`.
        let url = endpoint.join(&format!(
            "/x/github_webhook?project={}&rule={}:.%2B&quiet=true",
            projects.join(","),
            event.as_str()
        ));
        let mut headers = vec![
            ("User-Agent", "FlexCI-Dispatcher".to_owned()),
            ("Content-Type", "application/json".to_owned()),
            ("X-GitHub-Event", event.as_str().to_owned()),
        ];
        if let Some(secret) = secret {
            let (sha1, sha256) = signatures(secret.expose_secret().as_bytes(), &body);
            headers.push(("X-Hub-Signature", sha1));
            headers.push(("X-Hub-Signature-256", sha256));
        }
        WebhookRequest { url, headers, body }
    }

    /// Sends the webhook once and reads FlexCI's answer: `{"job_ids": [{"id": ...}, ...]}`
    /// when it started jobs, `{"message": ...}` when it did not.
    pub async fn send(&self, endpoint: &Endpoint) -> Result<Vec<Job>, DispatchError> {
        let headers: Vec<(&str, &str)> =
            self.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        let reply = post_once(&self.url, &headers, self.body.clone()).await?;
        jobs_from(endpoint, &self.url, reply)
    }
}

/// `X-Hub-Signature` and `X-Hub-Signature-256`: HMAC-SHA1 and HMAC-SHA256 of the body under
/// the secret, as `sha1=<hex>` and `sha256=<hex>` in lowercase. FlexCI may check either;
/// SHA-1 is kept because the dispatcher sends it.
pub fn signatures(secret: &[u8], body: &[u8]) -> (String, String) {
    let sign = |algorithm| hex::encode(hmac::sign(&hmac::Key::new(algorithm, secret), body));
    (
        format!("sha1={}", sign(hmac::HMAC_SHA1_FOR_LEGACY_USE_ONLY)),
        format!("sha256={}", sign(hmac::HMAC_SHA256)),
    )
}

fn jobs_from(endpoint: &Endpoint, url: &str, reply: Reply) -> Result<Vec<Job>, DispatchError> {
    let url = vouch_http::redact(url);
    let json: Option<serde_json::Value> = serde_json::from_slice(&reply.body).ok();
    let message = json
        .as_ref()
        .and_then(|v| v.get("message"))
        .map(|m| m.as_str().map_or_else(|| m.to_string(), str::to_owned));
    if !(200..300).contains(&reply.status) {
        return Err(DispatchError::Status {
            url,
            status: reply.status,
            detail: message.map(|m| format!(": {m}")).unwrap_or_default(),
        });
    }
    let unexpected = |reason: String| DispatchError::Reply {
        url: url.clone(),
        status: reply.status,
        reason,
    };
    let Some(json) = json else {
        return Err(unexpected(
            "the reply is not JSON (expected {\"job_ids\": [...]} or {\"message\": ...})".into(),
        ));
    };
    // The dispatcher looks for job_ids first, then message.
    if let Some(ids) = json.get("job_ids") {
        let ids = ids
            .as_array()
            .ok_or_else(|| unexpected(format!("job_ids is {ids}, expected a list")))?;
        return ids
            .iter()
            .map(|job| {
                let id = match job.get("id") {
                    Some(serde_json::Value::String(s)) => s.clone(),
                    Some(n @ serde_json::Value::Number(_)) => n.to_string(),
                    _ => return Err(unexpected(format!("job {job} has no id"))),
                };
                Ok(Job {
                    url: endpoint.join(&format!("/r/job/{id}")),
                    id,
                })
            })
            .collect();
    }
    match message {
        Some(message) => Err(DispatchError::Refused(message)),
        None => Err(unexpected(format!(
            "unexpected reply {json} (expected {{\"job_ids\": [...]}} or {{\"message\": ...}})"
        ))),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DispatchError;

    fn endpoint() -> Endpoint {
        Endpoint::parse("--flexci-uri", "https://ci.example").unwrap()
    }

    /// RFC 2202 and RFC 4231 test case 2 ("Jefe"), and GitHub's documented example delivery
    /// ("It's a Secret to Everybody" over "Hello, World!").
    #[test]
    fn signatures_are_the_standard_hmacs() {
        let (sha1, sha256) = signatures(b"Jefe", b"what do ya want for nothing?");
        assert_eq!(sha1, "sha1=effcdf6ae5eb2fa2d27416d5f184df9c259a7c79");
        assert_eq!(
            sha256,
            "sha256=5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"
        );
        let (_, github) = signatures(b"It's a Secret to Everybody", b"Hello, World!");
        assert_eq!(
            github,
            "sha256=757107ea0eb2509fc211221cce984b8a37570b6d7586c22c46f4379c8b043e17"
        );
    }

    #[test]
    fn request_line_and_headers() {
        let payload = PyValue::parse(br#"{"ref": "refs/heads/main", "after": "ab"}"#).unwrap();
        let secret = SecretString::from("s3cret");
        let projects = vec![
            "cupy.linux.cuda130".to_owned(),
            "cupy.win.cuda130".to_owned(),
        ];
        let req = WebhookRequest::new(&endpoint(), Event::Push, &payload, &projects, Some(&secret));
        assert_eq!(
            req.url,
            "https://ci.example/x/github_webhook?project=cupy.linux.cuda130,cupy.win.cuda130&rule=push:.%2B&quiet=true"
        );
        assert_eq!(req.body, br#"{"ref": "refs/heads/main", "after": "ab"}"#);
        let (sha1, sha256) = signatures(b"s3cret", &req.body);
        let names: Vec<(&str, &str)> = req.headers.iter().map(|(n, v)| (*n, v.as_str())).collect();
        assert_eq!(
            names,
            [
                ("User-Agent", "FlexCI-Dispatcher"),
                ("Content-Type", "application/json"),
                ("X-GitHub-Event", "push"),
                ("X-Hub-Signature", sha1.as_str()),
                ("X-Hub-Signature-256", sha256.as_str()),
            ]
        );
        let unsigned =
            WebhookRequest::new(&endpoint(), Event::IssueComment, &payload, &projects, None);
        assert_eq!(unsigned.headers.len(), 3);
        assert!(unsigned.url.contains("&rule=issue_comment:.%2B&"));
    }

    fn fixture(name: &str) -> std::path::PathBuf {
        std::path::Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("tests/fixtures")
            .join(name)
    }

    /// The committed oracle (CPython's `json.dumps` and `hmac` over the fixture event, see
    /// tests/fixtures/oracle.py) is what vouch makes; and CPython, where it exists, still
    /// makes the committed bytes.
    #[test]
    fn fixture_body_and_signatures_are_pythons() {
        let event = crate::load_event(&fixture("event.json")).unwrap();
        let body = event.dumps().into_bytes();
        let expected = std::fs::read(fixture("expected-body.json")).unwrap();
        assert!(
            body == expected,
            "body differs from the oracle:\n{}",
            String::from_utf8_lossy(&body)
        );
        let secret = std::fs::read_to_string(fixture("secret.txt")).unwrap();
        let secret = secret.strip_suffix('\n').unwrap();
        let (sha1, sha256) = signatures(secret.as_bytes(), &body);
        let committed = std::fs::read_to_string(fixture("expected-signatures.txt")).unwrap();
        assert_eq!(format!("{sha1}\n{sha256}\n"), committed);

        let dir = tempfile::tempdir().unwrap();
        let out = dir.path().join("body");
        let script = std::fs::read_to_string(fixture("oracle.py")).unwrap();
        let wrapper = format!(
            "import sys\nsys.argv = ['oracle.py', {:?}, {:?}, {:?}]\n{script}",
            fixture("event.json"),
            fixture("secret.txt"),
            out
        );
        if let Some(printed) = crate::testutil::python(&wrapper, b"") {
            assert_eq!(printed, committed, "CPython's signatures moved");
            assert!(
                std::fs::read(&out).unwrap() == expected,
                "CPython's body moved"
            );
        }
    }

    /// The request as it reaches a server: the recorder plays FlexCI.
    #[tokio::test]
    async fn send_reaches_flexci_and_reads_its_jobs() {
        let server =
            vouch_testgh::webhook::WebhookServer::start(200, r#"{"job_ids": [{"id": 7}]}"#);
        let endpoint = Endpoint::parse("--flexci-uri", &server.url).unwrap();
        let payload = PyValue::parse(br#"{"after": "\u00e9"}"#).unwrap();
        let secret = SecretString::from("k");
        let req = WebhookRequest::new(
            &endpoint,
            Event::Push,
            &payload,
            &["p1".into(), "p2".into()],
            Some(&secret),
        );
        let jobs = req.send(&endpoint).await.unwrap();
        assert_eq!(
            jobs,
            [Job {
                id: "7".into(),
                url: format!("{}/r/job/7", server.url)
            }]
        );
        let seen = server.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(seen[0].method, "POST");
        assert_eq!(
            seen[0].target,
            "/x/github_webhook?project=p1,p2&rule=push:.%2B&quiet=true"
        );
        assert_eq!(seen[0].body, br#"{"after": "\u00e9"}"#);
        for (name, value) in &req.headers {
            assert_eq!(seen[0].header(name), Some(value.as_str()), "{name}");
        }
    }

    #[tokio::test]
    async fn a_silent_endpoint_is_unanswered() {
        // A port nobody listens on any more.
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let endpoint =
            Endpoint::parse("--flexci-uri", &format!("http://127.0.0.1:{port}")).unwrap();
        let req = WebhookRequest::new(
            &endpoint,
            Event::Push,
            &PyValue::Object(vec![]),
            &["p".into()],
            None,
        );
        let err = req.send(&endpoint).await.unwrap_err();
        assert!(matches!(err, DispatchError::Unanswered { .. }), "{err}");
    }

    #[test]
    fn replies() {
        // (status, body, the job ids or what the error says)
        type Case<'a> = (u16, &'a str, Result<&'a [&'a str], &'a str>);
        let cases: &[Case] = &[
            (
                200,
                r#"{"job_ids": [{"id": 1}, {"id": "x2"}]}"#,
                Ok(&["1", "x2"]),
            ),
            (200, r#"{"job_ids": []}"#, Ok(&[])),
            (
                200,
                r#"{"job_ids": [{"id": 3}], "message": "m"}"#,
                Ok(&["3"]),
            ),
            (
                200,
                r#"{"message": "project not found"}"#,
                Err("FlexCI refused the webhook: project not found"),
            ),
            (
                200,
                r#"{"other": 1}"#,
                Err("unexpected reply {\"other\":1}"),
            ),
            (200, "<html>", Err("the reply is not JSON")),
            (200, r#"{"job_ids": {"id": 1}}"#, Err("expected a list")),
            (200, r#"{"job_ids": [{"name": 1}]}"#, Err("has no id")),
            (
                403,
                r#"{"message": "bad signature"}"#,
                Err("HTTP 403: bad signature"),
            ),
            (502, "", Err("HTTP 502")),
            (302, "", Err("HTTP 302")),
        ];
        for (status, body, want) in cases {
            let reply = Reply {
                status: *status,
                body: body.as_bytes().to_vec(),
            };
            let got = jobs_from(
                &endpoint(),
                "https://ci.example/x/github_webhook?project=p",
                reply,
            );
            match (got, want) {
                (Ok(jobs), Ok(ids)) => {
                    let got: Vec<&str> = jobs.iter().map(|j| j.id.as_str()).collect();
                    assert_eq!(got, *ids);
                    for j in &jobs {
                        assert_eq!(j.url, format!("https://ci.example/r/job/{}", j.id));
                    }
                }
                (Err(e), Err(w)) => {
                    let e = e.to_string();
                    assert!(e.contains(w), "{body}: {e}");
                    // The query (the project list) is left out of messages, as everywhere.
                    assert!(!e.contains("project=p"), "{e}");
                }
                (got, want) => panic!("{status} {body}: got {got:?}, want {want:?}"),
            }
        }
    }
}
