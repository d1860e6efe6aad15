//! Facts about the CI system vouch runs under, each read one way.

/// Whether this process runs in a GitHub Actions job (`GITHUB_ACTIONS=true`).
pub fn in_github_actions() -> bool {
    std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true")
}

/// The pull request a git ref belongs to: `N` of `refs/pull/N/...` (or `refs/pull/N`). `N` must
/// be written canonically (no sign, no leading zero), so one number has one ref.
pub fn pull_number(git_ref: &str) -> Option<u64> {
    let n = git_ref.strip_prefix("refs/pull/")?.split('/').next()?;
    let canonical = !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit());
    canonical.then(|| n.parse().ok()).flatten()
}

/// The GitHub events vouch builds (and so signs, and so a consumer can fetch from). Comment
/// and `pull_request_target` runs never build: they run with the base repository's rights.
pub const BUILD_EVENTS: &[&str] = &["push", "pull_request", "workflow_dispatch", "schedule"];

/// Events that build a branch or tag of the repository itself (no pull request): their
/// builds are trusted with their own branch's cache scope.
pub const BRANCH_EVENTS: &[&str] = &["push", "workflow_dispatch", "schedule", "merge_group"];

/// The ref GitHub builds a pull request's merge commit at.
pub fn pull_merge_ref(n: u64) -> String {
    format!("refs/pull/{n}/merge")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_numbers() {
        let cases = [
            ("refs/pull/7/merge", Some(7)),
            ("refs/pull/7/head", Some(7)),
            ("refs/pull/12", Some(12)),
            ("refs/pull/07/merge", None),
            ("refs/pull/+7/merge", None),
            ("refs/pull//merge", None),
            ("refs/heads/main", None),
            ("refs/pull/x/merge", None),
        ];
        for (r, want) in cases {
            assert_eq!(pull_number(r), want, "{r}");
        }
        assert_eq!(pull_number(&pull_merge_ref(9)), Some(9));
    }
}
