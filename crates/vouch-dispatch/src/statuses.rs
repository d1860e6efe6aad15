//! The commit statuses CuPy's dispatcher sets beside a FlexCI dispatch: `<context> (dashboard)`
//! (success, linking FlexCI's page for the commit) on every dispatch and skip; `<context>/<project>`
//! "Skipped" (success) for each project not dispatched that has no status yet (a status a real
//! run set is kept); and for `/test force-skip`, each such project's status that is not
//! success overwritten as success ("❌ <old description> (force-skip)", its old link kept), a
//! comment on the pull request listing them, and `<context> (force-skip)` (failure, linking the
//! comment) so that the override stays visible.
//!
//! [`plan`] decides; [`report`] reads the commit's statuses and sets them. The statuses go on
//! the commit the caller names (the vouched head, or the pushed commit), never on whatever the
//! pull request's head is by then.

use std::collections::BTreeMap;

use vouch_github::{CommitStatus, GithubClient, NewStatus};

use crate::DispatchError;

/// CuPy's context prefix (`flexci_dispatcher.py --flexci-context`).
pub const DEFAULT_CONTEXT: &str = "pfn-public-ci";
/// GitHub refuses a longer description.
const MAX_DESCRIPTION: usize = 140;

/// What to set, in the order CuPy's dispatcher sets it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct StatusPlan {
    pub dashboard: NewStatus,
    /// Projects without a status yet: "Skipped".
    pub skipped: Vec<NewStatus>,
    /// `/test force-skip` over projects whose status is not success.
    pub force: Option<ForceSkip>,
}

/// The force-skip part: its comment is posted first, since the marker status links it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ForceSkip {
    pub comment: String,
    /// `(context, the status it overrides)`, sorted by context.
    pub overridden: Vec<(String, CommitStatus)>,
}

impl ForceSkip {
    /// The statuses to set once the comment is at `comment_url`: the failing marker, then the
    /// overrides.
    pub fn statuses(&self, prefix: &str, comment_url: &str) -> Vec<NewStatus> {
        let mut out = vec![NewStatus {
            context: format!("{prefix} (force-skip)"),
            state: "failure".into(),
            description: None,
            target_url: Some(comment_url.to_owned()),
        }];
        out.extend(self.overridden.iter().map(|(context, old)| NewStatus {
            context: context.clone(),
            state: "success".into(),
            description: Some(clip(&format!(
                "❌ {} (force-skip)",
                old.description.as_deref().unwrap_or("None")
            ))),
            target_url: old.target_url.clone(),
        }));
        out
    }
}

/// The statuses for `sha` after a dispatch or a skip: `skipped` are the projects not
/// dispatched, `force` is `/test force-skip`, `existing` the commit's statuses as listed.
pub fn plan(
    prefix: &str,
    flexci_base: &str,
    sha: &str,
    skipped: &[String],
    force: bool,
    existing: &[CommitStatus],
) -> StatusPlan {
    let dashboard = NewStatus {
        context: format!("{prefix} (dashboard)"),
        state: "success".into(),
        description: None,
        target_url: Some(format!(
            "{flexci_base}/p/dashboard_by_commit_id?commit_id={sha}"
        )),
    };
    // The newest status of each context (GitHub lists newest first; ties keep the first).
    let mut latest: BTreeMap<&str, &CommitStatus> = BTreeMap::new();
    for s in existing {
        match latest.get(s.context.as_str()) {
            Some(kept) if kept.updated_at >= s.updated_at => {}
            _ => {
                latest.insert(&s.context, s);
            }
        }
    }
    let mut plan = StatusPlan {
        dashboard,
        skipped: Vec::new(),
        force: None,
    };
    let mut overridden = Vec::new();
    for project in skipped {
        let context = format!("{prefix}/{project}");
        match latest.get(context.as_str()) {
            // A real run's status is kept, unless a force-skip overrides a failure.
            Some(old) => {
                if force && old.state != "success" {
                    overridden.push((context, (*old).clone()));
                }
            }
            None => plan.skipped.push(NewStatus {
                context,
                state: "success".into(),
                description: Some("Skipped".into()),
                target_url: None,
            }),
        }
    }
    if !overridden.is_empty() {
        overridden.sort_by(|a, b| a.0.cmp(&b.0));
        let mut comment = String::from("The following tests were force-skipped:\n\n");
        let lines: Vec<String> = overridden
            .iter()
            .map(|(c, s)| {
                format!(
                    "- [`{c}`]({}): {} - {}",
                    s.target_url.as_deref().unwrap_or("None"),
                    s.state,
                    s.description.as_deref().unwrap_or("None")
                )
            })
            .collect();
        comment.push_str(&lines.join("\n"));
        plan.force = Some(ForceSkip {
            comment,
            overridden,
        });
    }
    plan
}

fn clip(s: &str) -> String {
    s.chars().take(MAX_DESCRIPTION).collect()
}

/// Where the statuses go.
pub struct Target<'a> {
    pub gh: &'a GithubClient,
    /// `owner/name`.
    pub repo: &'a str,
    /// The commit, 40 lowercase hex digits.
    pub sha: &'a str,
    /// The pull request a force-skip comment goes on (`None` for a push).
    pub pr: Option<u64>,
    pub prefix: &'a str,
    pub flexci_base: &'a str,
}

