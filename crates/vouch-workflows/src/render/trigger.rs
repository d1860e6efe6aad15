//! `vouch-trigger.yml`: a maintainer's `/test` becomes a recorded request and a label; a new
//! head takes the label away again.

use super::{
    BUILD_FILE, HEADER, PR_BUILD_GROUP, REQUEST_ARTIFACT_PREFIX, TRIGGER_LABEL,
    TRUSTED_ENVIRONMENT, Vars, fill,
};
use crate::pins::UPLOAD_ARTIFACT;

/// A `/test` line (POSIX ERE, one line at a time): `/test` alone or with targets.
const TEST_LINE: &str = "^/test([[:blank:]].*)?$";
/// With FlexCI, targets are required: CuPy's dispatcher sends nothing for a bare `/test`, so
/// building one would sign wheels no test farm ever receives. The commit (`@<sha>`) is not a
/// target.
const TEST_LINE_WITH_TARGETS: &str = "^/test[[:blank:]]+[^[:blank:]@].*$";
/// The targets of a `/test` line (its words but the named commit) that build nothing: CuPy's
/// `/test skip` and `/test force-skip`, alone on the line. The record job matches them with
/// this ERE (and `explain` reads it back from the script).
pub const SKIP_TARGETS: &str = "^(skip|force-skip)$";
/// The fewest hex digits a `/test` line must name its commit with; the signer holds requests
/// to the same number (`vouch_prrun::MIN_NAMED_DIGITS`, which says why it is not 7).
pub const MIN_NAMED_DIGITS: usize = 16;

/// The record job's extra steps, environment, timeout and the workflow's `env:` lines when
/// it grants a pull request its cache credential (`store = "redis"`); nothing otherwise.
fn grant(v: &Vars<'_>) -> [String; 5] {
    let Some(step) = crate::cache::grant_step(&v.opts.cache) else {
        return [
            String::new(),
            String::new(),
            "5".into(),
            String::new(),
            String::new(),
        ];
    };
    [
        v.install()
            .steps_uncached("python3", "steps.record.outputs.head_sha != ''")
            + &step,
        format!(
            "\n    # The cache's admin password lives in this environment (default and push branches\n    # only); this job runs nothing from the pull request.\n    environment: {TRUSTED_ENVIRONMENT}"
        ),
        // Building vouch from source (`install = "source"`) takes minutes.
        "45".into(),
        format!("\nenv:\n{}", v.install().env()),
        "\n#   With the Redis cache it also grants the pull request its own cache user\n#   (`vouch cache grant`: read-only, until the TTL) and adds that user's password\n#   to the record. It reads and writes no cache entry.".into(),
    ]
}

/// The job a request that builds nothing runs instead of the label (see the file's header).
fn skip_job(v: &Vars<'_>) -> String {
    let dispatch = &v.opts.dispatch;
    let flexci = matches!(dispatch, crate::Dispatch::Flexci { .. });
    fill(
        r#"  skip:
    name: /test skip (nothing is built)
    needs: record
    if: needs.record.outputs.skip != ''
    runs-on: ubuntu-24.04
    timeout-minutes: @@TIMEOUT@@
    # The build's group: queueing here cancels a build of this pull request still in flight,
    # which the skip supersedes (the signer refuses it too: the skip is the newest request).
    concurrency:
      group: @@PR_GROUP@@${{ github.event.issue.number }}
      cancel-in-progress: true
    # The App key lives in this environment (default and push branches only).
    environment: @@ENVIRONMENT@@
    permissions:
@@PERMISSIONS@@    steps:
@@SKIP_APP_TOKEN@@      - name: Commit status @@STATUS@@ on the named commit
        if: needs.record.outputs.skip != 'external'
        env:
          GH_TOKEN: ${{ steps.token.outputs.token }}
          REPO: ${{ github.repository }}
          HEAD_SHA: ${{ needs.record.outputs.head_sha }}
          SKIP: ${{ needs.record.outputs.skip }}
          AUTHOR: ${{ github.event.comment.user.login }}
          RUN_URL: ${{ github.server_url }}/${{ github.repository }}/actions/runs/${{ github.run_id }}
          CONTEXT: '@@STATUS@@'
        run: |
          # A writer skipped the tests of this commit: nothing is built or signed for it.
          gh api --method POST "repos/$REPO/statuses/$HEAD_SHA" -f state=success \
            -f context="$CONTEXT" -f description="/test $SKIP by $AUTHOR: nothing built or signed" \
            -f target_url="$RUN_URL" --silent
@@STEPS@@
"#,
        &[
            (
                "TIMEOUT",
                if flexci { "45" } else { "5" }, // installing vouch from source takes minutes
            ),
            ("PR_GROUP", PR_BUILD_GROUP),
            ("ENVIRONMENT", TRUSTED_ENVIRONMENT),
            ("PERMISSIONS", dispatch.skip_permissions()),
            (
                "SKIP_APP_TOKEN",
                &crate::render::app_token_step(
                    "GitHub App token",
                    "token",
                    None,
                    &[
                        "permission-statuses: write",
                        "permission-pull-requests: write # force-skip's comment",
                    ],
                ),
            ),
            ("STATUS", crate::REQUIRED_STATUS),
            // No cache: this is an issue_comment run, in the default branch's scope.
            (
                "STEPS",
                &dispatch.skip_steps(&v.install().steps_uncached("python3", "success()")),
            ),
        ],
    )
}

