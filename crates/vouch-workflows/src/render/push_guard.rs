//! The push rules of the build workflow's `request` job (CuPy's `ci/tools/ci-guard.sh`
//! decides the same): a branch deletion builds nothing, nor does a branch push that merged a
//! pull request labelled [`SKIP_CI_LABEL`]. Tags always build: a release is never skipped by
//! a label, which anyone with triage access can set.

/// The label of a merged pull request whose push build is skipped.
pub const SKIP_CI_LABEL: &str = "skip-ci";

/// The test the script makes for a deletion; `explain` looks for it to know the job skips one.
pub const DELETION_TEST: &str = r#"[ "$DELETED" = true ] || [[ "$AFTER" =~ ^0+$ ]]"#;

/// The `env:` lines the script reads (indented for the step).
pub(crate) const ENV: &str = r#"          DELETED: ${{ github.event.deleted }}
          AFTER: ${{ github.event.after }}
          REF: ${{ github.ref }}
          SHA: ${{ github.sha }}
"#;

/// The job's extra `permissions:` line.
pub(crate) const PERMISSION: &str =
    "      pull-requests: read # a merged pull request's skip-ci label (pushes)\n";

/// The script's push branch (indented for a `run: |` block of a step).
pub(crate) fn script() -> String {
    super::fill(
        r#"          if [ "$EVENT" = push ]; then
            # A branch deletion is delivered as a push too, and its run gets the default
            # branch's commit as github.sha: there is nothing of this ref to build or sign.
            if @@DELETION_TEST@@; then
              echo "::notice::$REF was deleted: nothing to build"
              echo "build=false" >> "$GITHUB_OUTPUT"
              exit 0
            fi
            # The pull request this branch push merged (GitHub's commit-to-pulls list also
            # holds open and unrelated ones: the merged one into this branch, the exact merge
            # commit first). An API failure fails the job rather than skip a build.
            if [[ "$REF" == refs/heads/* ]]; then
              labels=$(gh api "repos/$REPO/commits/$SHA/pulls" \
                | jq -r --arg b "${REF#refs/heads/}" --arg sha "$SHA" \
                  '[.[] | select(.merged_at != null and .base.ref == $b)]
                   | (map(select(.merge_commit_sha == $sha)) + .) | .[0] // empty
                   | .labels[].name')
              if grep -qxF '@@LABEL@@' <<<"$labels"; then
                echo "::notice::the pull request merged by $SHA is labelled @@LABEL@@: nothing to build"
                echo "build=false" >> "$GITHUB_OUTPUT"
                exit 0
              fi
            fi
            echo "build=true" >> "$GITHUB_OUTPUT"
            exit 0
          fi
"#,
        &[("DELETION_TEST", DELETION_TEST), ("LABEL", SKIP_CI_LABEL)],
    )
}