/// Reads `sha`'s statuses (only when some project is skipped), plans, and sets them; the
/// contexts set, in order.
pub async fn report(
    t: &Target<'_>,
    skipped: &[String],
    force: bool,
) -> Result<Vec<String>, DispatchError> {
    let existing = if skipped.is_empty() {
        Vec::new()
    } else {
        t.gh.commit_statuses(t.repo, t.sha).await?
    };
    let plan = plan(t.prefix, t.flexci_base, t.sha, skipped, force, &existing);
    let mut set = Vec::new();
    for s in std::iter::once(&plan.dashboard).chain(&plan.skipped) {
        t.gh.create_status(t.repo, t.sha, s).await?;
        set.push(s.context.clone());
    }
    if let Some(f) = &plan.force {
        let pr = t.pr.ok_or_else(|| DispatchError::Field {
            field: "issue.number".into(),
            problem: "is missing: a force-skip is reported on its pull request".into(),
        })?;
        let url = t.gh.create_issue_comment(t.repo, pr, &f.comment).await?;
        for s in f.statuses(t.prefix, &url) {
            t.gh.create_status(t.repo, t.sha, &s).await?;
            set.push(s.context);
        }
    }
    tracing::info!(sha = t.sha, statuses = set.len(), "commit statuses set");
    Ok(set)
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    fn status(context: &str, state: &str, at: &str) -> CommitStatus {
        CommitStatus {
            context: context.into(),
            state: state.into(),
            description: Some(format!("{state} at {at}")),
            target_url: Some(format!("https://ci.example/r/{at}")),
            updated_at: Some(at.into()),
        }
    }

    fn names(p: &[&str]) -> Vec<String> {
        p.iter().map(|s| (*s).to_owned()).collect()
    }

    #[test]
    fn dashboard_and_skipped_projects_keep_real_statuses() {
        let existing = [status("pfn-public-ci/a", "failure", "2026-01-01T00:00:00Z")];
        let p = plan(
            DEFAULT_CONTEXT,
            "https://ci.example",
            SHA,
            &names(&["a", "b"]),
            false,
            &existing,
        );
        assert_eq!(p.dashboard.context, "pfn-public-ci (dashboard)");
        assert_eq!(
            p.dashboard.target_url.as_deref(),
            Some(format!("https://ci.example/p/dashboard_by_commit_id?commit_id={SHA}").as_str())
        );
        let skipped: Vec<(&str, &str, Option<&str>)> = p
            .skipped
            .iter()
            .map(|s| {
                (
                    s.context.as_str(),
                    s.state.as_str(),
                    s.description.as_deref(),
                )
            })
            .collect();
        assert_eq!(skipped, [("pfn-public-ci/b", "success", Some("Skipped"))]);
        assert_eq!(p.force, None);
    }

    #[test]
    fn force_skip_overrides_what_is_not_success_by_its_newest_status() {
        let existing = [
            // Newest first, as GitHub lists them: a's newest is a failure, b's a success.
            status("pfn-public-ci/a", "failure", "2026-01-02T00:00:00Z"),
            status("pfn-public-ci/a", "success", "2026-01-01T00:00:00Z"),
            status("pfn-public-ci/b", "success", "2026-01-02T00:00:00Z"),
            status("pfn-public-ci/b", "failure", "2026-01-01T00:00:00Z"),
            status("pfn-public-ci/c", "pending", "2026-01-01T00:00:00Z"),
        ];
        let p = plan(
            "pfn-public-ci",
            "https://ci.example",
            SHA,
            &names(&["c", "b", "a", "d"]),
            true,
            &existing,
        );
        assert_eq!(p.skipped.len(), 1);
        assert_eq!(p.skipped[0].context, "pfn-public-ci/d");
        let f = p.force.expect("a force-skip");
        assert_eq!(
            f.comment,
            "The following tests were force-skipped:\n\n\
             - [`pfn-public-ci/a`](https://ci.example/r/2026-01-02T00:00:00Z): failure - failure at 2026-01-02T00:00:00Z\n\
             - [`pfn-public-ci/c`](https://ci.example/r/2026-01-01T00:00:00Z): pending - pending at 2026-01-01T00:00:00Z"
        );
        let set = f.statuses("pfn-public-ci", "https://gh.example/c/1");
        let set: Vec<(&str, &str, Option<&str>, Option<&str>)> = set
            .iter()
            .map(|s| {
                (
                    s.context.as_str(),
                    s.state.as_str(),
                    s.description.as_deref(),
                    s.target_url.as_deref(),
                )
            })
            .collect();
        assert_eq!(
            set,
            [
                (
                    "pfn-public-ci (force-skip)",
                    "failure",
                    None,
                    Some("https://gh.example/c/1")
                ),
                (
                    "pfn-public-ci/a",
                    "success",
                    Some("❌ failure at 2026-01-02T00:00:00Z (force-skip)"),
                    Some("https://ci.example/r/2026-01-02T00:00:00Z")
                ),
                (
                    "pfn-public-ci/c",
                    "success",
                    Some("❌ pending at 2026-01-01T00:00:00Z (force-skip)"),
                    Some("https://ci.example/r/2026-01-01T00:00:00Z")
                ),
            ]
        );
        // A plain skip overrides nothing.
        let p = plan(
            "pfn-public-ci",
            "https://ci.example",
            SHA,
            &names(&["a"]),
            false,
            &existing,
        );
        assert!(p.force.is_none() && p.skipped.is_empty());
    }

    #[test]
    fn descriptions_fit_githubs_limit() {
        let mut old = status("p/a", "failure", "t");
        old.description = Some("x".repeat(200));
        let p = plan("p", "https://ci.example", SHA, &names(&["a"]), true, &[old]);
        let s = p.force.unwrap().statuses("p", "u");
        assert_eq!(s[1].description.as_ref().unwrap().chars().count(), 140);
    }
}