pub(crate) fn render(v: &Vars<'_>) -> String {
    let [
        grant_steps,
        record_environment,
        record_timeout,
        install_env,
        grant_text,
    ] = grant(v);
    let flexci = matches!(v.opts.dispatch, crate::Dispatch::Flexci { .. });
    let (test_line, test_form) = if flexci {
        (TEST_LINE_WITH_TARGETS, "`/test <targets> @<sha>`")
    } else {
        (TEST_LINE, "`/test @<sha>` or `/test <targets> @<sha>`")
    };
    let external = v.opts.dispatch.has_external();
    let external_text = if external {
        ", or only external targets"
    } else {
        ""
    };
    let external_header = if external {
        ", or `/test <targets> @<sha>` whose\n#   targets are all `external_tags` (another CI's, e.g. ROCm),"
    } else {
        ""
    };
    let skip_posts = if flexci {
        "vouch/pr-build success (not for external\n#   targets); `pfn-public-ci (dashboard)`, and `pfn-public-ci/<project>` \"Skipped\" for every\n#   project of the default branch's list without a status (force-skip: also over each that is\n#   not success, with a comment listing them and `pfn-public-ci (force-skip)` failure), as\n#   CuPy's dispatcher; external targets go to vars.VOUCH_EXTERNAL_TEST_REPO by\n#   repository_dispatch (event vouch-external-test), naming that commit."
    } else {
        "vouch/pr-build success."
    };
    let associations = v
        .opts
        .trigger_associations
        .iter()
        .map(|a| format!("\"{a}\""))
        .collect::<Vec<_>>()
        .join(", ");
    fill(
        r#"@@HEADER@@
#
# The /test flow of @@PROJECT@@, in the base repository's context (both events run this file
# as it is on the default branch, with its secrets; neither checks out or runs anything from
# the pull request, and every event value reaches a script through env):
#
# - record: @@TEST_FORM@@ on a line of its own, from @@ASSOCIATIONS_TEXT@@ who can
#   write to the repository (its permission, read from the API), on an open pull request,
#   records the request (the raw event, and the pull request's head and base as the API
#   gives them now) as the artifact @@REQUEST@@<pr>-<head sha> of this default-branch run.
#   The sign workflow accepts only such a record, so a fork cannot forge one. `/testing` is
#   not a request.
#   The comment names the commit it vouches for (@ and at least @@MIN_DIGITS@@ hex digits; fewer
#   can be matched by a commit made to match them). This job starts seconds or minutes after
#   the comment, and a head pushed in between must never be recorded: when the head no
#   longer starts with the named digits, or the comment names none, nothing is recorded and
#   the job replies on the pull request with the head it found and the exact comment to post.
#   No fact GitHub sets proves which head a comment was written against (commit dates are
#   the author's; push times are not in the API; run and check-suite times only show that a
#   head existed, and an author can push a head, push the reviewed one back, and push the
#   first again after the comment), so without a named commit there is no proof to try.@@GRANT_TEXT@@
# - label: sets @@LABEL@@ again with a GitHub App token (an event caused by GITHUB_TOKEN
#   starts no workflow, and re-adding a present label causes no event), which starts
#   @@BUILD_FILE@@ for that head.
# - skip: `/test skip @<sha>` or `/test force-skip @<sha>`@@EXTERNAL_HEADER@@ builds nothing. It
#   joins the build's concurrency group (cancelling a build of the pull request in flight),
#   and sets, with the GitHub App's token, on the named commit (never on whatever the head is
#   by then): @@SKIP_POSTS@@
# - hygiene: a new head (synchronize) or a reopened pull request loses the label, and joins
#   the build's concurrency group to cancel a build in flight: the label vouched for the
#   head that was tested, not for every later push.
name: vouch-trigger

on:
  # Safe here because nothing from the pull request is checked out or run (see above).
  issue_comment: # zizmor: ignore[dangerous-triggers]
    types: [created]
  pull_request_target: # zizmor: ignore[dangerous-triggers]
    types: [synchronize, reopened]

permissions: {}

defaults:
  run:
    shell: bash
@@INSTALL_ENV@@
jobs:
  record:
    name: record /test
    if: >-
      github.event_name == 'issue_comment' &&
      github.event.issue.pull_request &&
      github.event.issue.state == 'open' &&
      contains(github.event.comment.body, '/test') &&
      contains(fromJSON('[@@ASSOCIATIONS@@]'), github.event.comment.author_association)
    runs-on: ubuntu-24.04
    timeout-minutes: @@RECORD_TIMEOUT@@
    concurrency:
      group: vouch-trigger-${{ github.event.issue.number }}
      cancel-in-progress: false@@RECORD_ENVIRONMENT@@
    permissions:
      pull-requests: write # the pull request's head and base; the reply to a refused /test
    outputs:
      head_sha: ${{ steps.record.outputs.head_sha }}
      skip: ${{ steps.record.outputs.skip }}
      targets: ${{ steps.record.outputs.targets }}
    steps:
      - name: Record the request
        id: record
        env:
          GH_TOKEN: ${{ github.token }}
          REPO: ${{ github.repository }}
          PR_NUMBER: ${{ github.event.issue.number }}
          RUN_ID: ${{ github.run_id }}
          AUTHOR: ${{ github.event.comment.user.login }}
        run: |
          # The exact command on a line of its own; `contains` above only saves a runner.
          body=$(jq -r '.comment.body' "$GITHUB_EVENT_PATH" | tr -d '\r')
          if ! grep -Eq '@@TEST_LINE@@' <<<"$body"; then
            echo "no /test line: nothing to record"
            exit 0
          fi
          # The first /test line is the request (the signer reads the same one).
          line=$(grep -E -m1 '^/test([[:blank:]].*)?$' <<<"$body")
          # author_association MEMBER is organization membership; vouching takes write access
          # to this repository (maintain is reported as write).
          permission=$(gh api "repos/$REPO/collaborators/$AUTHOR/permission" --jq .permission)
          case "$permission" in
            admin|maintain|write) ;;
            *)
              echo "::notice::$AUTHOR has permission '$permission' on $REPO, not write: nothing recorded"
              exit 0
              ;;
          esac
          mkdir -p request
          gh api "repos/$REPO/pulls/$PR_NUMBER" > "$RUNNER_TEMP/pull.json"
          if [ "$(jq -r '.state' "$RUNNER_TEMP/pull.json")" != open ]; then
            echo "::notice::pull request #$PR_NUMBER is not open; nothing recorded"
            exit 0
          fi
          head=$(jq -r '.head.sha' "$RUNNER_TEMP/pull.json")
          if ! [[ "$head" =~ ^[0-9a-f]{40}$ ]]; then
            echo "::error::the API gave no head commit for #$PR_NUMBER"
            exit 1
          fi
          # The commit the comment names: its last word, @ and @@MIN_DIGITS@@ to 40 lower-case hex digits.
          read -r -a words <<<"$line"
          last=${words[${#words[@]}-1]}
          named=""
          if [[ "$last" =~ ^@([0-9a-f]{@@MIN_DIGITS@@,40})$ ]]; then
            named=${BASH_REMATCH[1]}
          fi
          targets=$(sed -E 's/^\/test[[:blank:]]*//; s/[[:blank:]]*@[^[:blank:]]*[[:blank:]]*$//' <<<"$line")
          again="/test${targets:+ $targets} @$head"
          reply=""
          if [ -z "$named" ]; then
            if [[ "$last" == @* ]]; then
              why="\`$last\` does not name a commit: name it with @ and at least @@MIN_DIGITS@@ lower-case hex digits (fewer can be matched by a commit pushed to match them)"
            else
              why="it does not name the commit you reviewed, and nothing GitHub records proves which head your comment was written against (a head pushed between your comment and this job would be built in its place)"
            fi
            printf -v reply '@%s this /test was not recorded: %s.\n\nThe head of #%s is now `%s`. If that is the commit you reviewed, comment:' \
              "$AUTHOR" "$why" "$PR_NUMBER" "$head"
          elif [[ "$head" != "$named"* ]]; then
            printf -v reply '@%s this /test was not recorded: the head of #%s moved to `%s` since you named `%s`. Nothing was built. Review the new head; to test it, comment:' \
              "$AUTHOR" "$PR_NUMBER" "$head" "$named"
          fi
          if [ -n "$reply" ]; then
            printf -v reply '%s\n\n    %s\n' "$reply" "$again"
            gh api --method POST "repos/$REPO/issues/$PR_NUMBER/comments" -f body="$reply" --silent
            echo "::notice::/test on #$PR_NUMBER not recorded (head $head, named '${named:-none}'); replied on the pull request"
            exit 0
          fi
          cp "$GITHUB_EVENT_PATH" request/event.json
          jq -n --slurpfile ev "$GITHUB_EVENT_PATH" --slurpfile pr "$RUNNER_TEMP/pull.json" \
            --arg repo "$REPO" --arg run "$RUN_ID" \
            '{schema: "https://vouch.build/test-request/v1", repository: $repo,
              pr: $pr[0].number, head_sha: $pr[0].head.sha,
              head_repository: $pr[0].head.repo.full_name,
              base_ref: $pr[0].base.ref, base_sha: $pr[0].base.sha,
              comment_id: $ev[0].comment.id, author: $ev[0].comment.user.login,
              author_association: $ev[0].comment.author_association,
              recorded_by_run: ($run | tonumber)}' > request/request.json
          # A request that builds nothing (`skip`, `force-skip`@@EXTERNAL_TEXT@@) is recorded
          # too: as the newest request for this head it supersedes an earlier one, so the
          # signer refuses a build started before it.
          skip=""
          if [[ "$targets" =~ @@SKIP_TARGETS@@ ]]; then
            skip=${BASH_REMATCH[1]}
@@EXTERNAL_CHECK@@          fi
          echo "recorded /test for #$PR_NUMBER at $head (named @$named)${skip:+; builds nothing ($skip)}"
          echo "head_sha=$head" >> "$GITHUB_OUTPUT"
          echo "skip=$skip" >> "$GITHUB_OUTPUT"
@@GRANT@@      - name: Upload the request
        if: steps.record.outputs.head_sha != ''
        uses: @@UPLOAD_ARTIFACT@@
        with:
          name: @@REQUEST@@${{ github.event.issue.number }}-${{ steps.record.outputs.head_sha }}
          path: request/
          if-no-files-found: error
          overwrite: true
          retention-days: 14

  label:
    name: label the pull request
    needs: record
    if: needs.record.outputs.head_sha != '' && needs.record.outputs.skip == ''
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    concurrency:
      group: vouch-trigger-label-${{ github.event.issue.number }}
      cancel-in-progress: false
    # The App key lives in this environment; its deployment branches are the default branch
    # and the push branches, so a pull request's own workflow runs cannot read it.
    environment: @@ENVIRONMENT@@
    permissions: {}
    steps:
@@LABEL_APP_TOKEN@@      - name: Label the pull request and acknowledge the comment
        env:
          GH_TOKEN: ${{ steps.token.outputs.token }}
          REPO: ${{ github.repository }}
          PR_NUMBER: ${{ github.event.issue.number }}
          COMMENT_ID: ${{ github.event.comment.id }}
          LABEL: '@@LABEL@@'
        run: |
          # Remove first: re-adding a present label causes no event, so no build.
          label_path=$(jq -rn --arg l "$LABEL" '$l | @uri')
          gh api --method DELETE "repos/$REPO/issues/$PR_NUMBER/labels/$label_path" --silent || true
          gh api --method POST "repos/$REPO/issues/$PR_NUMBER/labels" -f "labels[]=$LABEL" --silent
          gh api --method POST "repos/$REPO/issues/comments/$COMMENT_ID/reactions" \
            -f content=rocket --silent

@@SKIP_JOB@@  hygiene:
    name: drop the label from a new head
    if: github.event_name == 'pull_request_target'
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    # The build's group: queueing here cancels a build of the old head still in flight.
    concurrency:
      group: @@PR_GROUP@@${{ github.event.pull_request.number }}
      cancel-in-progress: true
    permissions:
      pull-requests: write # remove the label
    steps:
      - name: Remove the label
        env:
          GH_TOKEN: ${{ github.token }}
          REPO: ${{ github.repository }}
          PR_NUMBER: ${{ github.event.pull_request.number }}
          LABEL: '@@LABEL@@'
        run: |
          # With GITHUB_TOKEN: the unlabeled event it causes starts no workflow.
          label_path=$(jq -rn --arg l "$LABEL" '$l | @uri')
          if ! out=$(gh api --method DELETE "repos/$REPO/issues/$PR_NUMBER/labels/$label_path" 2>&1); then
            if [[ "$out" == *"Label does not exist"* || "$out" == *"404"* ]]; then
              echo "no label to remove"
            else
              echo "$out"
              exit 1
            fi
          fi
"#,
        &[
            ("HEADER", HEADER),
            ("PROJECT", v.project),
            ("LABEL", TRIGGER_LABEL),
            ("BUILD_FILE", BUILD_FILE),
            ("REQUEST", REQUEST_ARTIFACT_PREFIX),
            ("ASSOCIATIONS", &associations),
            (
                "ASSOCIATIONS_TEXT",
                &v.opts.trigger_associations.join(" or "),
            ),
            ("ENVIRONMENT", TRUSTED_ENVIRONMENT),
            ("PR_GROUP", PR_BUILD_GROUP),
            ("TEST_LINE", test_line),
            ("TEST_FORM", test_form),
            ("MIN_DIGITS", &MIN_NAMED_DIGITS.to_string()),
            (
                "LABEL_APP_TOKEN",
                &crate::render::app_token_step(
                    "GitHub App token",
                    "token",
                    None,
                    &[
                        "permission-issues: write",
                        "permission-pull-requests: write",
                    ],
                ),
            ),
            ("GRANT", &grant_steps),
            ("RECORD_ENVIRONMENT", &record_environment),
            ("RECORD_TIMEOUT", &record_timeout),
            ("INSTALL_ENV", &install_env),
            ("GRANT_TEXT", &grant_text),
            ("UPLOAD_ARTIFACT", &UPLOAD_ARTIFACT.uses()),
            ("SKIP_JOB", &skip_job(v)),
            ("SKIP_TARGETS", SKIP_TARGETS),
            ("EXTERNAL_CHECK", &v.opts.dispatch.external_check()),
            ("EXTERNAL_TEXT", external_text),
            ("EXTERNAL_HEADER", external_header),
            ("SKIP_POSTS", skip_posts),
        ],
    )
}
