//! The commit a dispatch vouches for, carried in the webhook body itself.
//!
//! CuPy's dispatcher replays the recorded `issue_comment` event, which names a pull request
//! but no commit: FlexCI then tests whatever the pull request's head is when its job starts,
//! which may be a head pushed after the signer's last check. So the body gains one member,
//! `vouch`, appended after every member the event already has: the bytes of those members
//! (and so everything a reader of the old body reads) are unchanged, GitHub itself adds members
//! to its events over time, so a webhook reader ignores one it does not know, and the HMAC
//! signatures cover it, so only the holder of the webhook secret can set it. The farm compares
//! its checkout with `vouch.commit` (see `pyproject-templates/cupy/flexci/`).

use crate::DispatchError;
use crate::pyjson::PyValue;

/// The member the body gains.
pub const MEMBER: &str = "vouch";
/// `vouch.schema`.
pub const SCHEMA: &str = "https://vouch.build/flexci-dispatch/v1";

/// What the signer vouched for: the pull request of `repository` at `commit`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Vouched {
    /// `owner/name`.
    pub repository: String,
    pub pr: u64,
    /// The pull request's head, 40 lowercase hex digits.
    pub commit: String,
}

impl Vouched {
    /// `payload` (an `issue_comment` event) with the `vouch` member appended. The event must
    /// be about the same repository and pull request, and must not carry a `vouch` member
    /// already: GitHub never sends one, so such an event was not recorded as it came.
    pub fn stamp(&self, payload: &PyValue) -> Result<PyValue, DispatchError> {
        let field = |field: &str, problem: String| DispatchError::Field {
            field: field.to_owned(),
            problem,
        };
        if !is_commit(&self.commit) {
            return Err(field(
                "vouched commit",
                format!(
                    "{:?} is not a full commit SHA (40 lowercase hex digits)",
                    self.commit
                ),
            ));
        }
        let PyValue::Object(members) = payload else {
            return Err(field(
                "payload",
                format!("is {}, expected an object", payload.kind()),
            ));
        };
        if payload.get(MEMBER).is_some() {
            return Err(field(
                MEMBER,
                "is already set: GitHub's events carry no such member, so this event was not recorded as GitHub sent it".into(),
            ));
        }
        let repository = payload
            .at(&["repository", "full_name"])
            .and_then(PyValue::as_str);
        if repository != Some(self.repository.as_str()) {
            return Err(field(
                "repository.full_name",
                format!(
                    "is {}, but the request vouched for {:?}",
                    repository.map_or_else(|| "missing".to_owned(), |r| format!("{r:?}")),
                    self.repository
                ),
            ));
        }
        let number = match payload.at(&["issue", "number"]) {
            Some(PyValue::Int(n)) => Some(*n),
            _ => None,
        };
        if number != Some(i128::from(self.pr)) {
            return Err(field(
                "issue.number",
                format!(
                    "is {}, but the request vouched for pull request {}",
                    number.map_or_else(|| "missing".to_owned(), |n| n.to_string()),
                    self.pr
                ),
            ));
        }
        let mut members = members.clone();
        members.push((
            MEMBER.to_owned(),
            PyValue::Object(vec![
                ("schema".into(), PyValue::Str(SCHEMA.into())),
                ("repository".into(), PyValue::Str(self.repository.clone())),
                ("pr".into(), PyValue::Int(i128::from(self.pr))),
                ("commit".into(), PyValue::Str(self.commit.clone())),
            ]),
        ));
        Ok(PyValue::Object(members))
    }
}

fn is_commit(s: &str) -> bool {
    s.len() == 40 && s.bytes().all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn event() -> PyValue {
        PyValue::parse(
            r#"{"action": "created", "issue": {"number": 7}, "comment": {"body": "/test mini\u00e9"}, "repository": {"full_name": "cupy/cupy"}}"#.as_bytes(),
        )
        .unwrap()
    }

    fn vouched() -> Vouched {
        Vouched {
            repository: "cupy/cupy".into(),
            pr: 7,
            commit: SHA.into(),
        }
    }

    /// The event's own bytes come first, unchanged; the member follows them.
    #[test]
    fn stamping_appends_one_member() {
        let before = event().dumps();
        let after = vouched().stamp(&event()).unwrap().dumps();
        let prefix = before.strip_suffix('}').unwrap();
        assert_eq!(
            after,
            format!(
                r#"{prefix}, "vouch": {{"schema": "{SCHEMA}", "repository": "cupy/cupy", "pr": 7, "commit": "{SHA}"}}}}"#
            )
        );
    }

    #[test]
    fn refusals() {
        let cases: &[(Vouched, &str)] = &[
            (
                Vouched { pr: 8, ..vouched() },
                "the event's issue.number is 7, but the request vouched for pull request 8",
            ),
            (
                Vouched {
                    repository: "cupy/other".into(),
                    ..vouched()
                },
                "the event's repository.full_name is \"cupy/cupy\", but the request vouched for \"cupy/other\"",
            ),
            (
                Vouched {
                    commit: "abc".into(),
                    ..vouched()
                },
                "the event's vouched commit \"abc\" is not a full commit SHA (40 lowercase hex digits)",
            ),
        ];
        for (v, want) in cases {
            assert_eq!(v.stamp(&event()).unwrap_err().to_string(), *want);
        }
        let stamped = vouched().stamp(&event()).unwrap();
        let again = vouched().stamp(&stamped).unwrap_err().to_string();
        assert!(
            again.starts_with("the event's vouch is already set"),
            "{again}"
        );
        let not_object = vouched().stamp(&PyValue::Null).unwrap_err().to_string();
        assert_eq!(
            not_object,
            "the event's payload is null, expected an object"
        );
    }
}
