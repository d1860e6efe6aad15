//! FlexCI: a CI system outside GitHub that tests GitHub commits. Its job environment names the
//! commit and, for a pull request, the PR; what it names is then pinned and verified like any
//! other expectation (nothing here is trusted beyond choosing what to look for).

/// The variables a FlexCI job sets; any one of them marks the process as a FlexCI job.
pub const VARS: &[&str] = &[
    "FLEXCI_BRANCH",
    "FLEXCI_REFERENCE_COMMIT_ID",
    "FLEXCI_COMMIT_ID",
];

/// What a FlexCI job's environment says about the build to fetch.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FlexciJob {
    /// From `FLEXCI_BRANCH=refs/pull/<N>/...`.
    pub pr: Option<u64>,
}

impl FlexciJob {
    /// `None` when none of [`VARS`] is set (this is not a FlexCI job).
    pub fn detect() -> Option<Self> {
        detect_with(|v| std::env::var(v).ok())
    }

    /// The event vouch built the commit under: PR jobs test `pull_request` builds.
    pub fn event(&self) -> &'static str {
        if self.pr.is_some() {
            "pull_request"
        } else {
            "push"
        }
    }

    /// The commit under test and where it came from; without a FlexCI variable, the checkout's
    /// HEAD, or for a pull request's job its second parent when HEAD is a merge commit (the
    /// PR head of `refs/pull/<N>/merge`). A push job's merge commit is itself the commit.
    pub fn commit(&self) -> (Option<String>, &'static str) {
        commit_with(
            self.pr.is_some(),
            |v| std::env::var(v).ok(),
            || {
                vouch_core::git::output(
                    std::path::Path::new("."),
                    &["rev-list", "--parents", "-n", "1", "HEAD"],
                )
            },
        )
    }
}

fn detect_with(var: impl Fn(&str) -> Option<String>) -> Option<FlexciJob> {
    let set = |v: &str| var(v).is_some_and(|x| !x.is_empty());
    if !VARS.iter().any(|v| set(v)) {
        return None;
    }
    let pr = var("FLEXCI_BRANCH")
        .as_deref()
        .and_then(vouch_core::ci::pull_number);
    Some(FlexciJob { pr })
}

fn commit_with(
    pr: bool,
    var: impl Fn(&str) -> Option<String>,
    head_parents: impl FnOnce() -> Option<String>,
) -> (Option<String>, &'static str) {
    for name in ["FLEXCI_REFERENCE_COMMIT_ID", "FLEXCI_COMMIT_ID"] {
        if let Some(v) = var(name).filter(|v| !v.is_empty()) {
            return (Some(v), name);
        }
    }
    let head = head_parents().map(|parents| {
        let ids: Vec<&str> = parents.split_whitespace().collect();
        if pr && ids.len() == 3 { ids[2] } else { ids[0] }.to_owned()
    });
    (head, "the checkout's HEAD")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn env<'a>(pairs: &'a [(&'a str, &'a str)]) -> impl Fn(&str) -> Option<String> + 'a {
        move |k| {
            pairs
                .iter()
                .find(|(n, _)| *n == k)
                .map(|(_, v)| (*v).to_owned())
        }
    }

    type Vars<'a> = &'a [(&'a str, &'a str)];

    #[test]
    fn detection() {
        let cases: &[(Vars, Option<Option<u64>>)] = &[
            (&[], None),
            (&[("FLEXCI_BRANCH", "")], None),
            (&[("FLEXCI_BRANCH", "refs/pull/7/merge")], Some(Some(7))),
            (&[("FLEXCI_BRANCH", "refs/pull/12/head")], Some(Some(12))),
            (&[("FLEXCI_BRANCH", "refs/heads/main")], Some(None)),
            (&[("FLEXCI_COMMIT_ID", "abc")], Some(None)),
            (&[("FLEXCI_BRANCH", "refs/pull/x/merge")], Some(None)),
        ];
        for (vars, want) in cases {
            let job = detect_with(env(vars));
            assert_eq!(job.as_ref().map(|j| j.pr), *want, "{vars:?}");
        }
        assert_eq!(FlexciJob { pr: Some(1) }.event(), "pull_request");
        assert_eq!(FlexciJob { pr: None }.event(), "push");
    }

    #[test]
    fn commit_sources() {
        type Want<'a> = (Option<&'a str>, &'a str);
        // A push job of a merge commit tests that commit, not the branch it merged.
        let push = commit_with(false, env(&[]), || Some("m base head".to_owned()));
        assert_eq!(push, (Some("m".to_owned()), "the checkout's HEAD"));
        let cases: &[(Vars, Option<&str>, Want)] = &[
            (
                &[
                    ("FLEXCI_REFERENCE_COMMIT_ID", "r"),
                    ("FLEXCI_COMMIT_ID", "c"),
                ],
                Some("h"),
                (Some("r"), "FLEXCI_REFERENCE_COMMIT_ID"),
            ),
            (
                &[
                    ("FLEXCI_REFERENCE_COMMIT_ID", ""),
                    ("FLEXCI_COMMIT_ID", "c"),
                ],
                Some("h"),
                (Some("c"), "FLEXCI_COMMIT_ID"),
            ),
            (&[], Some("h p"), (Some("h"), "the checkout's HEAD")),
            // A merge commit: the head is its second parent.
            (
                &[],
                Some("m base head"),
                (Some("head"), "the checkout's HEAD"),
            ),
            (&[], None, (None, "the checkout's HEAD")),
        ];
        for (vars, parents, (sha, from)) in cases {
            let got = commit_with(true, env(vars), || parents.map(str::to_owned));
            assert_eq!(got, (sha.map(str::to_owned), *from), "{vars:?} {parents:?}");
        }
    }
}
