//! Which cache scopes a build may read and write, from what triggered it.
//!
//! Writes follow trust, and so do reads: a build reads only scopes that nothing less trusted
//! than itself can write. Every run of PR N (a vouched head's and an unvouched one's alike) can
//! write `pr/<N>` on the GitHub cache, and whoever holds a credential that travelled in a
//! public artifact can on a shared store, so no build reads a PR scope: a pull-request build
//! reads the base and default branches' scopes and writes nothing (nothing may read what it
//! wrote). Whatever the scope, a read serves only entries signed by the trusted builds' key
//! ([`crate::EntryVerifier`]): a scope's name is no fence by itself (see `crate::entry`).

use std::fmt;

use serde::{Deserialize, Serialize};

/// `pr/<N>`, `branch/<name>` or `tag/<name>`.
#[derive(Clone, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, PartialOrd, Ord)]
#[serde(try_from = "String", into = "String")]
pub struct Scope(String);

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum ScopeError {
    #[error(
        "scope {0:?} is not pr/<N>, branch/<name> or tag/<name> (names: letters, digits, `._-/`, no `..`)"
    )]
    Malformed(String),
    #[error("{event:?} builds need {what}")]
    Missing { event: String, what: &'static str },
}

impl Scope {
    pub fn pr(n: u64) -> Scope {
        Scope(format!("pr/{n}"))
    }

    pub fn branch(name: &str) -> Result<Scope, ScopeError> {
        format!("branch/{name}").try_into()
    }

    pub fn as_str(&self) -> &str {
        &self.0
    }

    pub fn is_pr(&self) -> bool {
        self.0.starts_with("pr/")
    }
}

impl TryFrom<String> for Scope {
    type Error = ScopeError;

    fn try_from(s: String) -> Result<Self, Self::Error> {
        let bad = || ScopeError::Malformed(s.clone());
        let (kind, name) = s.split_once('/').ok_or_else(bad)?;
        let name_ok = !name.is_empty()
            && !name
                .split('/')
                .any(|p| p.is_empty() || p == "." || p == "..")
            && name
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._-/".contains(&b));
        let ok = match kind {
            "pr" => {
                name.bytes().all(|b| b.is_ascii_digit())
                    && !name.starts_with('0')
                    && !name.is_empty()
            }
            "branch" | "tag" => name_ok,
            _ => false,
        };
        if ok { Ok(Scope(s)) } else { Err(bad()) }
    }
}

impl From<Scope> for String {
    fn from(s: Scope) -> String {
        s.0
    }
}

impl std::str::FromStr for Scope {
    type Err = ScopeError;
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        s.to_owned().try_into()
    }
}

impl fmt::Display for Scope {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
    }
}

/// What a build may do: read these scopes in order, write at most one.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ScopePolicy {
    pub write: Option<Scope>,
    pub read: Vec<Scope>,
    /// Why, for logs and summaries.
    pub reason: String,
}

/// The facts about a run that decide its scopes.
#[derive(Clone, Debug, Default)]
pub struct Trigger {
    /// `GITHUB_EVENT_NAME`.
    pub event: String,
    /// `GITHUB_REF`.
    pub git_ref: String,
    pub pr: Option<u64>,
    /// `GITHUB_BASE_REF` for pull requests.
    pub base_ref: Option<String>,
    pub default_branch: String,
    /// The head repository is a fork (for `workflow_run`).
    pub from_fork: bool,
}

fn dedup(scopes: Vec<Scope>) -> Vec<Scope> {
    let mut out: Vec<Scope> = Vec::new();
    for s in scopes {
        if !out.contains(&s) {
            out.push(s);
        }
    }
    out
}

impl ScopePolicy {
    pub fn none(reason: impl Into<String>) -> Self {
        ScopePolicy {
            write: None,
            read: Vec::new(),
            reason: reason.into(),
        }
    }

