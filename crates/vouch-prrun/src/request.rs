//! The `/test` request record: `request.json` (and the raw `event.json` next to it), uploaded
//! by a default-branch `issue_comment` run of the trigger workflow as artifact
//! `vouch-request-<pr>-<head_sha>`. What makes it trustworthy is who uploaded it (checked in
//! `pin` through the API), not what it says; here it is only read and checked for shape.

use serde::{Deserialize, Serialize};

/// `request.json`'s schema.
pub const REQUEST_SCHEMA: &str = "https://vouch.build/test-request/v1";

/// The artifact a request for PR `pr` at `head_sha` is uploaded as.
pub fn request_artifact_name(pr: u64, head_sha: &str) -> String {
    format!("vouch-request-{pr}-{head_sha}")
}

/// `request.json`: the PR head and base as `GET pulls/N` gave them when the comment came.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct TestRequest {
    pub schema: String,
    /// `owner/name` of the base repository.
    pub repository: String,
    pub pr: u64,
    pub head_sha: String,
    /// `owner/name` the head came from.
    pub head_repository: String,
    pub base_ref: String,
    pub base_sha: String,
    pub comment_id: u64,
    pub author: String,
    pub author_association: String,
    /// The run that recorded it (the artifact's own run, by the API).
    pub recorded_by_run: u64,
}

/// The two files of a request artifact, as downloaded.
#[derive(Clone, Debug)]
pub struct RequestFiles {
    pub request: TestRequest,
    /// `request.json`'s bytes, handed on unchanged.
    pub request_json: Vec<u8>,
    /// `event.json`'s bytes: the raw `issue_comment` event, for FlexCI.
    pub event_json: Vec<u8>,
}

impl TestRequest {
    /// Parses `request.json`, refusing another schema and commits that are not full SHAs.
    pub fn parse(bytes: &[u8]) -> Result<TestRequest, String> {
        let r: TestRequest = serde_json::from_slice(bytes)
            .map_err(|e| format!("request.json is not a test request: {e}"))?;
        if r.schema != REQUEST_SCHEMA {
            return Err(format!(
                "request.json's schema is {:?}, expected {REQUEST_SCHEMA:?}",
                r.schema
            ));
        }
        for (field, sha) in [("head_sha", &r.head_sha), ("base_sha", &r.base_sha)] {
            if !is_commit_sha(sha) {
                return Err(format!(
                    "request.json's {field} {sha:?} is not a full commit SHA (40 lowercase hex digits)"
                ));
            }
        }
        Ok(r)
    }
}

pub(crate) fn is_commit_sha(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

#[cfg(test)]
mod tests {
    use serde_json::json;

    use super::*;

    fn request() -> serde_json::Value {
        json!({
            "schema": REQUEST_SCHEMA, "repository": "o/r", "pr": 7,
            "head_sha": "1".repeat(40), "head_repository": "fork/r", "base_ref": "main",
            "base_sha": "5".repeat(40), "comment_id": 99, "author": "m",
            "author_association": "MEMBER", "recorded_by_run": 650,
        })
    }

    #[test]
    fn parses_the_contract_shape() {
        let r = TestRequest::parse(request().to_string().as_bytes()).unwrap();
        assert_eq!((r.pr, r.recorded_by_run), (7, 650));
        assert_eq!(
            request_artifact_name(7, &r.head_sha),
            format!("vouch-request-7-{}", "1".repeat(40))
        );
    }

    #[test]
    fn refuses_what_is_not_a_request() {
        type Edit = fn(&mut serde_json::Value);
        let cases: &[(Edit, &str)] = &[
            (
                |v| v["schema"] = json!("https://vouch.build/test-request/v0"),
                "schema is \"https://vouch.build/test-request/v0\"",
            ),
            (
                |v| v["head_sha"] = json!("1111111"),
                "head_sha \"1111111\" is not a full commit SHA",
            ),
            (|v| v["base_sha"] = json!("A".repeat(40)), "base_sha"),
            (
                |v| v["pr"] = json!("7"),
                "request.json is not a test request",
            ),
            (
                |v| {
                    v.as_object_mut().unwrap().remove("recorded_by_run");
                },
                "missing field `recorded_by_run`",
            ),
        ];
        for (edit, words) in cases {
            let mut v = request();
            edit(&mut v);
            let e = TestRequest::parse(v.to_string().as_bytes()).unwrap_err();
            assert!(e.contains(words), "{e}");
        }
    }
}
