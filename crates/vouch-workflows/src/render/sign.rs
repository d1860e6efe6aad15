//! `vouch-sign.yml`: signs a pull request's build (a fork's too) from the default branch, then
//! dispatches it.

use super::{
    BUILD_FILE, BUILD_WORKFLOW_NAME, HEADER, TOKEN_TO_FILE, TRIGGER_FILE, TRUSTED_ENVIRONMENT,
    Vars, fill,
};
use crate::dispatch::Announcer;
use crate::install::{Builders, Consumer};

/// The job that compiles vouch for this run's other jobs. Built here, in the default branch's
/// context, never taken from the pull request's run: that run's artifacts are writable by the
/// pull request's code.
const VOUCH_JOB: &str = "vouch";

/// The condition of every job that does something: a pull request's build that succeeded.
const WHEN_PR_BUILD: &str = r#">-
      github.event.workflow_run.event == 'pull_request' &&
      github.event.workflow_run.conclusion == 'success'"#;
use crate::pins::UPLOAD_ARTIFACT;

/// The `vouch pr-run` flags every job passes: which run, and the workflow files it must be.
const PIN_FLAGS: &str = r#"--repo "$REPO" --run-id "$RUN_ID" --token-file "$tok" \
            --build-workflow .github/workflows/@@BUILD_FILE@@ \
            --trigger-workflow .github/workflows/@@TRIGGER_FILE@@"#;

/// The env every `vouch pr-run` step reads.
const PIN_ENV: &str = r#"          GH_TOKEN: ${{ github.token }}
          REPO: ${{ github.repository }}
          RUN_ID: ${{ github.event.workflow_run.id }}
"#;

/// `[jobs..., <the builder>]` (the builder only with the `source` route).
fn needs(v: &Vars<'_>, builders: &Builders, jobs: &[&str]) -> String {
    let all: Vec<String> = jobs
        .iter()
        .map(|j| (*j).to_owned())
        .chain(v.install().needs(builders, Consumer::Tools))
        .collect();
    match all.as_slice() {
        [one] => one.clone(),
        _ => format!("[{}]", all.join(", ")),
    }
}

fn dispatch_job(v: &Vars<'_>, builders: &Builders) -> String {
    let dispatch = &v.opts.dispatch;
    if dispatch.is_none() {
        return String::new();
    }
    fill(
        r#"
  dispatch:
    name: dispatch the signed build
    needs: @@NEEDS@@
    runs-on: ubuntu-24.04
    timeout-minutes: 10
    # The dispatch secret lives here (default and push branches only; this run is on the
    # default branch).
    environment: @@ENVIRONMENT@@
    permissions:
      actions: read # the build run and the recorded request
      pull-requests: read # the pull request's current head and base
@@PERMISSIONS@@    steps:
@@INSTALL@@      - name: Re-check the pull request and load the recorded request
        env:
@@PIN_ENV@@        run: |
          @@TOKEN_TO_FILE@@
          vouch pr-run pin @@PIN_FLAGS@@ \
            --request-out "$RUNNER_TEMP/request"
@@STEPS@@"#,
        &[
            ("ENVIRONMENT", TRUSTED_ENVIRONMENT),
            ("PERMISSIONS", dispatch.permissions()),
            ("NEEDS", &needs(v, builders, &["sign"])),
            (
                "INSTALL",
                &v.install()
                    .fetch_steps("python3", builders, Consumer::Tools),
            ),
            ("PIN_ENV", PIN_ENV),
            ("TOKEN_TO_FILE", TOKEN_TO_FILE),
            ("PIN_FLAGS", PIN_FLAGS),
            ("STEPS", &dispatch.steps(Announcer::PrSign)),
            ("BUILD_FILE", BUILD_FILE),
            ("TRIGGER_FILE", TRIGGER_FILE),
        ],
    )
}