    pub fn for_trigger(t: &Trigger) -> Result<ScopePolicy, ScopeError> {
        let default = Scope::branch(&t.default_branch)?;
        Ok(match t.event.as_str() {
            "pull_request" => {
                let n = t.pr.ok_or(ScopeError::Missing {
                    event: t.event.clone(),
                    what: "a PR number",
                })?;
                let base = t.base_ref.as_deref().ok_or(ScopeError::Missing {
                    event: t.event.clone(),
                    what: "a base ref",
                })?;
                let base = base.strip_prefix("refs/heads/").unwrap_or(base);
                // Not `pr/<n>`: any run of the PR, vouched or not, can write it. And so no
                // write: nothing may read what this build would write.
                ScopePolicy {
                    write: None,
                    read: dedup(vec![Scope::branch(base)?, default]),
                    reason: format!(
                        "pull request #{n}: reads only what trusted builds wrote, writes nothing"
                    ),
                }
            }
            e if vouch_core::ci::BRANCH_EVENTS.contains(&e) => {
                let own = if let Some(b) = t.git_ref.strip_prefix("refs/heads/") {
                    Scope::branch(b)?
                } else if let Some(tag) = t.git_ref.strip_prefix("refs/tags/") {
                    format!("tag/{tag}").try_into()?
                } else {
                    return Ok(ScopePolicy::none(format!(
                        "{} of {:?}: not a branch or tag",
                        t.event, t.git_ref
                    )));
                };
                ScopePolicy {
                    write: Some(own.clone()),
                    read: vec![own],
                    reason: format!("{} of {}: its own scope only", t.event, t.git_ref),
                }
            }
            // Runs with the base repository's privileges on behalf of PR code: never write.
            "pull_request_target" => ScopePolicy {
                write: None,
                read: dedup(vec![
                    t.base_ref
                        .as_deref()
                        .map(|b| Scope::branch(b.strip_prefix("refs/heads/").unwrap_or(b)))
                        .transpose()?
                        .unwrap_or_else(|| default.clone()),
                    default,
                ]),
                reason: "pull_request_target: read-only".into(),
            },
            "workflow_run" if !t.from_fork => ScopePolicy {
                write: None,
                read: vec![default],
                reason: "workflow_run: read-only".into(),
            },
            "workflow_run" => ScopePolicy::none("workflow_run from a fork: no cache"),
            "issue_comment" => ScopePolicy::none(
                "issue_comment: no cache (it only records /test; builds run under pull_request)",
            ),
            other => ScopePolicy::none(format!("{other:?}: unknown trigger, no cache")),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn t(event: &str, git_ref: &str, pr: Option<u64>, base: Option<&str>) -> Trigger {
        Trigger {
            event: event.into(),
            git_ref: git_ref.into(),
            pr,
            base_ref: base.map(Into::into),
            default_branch: "main".into(),
            from_fork: false,
        }
    }

    fn show(p: &ScopePolicy) -> String {
        let w = p.write.as_ref().map_or("-".to_owned(), |s| s.to_string());
        let r: Vec<&str> = p.read.iter().map(Scope::as_str).collect();
        format!("write {w}; read [{}]", r.join(", "))
    }

    #[test]
    fn table() {
        let cases = [
            (
                t("pull_request", "refs/pull/7/merge", Some(7), Some("main")),
                "write -; read [branch/main]",
            ),
            (
                t("pull_request", "refs/pull/8/merge", Some(8), Some("v13")),
                "write -; read [branch/v13, branch/main]",
            ),
            (
                t("push", "refs/heads/main", None, None),
                "write branch/main; read [branch/main]",
            ),
            (
                t("push", "refs/heads/v13", None, None),
                "write branch/v13; read [branch/v13]",
            ),
            (
                t("push", "refs/heads/hotfix-1.2", None, None),
                "write branch/hotfix-1.2; read [branch/hotfix-1.2]",
            ),
            (
                t("push", "refs/tags/v13.0.0", None, None),
                "write tag/v13.0.0; read [tag/v13.0.0]",
            ),
            (
                t("workflow_dispatch", "refs/heads/main", None, None),
                "write branch/main; read [branch/main]",
            ),
            (
                t(
                    "pull_request_target",
                    "refs/heads/main",
                    Some(7),
                    Some("main"),
                ),
                "write -; read [branch/main]",
            ),
            (
                t("issue_comment", "refs/heads/main", Some(7), None),
                "write -; read []",
            ),
            (
                t("workflow_run", "refs/heads/main", None, None),
                "write -; read [branch/main]",
            ),
            (
                Trigger {
                    from_fork: true,
                    ..t("workflow_run", "refs/heads/main", None, None)
                },
                "write -; read []",
            ),
            (
                t("repository_dispatch", "refs/heads/main", None, None),
                "write -; read []",
            ),
        ];
        for (trigger, want) in cases {
            let p = ScopePolicy::for_trigger(&trigger).unwrap();
            assert_eq!(show(&p), want, "{trigger:?}");
            // Reads follow trust: no build reads a PR scope (any run of the PR can write it),
            // and nothing writes one, since nothing would read it.
            assert!(p.read.iter().all(|s| !s.is_pr()), "{trigger:?}");
            assert!(p.write.as_ref().is_none_or(|s| !s.is_pr()), "{trigger:?}");
        }
    }

    #[test]
    fn rejects_bad_scopes_and_missing_facts() {
        for bad in [
            "pr/0",
            "pr/x",
            "branch/",
            "branch/../main",
            "other/x",
            "branch/a b",
            "pr",
        ] {
            assert!(bad.parse::<Scope>().is_err(), "{bad}");
        }
        assert!(
            ScopePolicy::for_trigger(&t("pull_request", "refs/pull/7/merge", None, Some("main")))
                .is_err()
        );
    }
}
