//! GitHub's documented rules that decide what a run may do, each with the page that states it.
//! `explain` applies them; nothing else in vouch does.

/// "Maximum access for pull requests from public forked repositories": every scope `read`,
/// `id-token` `none`; the same page: `pull_request_target` gets the base's token.
pub const FORK_TOKEN_DOC: &str =
    "https://docs.github.com/en/actions/reference/github_token-reference";

/// "With the exception of GITHUB_TOKEN, secrets are not passed to the runner when a workflow
/// is triggered from a forked repository" (events page, `pull_request`, "Workflows in forked
/// repositories").
pub const FORK_SECRETS_DOC: &str = "https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#pull_request";

/// "Events triggered by the GITHUB_TOKEN ... will not create a new workflow run", except
/// `workflow_dispatch` and `repository_dispatch`.
pub const GITHUB_TOKEN_EVENTS_DOC: &str =
    "https://docs.github.com/en/actions/concepts/security/github_token";

/// `workflow_run`: runs the workflow file of the default branch, "able to access secrets and
/// write tokens, even if the previous workflow was not"; at most three levels of chaining.
pub const WORKFLOW_RUN_DOC: &str = "https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#workflow_run";

/// `pull_request_target`: "runs in the context of the default branch of the base repository,
/// rather than in the context of the merge commit".
pub const PULL_REQUEST_TARGET_DOC: &str = "https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#pull_request_target";

/// `issue_comment`: runs the workflow file of the default branch.
pub const ISSUE_COMMENT_DOC: &str = "https://docs.github.com/en/actions/reference/workflows-and-actions/events-that-trigger-workflows#issue_comment";

/// Environment secrets reach only jobs that name the environment, on refs its deployment
/// branch policy allows.
pub const ENVIRONMENT_DOC: &str = "https://docs.github.com/en/actions/reference/workflows-and-actions/deployments-and-environments#deployment-branches-and-tags";

/// "A job that is skipped will report its status as 'Success'."
pub const SKIPPED_JOB_DOC: &str = "https://docs.github.com/en/actions/writing-workflows/choosing-when-your-workflow-runs/using-conditions-to-control-job-execution";

/// Concurrency groups are shared by every workflow of a repository; `cancel-in-progress`
/// cancels the running member of the group.
pub const CONCURRENCY_DOC: &str = "https://docs.github.com/en/actions/writing-workflows/choosing-what-your-workflow-does/control-the-concurrency-of-workflows-and-jobs";

/// "Restrictions for accessing a cache": a run restores caches of its own ref, of the base
/// branch (for a pull request) and of the default branch, and saves to its own ref only; a
/// `pull_request` run's ref is `refs/pull/<N>/merge`, readable by that pull request alone.
/// Runs of `pull_request_target`, `issue_comment` and `workflow_run` are on the default branch.
pub const GHA_CACHE_SCOPE_DOC: &str = "https://docs.github.com/en/actions/reference/workflows-and-actions/dependency-caching#restrictions-for-accessing-a-cache";

/// The GitHub Actions cache scope a run on `run_ref` writes, and those it reads in order
/// ([`GHA_CACHE_SCOPE_DOC`]); `base` is a pull request's base branch.
pub fn gha_cache_scope(run_ref: &str, base: &str, default_branch: &str) -> (String, Vec<String>) {
    let mut reads = vec![run_ref.to_owned()];
    if run_ref.starts_with("refs/pull/") {
        reads.push(format!("refs/heads/{base}"));
    }
    reads.push(format!("refs/heads/{default_branch}"));
    let mut seen = std::collections::BTreeSet::new();
    reads.retain(|r| seen.insert(r.clone()));
    (run_ref.to_owned(), reads)
}

/// How many `workflow_run` levels GitHub chains.
pub const MAX_WORKFLOW_RUN_DEPTH: usize = 3;

/// The token scopes GitHub lets a fork's `pull_request` run keep, given the declared ones.
pub fn fork_token(
    declared: &std::collections::BTreeMap<String, String>,
) -> std::collections::BTreeMap<String, String> {
    declared
        .iter()
        .filter(|(scope, level)| scope.as_str() != "id-token" && level.as_str() != "none")
        .map(|(scope, _)| (scope.clone(), "read".to_owned()))
        .collect()
}

/// Whether a branch-filter or deployment-policy pattern matches `name`: `*` matches any run
/// of characters but `/`, `[...]` one character of a set or range (`[0-9]`), as GitHub's filter
/// patterns do (https://docs.github.com/en/actions/reference/workflows-and-actions/workflow-syntax#filter-pattern-cheat-sheet).
pub fn glob(pattern: &str, name: &str) -> bool {
    fn class(p: &[u8], c: u8) -> Option<(bool, usize)> {
        let end = p.iter().position(|b| *b == b']')?;
        let set = &p[1..end];
        let mut i = 0;
        let mut hit = false;
        while i < set.len() {
            if i + 2 < set.len() && set[i + 1] == b'-' {
                hit |= (set[i]..=set[i + 2]).contains(&c);
                i += 3;
            } else {
                hit |= set[i] == c;
                i += 1;
            }
        }
        Some((hit, end + 1))
    }
    fn go(p: &[u8], n: &[u8]) -> bool {
        match p.split_first() {
            None => n.is_empty(),
            Some((b'*', rest)) => (0..=n.len())
                .take_while(|i| *i == 0 || n[*i - 1] != b'/')
                .any(|i| go(rest, &n[i..])),
            Some((b'[', _)) => match (n.first(), class(p, *n.first().unwrap_or(&0))) {
                (Some(_), Some((true, used))) => go(&p[used..], &n[1..]),
                _ => false,
            },
            Some((c, rest)) => n.first() == Some(c) && go(rest, &n[1..]),
        }
    }
    go(pattern.as_bytes(), name.as_bytes())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn gha_cache_scopes() {
        let (w, r) = gha_cache_scope("refs/pull/7/merge", "v14", "main");
        assert_eq!(w, "refs/pull/7/merge");
        assert_eq!(
            r,
            ["refs/pull/7/merge", "refs/heads/v14", "refs/heads/main"]
        );
        let (w, r) = gha_cache_scope("refs/heads/main", "main", "main");
        assert_eq!(
            (w.as_str(), r.as_slice()),
            ("refs/heads/main", &["refs/heads/main".to_owned()][..])
        );
        let (_, r) = gha_cache_scope("refs/tags/v1", "main", "main");
        assert_eq!(r, ["refs/tags/v1", "refs/heads/main"]);
    }

    #[test]
    fn globs_and_fork_tokens() {
        assert!(glob("v*", "v1.2"));
        assert!(glob("v[0-9]*", "v14.0.0"));
        assert!(!glob("v[0-9]*", "vendor-bump"));
        assert!(!glob("v[0-9]*", "v"));
        assert!(glob("[a-c]x", "bx"));
        assert!(glob("hotfix-*", "hotfix-13"));
        assert!(!glob("v*", "feature/v1"));
        assert!(!glob("main", "main2"));
        assert!(!glob("v*", "v1/x"));
        let declared = [
            ("contents", "write"),
            ("id-token", "write"),
            ("actions", "read"),
        ]
        .iter()
        .map(|(a, b)| ((*a).to_owned(), (*b).to_owned()))
        .collect();
        let got = fork_token(&declared);
        assert_eq!(
            got.iter()
                .map(|(a, b)| format!("{a}:{b}"))
                .collect::<Vec<_>>(),
            ["actions:read", "contents:read"]
        );
    }
}
