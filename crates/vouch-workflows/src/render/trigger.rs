//! `vouch-trigger.yml`: a maintainer's `/test` becomes a recorded request and a label; a new
//! head takes the label away again.

use super::{
    BUILD_FILE, HEADER, PR_BUILD_GROUP, REQUEST_ARTIFACT_PREFIX, TRIGGER_LABEL,
    TRUSTED_ENVIRONMENT, Vars, fill,
};
use crate::pins::{CREATE_APP_TOKEN, UPLOAD_ARTIFACT};

/// A `/test` line (POSIX ERE, one line at a time): `/test` alone or with targets.
const TEST_LINE: &str = "^/test([[:blank:]].*)?$";
/// With FlexCI, targets are required: CuPy's dispatcher sends nothing for a bare `/test`, so
/// building one would sign wheels no test farm ever receives.
const TEST_LINE_WITH_TARGETS: &str = "^/test[[:blank:]]+[^[:blank:]].*$";

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
        "\n#   With the Redis cache it also grants the pull request its own cache user\n#   (`vouch cache grant`: writes pr/<N> only, until the TTL) and adds that user's password\n#   to the record. It reads and writes no cache entry.".into(),
    ]
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
        (TEST_LINE_WITH_TARGETS, "`/test <targets>`")
    } else {
        (TEST_LINE, "`/test` or `/test <targets>`")
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
# - record: @@TEST_FORM@@ on a line of its own, from @@ASSOCIATIONS_TEXT@@, on an open
#   pull request, records the request (the raw event, and the pull request's head and base
#   as the API gives them now) as the artifact @@REQUEST@@<pr>-<head sha> of this
#   default-branch run. The sign workflow accepts only such a record, so a fork cannot forge
#   one. `/testing` is not a request.@@GRANT_TEXT@@
# - label: sets @@LABEL@@ again with a GitHub App token (an event caused by GITHUB_TOKEN
#   starts no workflow, and re-adding a present label causes no event), which starts
#   @@BUILD_FILE@@ for that head.
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
      pull-requests: read # the pull request's head and base when the comment came
    outputs:
      head_sha: ${{ steps.record.outputs.head_sha }}
    steps:
      - name: Record the request
        id: record
        env:
          GH_TOKEN: ${{ github.token }}
          REPO: ${{ github.repository }}
          PR_NUMBER: ${{ github.event.issue.number }}
          RUN_ID: ${{ github.run_id }}
        run: |
          # The exact command on a line of its own; `contains` above only saves a runner.
          body=$(jq -r '.comment.body' "$GITHUB_EVENT_PATH" | tr -d '\r')
          if ! grep -Eq '@@TEST_LINE@@' <<<"$body"; then
            echo "no /test line: nothing to record"
            exit 0
          fi
          mkdir -p request
          gh api "repos/$REPO/pulls/$PR_NUMBER" > "$RUNNER_TEMP/pull.json"
          if [ "$(jq -r '.state' "$RUNNER_TEMP/pull.json")" != open ]; then
            echo "::notice::pull request #$PR_NUMBER is not open; nothing recorded"
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
          head=$(jq -r '.head_sha' request/request.json)
          if ! [[ "$head" =~ ^[0-9a-f]{40}$ ]]; then
            echo "::error::the API gave no head commit for #$PR_NUMBER"
            exit 1
          fi
          echo "recorded /test for #$PR_NUMBER at $head"
          echo "head_sha=$head" >> "$GITHUB_OUTPUT"
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
    if: needs.record.outputs.head_sha != ''
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
      - name: GitHub App token
        id: token
        uses: @@CREATE_APP_TOKEN@@
        with:
          client-id: ${{ vars.VOUCH_APP_CLIENT_ID }}
          private-key: ${{ secrets.VOUCH_APP_PRIVATE_KEY }}
          permission-issues: write
          permission-pull-requests: write
      - name: Label the pull request and acknowledge the comment
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

  hygiene:
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
            ("CREATE_APP_TOKEN", &CREATE_APP_TOKEN.uses()),
            ("GRANT", &grant_steps),
            ("RECORD_ENVIRONMENT", &record_environment),
            ("RECORD_TIMEOUT", &record_timeout),
            ("INSTALL_ENV", &install_env),
            ("GRANT_TEXT", &grant_text),
            ("UPLOAD_ARTIFACT", &UPLOAD_ARTIFACT.uses()),
        ],
    )
}
