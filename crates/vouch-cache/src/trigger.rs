//! A [`Trigger`] read from the GitHub Actions job it runs in: the variables GitHub sets and
//! the event payload it writes. The scope policy's input, so it lives next to the policy.

use std::path::PathBuf;

use crate::Trigger;

#[derive(Debug, thiserror::Error)]
pub enum TriggerError {
    /// Not inside a GitHub Actions job (or one that does not set the variable).
    #[error("{0} is not set: this is not a GitHub Actions job")]
    NotInActions(&'static str),
    #[error("reading the event payload {path:?}")]
    ReadPayload {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the event payload {path:?} is not JSON")]
    Payload {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
}

impl Trigger {
    /// The trigger of the Actions job whose variables `var` returns (`std::env::var` in a job;
    /// a map in tests). `default_branch` counts when the payload does not name one.
    pub fn from_github_actions(
        var: impl Fn(&str) -> Option<String>,
        default_branch: &str,
    ) -> Result<Trigger, TriggerError> {
        let get = |k: &str| var(k).filter(|v| !v.is_empty());
        let event =
            get("GITHUB_EVENT_NAME").ok_or(TriggerError::NotInActions("GITHUB_EVENT_NAME"))?;
        let git_ref = get("GITHUB_REF").unwrap_or_default();
        let payload: serde_json::Value = match get("GITHUB_EVENT_PATH") {
            Some(p) => {
                let path = PathBuf::from(p);
                let text =
                    std::fs::read_to_string(&path).map_err(|source| TriggerError::ReadPayload {
                        path: path.clone(),
                        source,
                    })?;
                serde_json::from_str(&text)
                    .map_err(|source| TriggerError::Payload { path, source })?
            }
            None => serde_json::Value::Null,
        };
        let pr = payload["pull_request"]["number"]
            .as_u64()
            .or_else(|| vouch_core::ci::pull_number(&git_ref));
        let default_branch = payload["repository"]["default_branch"]
            .as_str()
            .unwrap_or(default_branch)
            .to_owned();
        let from_fork = payload["workflow_run"]["head_repository"]["fork"]
            .as_bool()
            .unwrap_or(false);
        Ok(Trigger {
            event,
            git_ref,
            pr,
            base_ref: get("GITHUB_BASE_REF"),
            default_branch,
            from_fork,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn vars<'a>(pairs: &'a [(&'a str, String)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| pairs.iter().find(|(n, _)| *n == k).map(|(_, v)| v.clone())
    }

    #[test]
    fn payload_decides_pr_default_branch_and_fork() {
        let dir = tempfile::tempdir().unwrap();
        let payload = dir.path().join("event.json");
        std::fs::write(
            &payload,
            r#"{"pull_request":{"number":12},"repository":{"default_branch":"trunk"},
                "workflow_run":{"head_repository":{"fork":true}}}"#,
        )
        .unwrap();
        let env = [
            ("GITHUB_EVENT_NAME", "pull_request".to_owned()),
            ("GITHUB_REF", "refs/pull/99/merge".to_owned()),
            ("GITHUB_BASE_REF", "trunk".to_owned()),
            ("GITHUB_EVENT_PATH", payload.display().to_string()),
        ];
        let t = Trigger::from_github_actions(vars(&env), "main").unwrap();
        assert_eq!(t.event, "pull_request");
        assert_eq!(t.pr, Some(12), "the payload's number wins over the ref");
        assert_eq!(t.default_branch, "trunk");
        assert!(t.from_fork);
        assert_eq!(t.base_ref.as_deref(), Some("trunk"));
    }

    #[test]
    fn without_a_payload_the_ref_and_the_given_default_branch_count() {
        let env = [
            ("GITHUB_EVENT_NAME", "pull_request".to_owned()),
            ("GITHUB_REF", "refs/pull/7/merge".to_owned()),
            ("GITHUB_BASE_REF", String::new()),
        ];
        let t = Trigger::from_github_actions(vars(&env), "main").unwrap();
        assert_eq!((t.pr, t.default_branch.as_str()), (Some(7), "main"));
        assert_eq!(t.base_ref, None, "an empty variable is no value");
        assert!(!t.from_fork);
    }

    #[test]
    fn outside_actions_and_bad_payloads_are_errors() {
        let e = Trigger::from_github_actions(|_| None, "main").unwrap_err();
        assert_eq!(
            e.to_string(),
            "GITHUB_EVENT_NAME is not set: this is not a GitHub Actions job"
        );
        let dir = tempfile::tempdir().unwrap();
        let payload = dir.path().join("event.json");
        std::fs::write(&payload, "{").unwrap();
        let env = [
            ("GITHUB_EVENT_NAME", "push".to_owned()),
            ("GITHUB_EVENT_PATH", payload.display().to_string()),
        ];
        let e = Trigger::from_github_actions(vars(&env), "main").unwrap_err();
        assert!(matches!(e, TriggerError::Payload { .. }), "{e}");
    }
}
