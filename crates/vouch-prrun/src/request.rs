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

/// The fewest hex digits a `/test` line may name its commit with. GitHub shows 7, but a pull
/// request's author chooses their commits' contents, so they can make a second commit whose
/// SHA starts with the same digits as the one a maintainer reviewed: about 2^(4n) tries for
/// n digits, under a second for 7 and about a day on one GPU for 12. 16 digits (2^64 tries)
/// put that out of reach; the reply to a shorter name gives the full SHA to paste.
pub const MIN_NAMED_DIGITS: usize = 16;
/// The fewest digits read as an attempt to name a commit (and answered with the rule above).
pub const MIN_SHA_PREFIX: usize = 7;

/// What the `/test` line of a comment says about the commit it vouches for.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum NamedCommit {
    /// `@` and [`MIN_NAMED_DIGITS`] to 40 lower-case hex digits: the commit's prefix.
    Sha(String),
    /// No `/test` line at all.
    NoTestLine,
    /// A `/test` line whose last word is not `@<sha>`.
    Missing,
    /// `@<hex>` with [`MIN_SHA_PREFIX`] or more digits but fewer than [`MIN_NAMED_DIGITS`].
    TooShort(String),
    /// A last word that starts with `@` but is not 7 to 40 lower-case hex digits.
    Malformed(String),
}

/// The `/test` line of `body` as the trigger workflow reads it (carriage returns dropped,
/// the first line that is `/test` alone or followed by a blank), and the commit its last
/// word names: `/test mini,cuda12 @<sha>`.
pub fn named_commit(body: &str) -> NamedCommit {
    let body = body.replace('\r', "");
    let Some(line) = body.split('\n').find(|l| {
        l.strip_prefix("/test")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    }) else {
        return NamedCommit::NoTestLine;
    };
    let Some(word) = line.split([' ', '\t']).rfind(|w| !w.is_empty()) else {
        return NamedCommit::Missing;
    };
    let Some(hex) = word.strip_prefix('@') else {
        return NamedCommit::Missing;
    };
    let lower_hex = hex
        .bytes()
        .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b));
    match hex.len() {
        n if !lower_hex || !(MIN_SHA_PREFIX..=40).contains(&n) => {
            NamedCommit::Malformed(word.to_owned())
        }
        n if n < MIN_NAMED_DIGITS => NamedCommit::TooShort(hex.to_owned()),
        _ => NamedCommit::Sha(hex.to_owned()),
    }
}

/// The targets of a `/test` line that build nothing: CuPy's `skip` and `force-skip`, alone
/// (the trigger's `SKIP_TARGETS`).
pub const SKIP_TARGETS: &[&str] = &["skip", "force-skip"];

/// The target of `body`'s `/test` line (read as [`named_commit`] reads it) when it is one of
/// [`SKIP_TARGETS`] alone, before the named commit: such a request builds nothing.
pub fn skip_target(body: &str) -> Option<&'static str> {
    let body = body.replace('\r', "");
    let line = body.split('\n').find(|l| {
        l.strip_prefix("/test")
            .is_some_and(|rest| rest.is_empty() || rest.starts_with([' ', '\t']))
    })?;
    let words: Vec<&str> = line.split([' ', '\t']).filter(|w| !w.is_empty()).collect();
    match words.as_slice() {
        [_, target, named] if named.starts_with('@') => {
            SKIP_TARGETS.iter().copied().find(|t| t == target)
        }
        _ => None,
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

    /// Issue 32: `/test skip` and `/test force-skip` alone are requests that build nothing;
    /// with another target, or on a later line, they are not.
    #[test]
    fn issue_32_skip_targets() {
        let sha = "@0123456789abcdef";
        let cases = [
            (format!("/test skip {sha}"), Some("skip")),
            (format!("/test force-skip {sha}"), Some("force-skip")),
            (format!("LGTM\r\n/test\tskip  {sha}"), Some("skip")),
            (format!("/test skip,mini {sha}"), None),
            (format!("/test skip mini {sha}"), None),
            (format!("/test mini {sha}\n/test skip {sha}"), None),
            (format!("/test skipped {sha}"), None),
            ("/test skip".to_owned(), None),
            (format!("/testing skip {sha}"), None),
        ];
        for (body, want) in cases {
            assert_eq!(skip_target(&body), want, "{body:?}");
        }
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
    fn the_commit_a_test_line_names() {
        let full = "0123456789abcdef0123456789abcdef01234567";
        let cases: &[(&str, NamedCommit)] = &[
            (
                &format!("/test mini @{full}"),
                NamedCommit::Sha(full.into()),
            ),
            (
                "/test mini,cuda12 @0123456789abcdef",
                NamedCommit::Sha("0123456789abcdef".into()),
            ),
            (
                "/test @0123456789abcdef",
                NamedCommit::Sha("0123456789abcdef".into()),
            ),
            (
                "looks good\r\n/test\tmini\t@0123456789abcdef \r\n",
                NamedCommit::Sha("0123456789abcdef".into()),
            ),
            // The first /test line counts, as in the trigger's script.
            (
                "/test mini\n/test mini @0123456789abcdef",
                NamedCommit::Missing,
            ),
            ("/test mini", NamedCommit::Missing),
            ("/test", NamedCommit::Missing),
            ("/testing @0123456789abcdef", NamedCommit::NoTestLine),
            ("please test", NamedCommit::NoTestLine),
            (
                "/test mini @0123456",
                NamedCommit::TooShort("0123456".into()),
            ),
            (
                "/test mini @012345",
                NamedCommit::Malformed("@012345".into()),
            ),
            (
                "/test mini @0123456789ABCDEF",
                NamedCommit::Malformed("@0123456789ABCDEF".into()),
            ),
            (
                &format!("/test mini @{full}0"),
                NamedCommit::Malformed(format!("@{full}0")),
            ),
            ("/test mini @main", NamedCommit::Malformed("@main".into())),
        ];
        for (body, want) in cases {
            assert_eq!(named_commit(body), *want, "{body:?}");
        }
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
