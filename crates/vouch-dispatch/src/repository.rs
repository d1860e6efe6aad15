//! GitHub's `repository_dispatch`: the generic way to tell a test farm that lives in a GitHub
//! repository (`POST /repos/{owner}/{repo}/dispatches`,
//! https://docs.github.com/en/rest/repos/repos#create-a-repository-dispatch-event).

use secrecy::{ExposeSecret as _, SecretString};

use crate::DispatchError;
use crate::endpoint::{Endpoint, post_once};

/// GitHub's limits on the request: the event type is 100 characters at most, the payload an
/// object of at most 10 top-level properties.
const MAX_EVENT_TYPE: usize = 100;
const MAX_PAYLOAD_PROPERTIES: usize = 10;

#[derive(Clone, Debug, PartialEq)]
pub struct RepositoryDispatch {
    repo: String,
    event_type: String,
    client_payload: serde_json::Value,
}

impl RepositoryDispatch {
    /// Checks what GitHub would refuse before anything is sent.
    pub fn new(
        repo: &str,
        event_type: &str,
        client_payload: serde_json::Value,
    ) -> Result<RepositoryDispatch, DispatchError> {
        let part_ok = |p: &str| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.chars()
                    .all(|c| c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '-'))
        };
        if !repo
            .split_once('/')
            .is_some_and(|(o, n)| part_ok(o) && part_ok(n))
        {
            return Err(DispatchError::Repo(repo.to_owned()));
        }
        if event_type.is_empty() || event_type.chars().count() > MAX_EVENT_TYPE {
            return Err(DispatchError::EventType(event_type.to_owned()));
        }
        match &client_payload {
            serde_json::Value::Object(m) if m.len() <= MAX_PAYLOAD_PROPERTIES => {}
            serde_json::Value::Object(m) => {
                return Err(DispatchError::Payload(format!(
                    "it has {} top-level properties; GitHub takes at most {MAX_PAYLOAD_PROPERTIES}",
                    m.len()
                )));
            }
            other => {
                return Err(DispatchError::Payload(format!(
                    "it is {}, expected a JSON object",
                    kind(other)
                )));
            }
        }
        Ok(RepositoryDispatch {
            repo: repo.to_owned(),
            event_type: event_type.to_owned(),
            client_payload,
        })
    }

    pub fn url(&self, api: &Endpoint) -> String {
        api.join(&format!("/repos/{}/dispatches", self.repo))
    }

    pub fn body(&self) -> Vec<u8> {
        serde_json::to_vec(&serde_json::json!({
            "event_type": self.event_type,
            "client_payload": self.client_payload,
        }))
        .expect("a JSON value always serializes")
    }

    /// Sends it once; GitHub answers 204 when the event was created.
    pub async fn send(&self, api: &Endpoint, token: &SecretString) -> Result<(), DispatchError> {
        let url = self.url(api);
        let auth = format!("Bearer {}", token.expose_secret());
        let headers = [
            ("Accept", "application/vnd.github+json"),
            ("X-GitHub-Api-Version", "2022-11-28"),
            ("Content-Type", "application/json"),
            ("Authorization", auth.as_str()),
        ];
        let reply = post_once(&url, &headers, self.body()).await?;
        if reply.status == 204 || (200..300).contains(&reply.status) {
            return Ok(());
        }
        let detail = serde_json::from_slice::<serde_json::Value>(&reply.body)
            .ok()
            .and_then(|v| v.get("message").and_then(|m| m.as_str()).map(str::to_owned))
            .map(|m| format!(": {m}"))
            .unwrap_or_default();
        Err(DispatchError::Status {
            url: vouch_http::redact(&url),
            status: reply.status,
            detail,
        })
    }
}

fn kind(v: &serde_json::Value) -> &'static str {
    match v {
        serde_json::Value::Null => "null",
        serde_json::Value::Bool(_) => "a boolean",
        serde_json::Value::Number(_) => "a number",
        serde_json::Value::String(_) => "a string",
        serde_json::Value::Array(_) => "an array",
        serde_json::Value::Object(_) => "an object",
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[tokio::test]
    async fn sends_the_documented_request_once() {
        let server = vouch_testgh::webhook::WebhookServer::start(204, "");
        let api = Endpoint::parse("--api-url", &server.url).unwrap();
        let d =
            RepositoryDispatch::new("o/farm", "vouch-build-completed", json!({"pr": 7})).unwrap();
        d.send(&api, &SecretString::from("tok")).await.unwrap();
        let seen = server.requests();
        assert_eq!(seen.len(), 1);
        assert_eq!(
            (seen[0].method.as_str(), seen[0].target.as_str()),
            ("POST", "/repos/o/farm/dispatches")
        );
        assert_eq!(seen[0].header("authorization"), Some("Bearer tok"));
        assert_eq!(seen[0].header("x-github-api-version"), Some("2022-11-28"));
        let body: serde_json::Value = serde_json::from_slice(&seen[0].body).unwrap();
        assert_eq!(
            body,
            json!({"event_type": "vouch-build-completed", "client_payload": {"pr": 7}})
        );
    }

    #[tokio::test]
    async fn a_refusal_carries_githubs_message_and_is_not_retried() {
        let server =
            vouch_testgh::webhook::WebhookServer::start(422, r#"{"message": "Invalid request."}"#);
        let api = Endpoint::parse("--api-url", &server.url).unwrap();
        let d = RepositoryDispatch::new("o/farm", "t", json!({})).unwrap();
        let err = d
            .send(&api, &SecretString::from("tok"))
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("HTTP 422: Invalid request."), "{err}");
        assert!(!err.contains("tok"), "{err}");
        assert_eq!(server.requests().len(), 1);
    }

    #[test]
    fn what_github_would_refuse_is_refused_first() {
        let eleven: serde_json::Map<String, serde_json::Value> =
            (0..11).map(|i| (format!("k{i}"), json!(i))).collect();
        let too_long = "x".repeat(101);
        let cases: Vec<(&str, &str, serde_json::Value, Option<&str>)> = vec![
            (
                "o/farm",
                "vouch-build-completed",
                json!({"pr": 1, "x": 1.5}),
                None,
            ),
            ("o/farm", "t", json!({}), None),
            (
                "o",
                "t",
                json!({}),
                Some("--repo \"o\": expected OWNER/NAME"),
            ),
            ("o/farm/x", "t", json!({}), Some("expected OWNER/NAME")),
            ("o/..", "t", json!({}), Some("expected OWNER/NAME")),
            ("o/a b", "t", json!({}), Some("expected OWNER/NAME")),
            ("o/farm", "", json!({}), Some("--event-type \"\"")),
            ("o/farm", &too_long, json!({}), Some("100 characters")),
            (
                "o/farm",
                "t",
                json!([1]),
                Some("it is an array, expected a JSON object"),
            ),
            (
                "o/farm",
                "t",
                serde_json::Value::Object(eleven),
                Some("11 top-level properties"),
            ),
        ];
        for (repo, event_type, payload, want) in cases {
            match (RepositoryDispatch::new(repo, event_type, payload), want) {
                (Ok(d), None) => {
                    let body: serde_json::Value = serde_json::from_slice(&d.body()).unwrap();
                    assert_eq!(body["event_type"], event_type);
                    assert!(body["client_payload"].is_object());
                }
                (Err(e), Some(w)) => assert!(e.to_string().contains(w), "{e}"),
                (got, want) => panic!("{repo} {event_type}: got {got:?}, want {want:?}"),
            }
        }
    }
}