pub(crate) fn render(v: &Vars<'_>) -> String {
    let builders = Builders::tools_only(VOUCH_JOB);
    let install = v
        .install()
        .fetch_steps("python3", &builders, Consumer::Tools);
    fill(
        r#"@@HEADER@@
#
# Signs the wheels of a pull request's @@BUILD_FILE@@ run of @@PROJECT@@, forks included, in
# the base repository's context: workflow_run runs this file as it is on the default branch,
# with an OIDC token even when the build had none. Nothing from the pull request is checked
# out or run. Every claim comes from the GitHub API (the build run pinned by id: its workflow,
# event, head and conclusion), or from the /test request @@TRIGGER_FILE@@ recorded in a
# default-branch run; the build record's values are signed as reported by the build. The
# pull request must still point at the recorded head and base.
#
# Consumers verify the bundle against this workflow: signer @@SELF@@ at the default
# branch, trigger workflow_run, predicate https://vouch.build/pr-build/v1 naming the pull
# request and head. `status` then posts the commit status @@STATUS@@ on the head with the
# GitHub App's token: success only when every cell the run built (every build job of the
# matrix; pin refuses a run whose pull request changes @@BUILD_FILE@@) was pinned and signed.
# Require it with its source set to that App: a fork's run can report a check of any name,
# and a status posted with GITHUB_TOKEN comes from the same app (github-actions) as the
# fork's own checks, so only the App tells them apart.
name: vouch-sign

on:
  # Safe here because nothing from the pull request runs: its wheels are only hashed.
  workflow_run: # zizmor: ignore[dangerous-triggers]
    workflows: [@@BUILD_NAME@@]
    types: [completed]

permissions: {}

concurrency:
  group: vouch-sign-${{ github.event.workflow_run.id }}
  cancel-in-progress: false

defaults:
  run:
    shell: bash

env:
@@INSTALL_ENV@@
jobs:
@@VOUCH_JOB@@  pin:
    name: pin the build run
@@PIN_NEEDS@@    if: @@WHEN@@
    runs-on: ubuntu-24.04
    timeout-minutes: 20
    permissions:
      actions: read # the build run, its artifacts and the recorded request
      pull-requests: read # the pull request's current head and base
    outputs:
      matrix: ${{ steps.pin.outputs.matrix }}
      complete: ${{ steps.pin.outputs.complete }}
    steps:
@@INSTALL@@      - name: Pin the run, the request and the pull request
        id: pin
        env:
@@PIN_ENV@@        run: |
          @@TOKEN_TO_FILE@@
          vouch pr-run pin @@PIN_FLAGS@@ \
            --matrix-out "$RUNNER_TEMP/matrix.json" --json > "$RUNNER_TEMP/pin.json"
          # A run that built nothing (a label other than the trigger's) has nothing to sign:
          # no matrix, so the sign and dispatch jobs are skipped.
          if jq -e '.include | length > 0' "$RUNNER_TEMP/matrix.json" >/dev/null; then
            echo "matrix=$(jq -c . "$RUNNER_TEMP/matrix.json")" >> "$GITHUB_OUTPUT"
          fi
          # Every build job of the run uploaded its cell (if-no-files-found: error) and the run
          # succeeded, so the run's unsigned artifacts are every planned cell; one pin skipped
          # (a bad name, built first by another run) is a planned cell that will not be signed.
          echo "complete=$(jq '(.skipped // []) | length == 0' "$RUNNER_TEMP/pin.json")" >> "$GITHUB_OUTPUT"

  sign:
    name: sign ${{ matrix.artifact }}
    needs: @@SIGN_NEEDS@@
    if: needs.pin.outputs.matrix != ''
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    permissions:
      actions: read # download the build's artifact by id
      pull-requests: read # re-check the pull request's head
      id-token: write # the OIDC token Sigstore's Fulcio certifies (keyless signing)
      attestations: write # records the bundle in this repository's attestation store
    strategy:
      fail-fast: false
      matrix: ${{ fromJson(needs.pin.outputs.matrix) }}
    steps:
@@INSTALL@@      - name: Sign exactly the cell's wheel
        env:
@@PIN_ENV@@          ARTIFACT: ${{ matrix.artifact }}
        run: |
          @@TOKEN_TO_FILE@@
          vouch pr-run sign @@PIN_FLAGS@@ \
            --artifact "$ARTIFACT" --signer sigstore --record-github --out signed
      - name: Upload the wheel with its bundle
        uses: @@UPLOAD_ARTIFACT@@
        with:
          name: ${{ matrix.artifact }}
          path: signed/
          if-no-files-found: error
          overwrite: true

  status:
    name: report the signed build
    needs: [pin, sign]
    if: always() && needs.pin.outputs.matrix != ''
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    # The App key lives here (default and push branches only; this run is on the default
    # branch). The status is the App's, which no run of a pull request can impersonate.
    environment: @@ENVIRONMENT@@
    permissions: {}
    steps:
@@APP_TOKEN@@      - name: Commit status @@STATUS@@ on the built head
        env:
          GH_TOKEN: ${{ steps.token.outputs.token }}
          REPO: ${{ github.repository }}
          HEAD_SHA: ${{ github.event.workflow_run.head_sha }}
          RESULT: ${{ needs.sign.result }}
          COMPLETE: ${{ needs.pin.outputs.complete }}
          RUN_URL: ${{ github.server_url }}/${{ github.repository }}/actions/runs/${{ github.run_id }}
          CONTEXT: '@@STATUS@@'
        run: |
          if [ "$RESULT" = success ] && [ "$COMPLETE" = true ]; then
            state=success description="every planned cell built and signed"
          elif [ "$RESULT" = success ]; then
            state=failure description="some built cells were not signed (see the pin job)"
          else
            state=failure description="signing did not succeed ($RESULT)"
          fi
          gh api --method POST "repos/$REPO/statuses/$HEAD_SHA" -f state="$state" \
            -f context="$CONTEXT" -f description="$description" -f target_url="$RUN_URL" --silent
@@DISPATCH@@"#,
        &[
            ("HEADER", HEADER),
            ("PROJECT", v.project),
            ("BUILD_NAME", BUILD_WORKFLOW_NAME),
            ("SELF", super::SIGN_FILE),
            ("INSTALL_ENV", &v.install().env()),
            ("INSTALL", &install),
            ("PIN_ENV", PIN_ENV),
            ("TOKEN_TO_FILE", TOKEN_TO_FILE),
            ("PIN_FLAGS", PIN_FLAGS),
            ("DISPATCH", &dispatch_job(v, &builders)),
            (
                "VOUCH_JOB",
                &v.install().builder_jobs(&builders, "", WHEN_PR_BUILD),
            ),
            ("WHEN", WHEN_PR_BUILD),
            (
                "PIN_NEEDS",
                &match v.install().needs(&builders, Consumer::Tools).as_slice() {
                    [] => String::new(),
                    [one] => format!("    needs: {one}\n"),
                    many => format!("    needs: [{}]\n", many.join(", ")),
                },
            ),
            ("SIGN_NEEDS", &needs(v, &builders, &["pin"])),
            ("BUILD_FILE", BUILD_FILE),
            ("TRIGGER_FILE", TRIGGER_FILE),
            ("UPLOAD_ARTIFACT", &UPLOAD_ARTIFACT.uses()),
            ("STATUS", super::REQUIRED_STATUS),
            ("ENVIRONMENT", TRUSTED_ENVIRONMENT),
            (
                "APP_TOKEN",
                &crate::render::app_token_step(
                    "GitHub App token",
                    "token",
                    None,
                    &["permission-statuses: write"],
                ),
            ),
        ],
    )
}
