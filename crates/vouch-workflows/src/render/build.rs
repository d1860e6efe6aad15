//! `vouch-build.yml`: the matrix, for pushes (trusted: build, sign in-run, dispatch in-run) and
//! for pull requests a maintainer vouched for (build only; `vouch-sign.yml` signs).

use super::{
    ARTIFACT_NAME_STEP, ATTEST_SDIST_JOB, BUILD_WORKFLOW_NAME, HEADER, MATRIX_PYTHON,
    PR_BUILD_GROUP, REQUEST_ARTIFACT_PREFIX, SDIST_ARTIFACT, SDIST_JOB, SENTINEL_JOB, SIGN_FILE,
    TOKEN_TO_FILE, TRIGGER_FILE, TRIGGER_LABEL, TRUSTED_ENVIRONMENT, Vars, fill, indent,
};
use crate::Error;
use crate::cache::{BuildCache, Trust};
use crate::dispatch::Announcer;
use crate::guards;
use crate::install::{Builders, Consumer};
use crate::pins::{CHECKOUT, DOWNLOAD_ARTIFACT, SETUP_PYTHON, UPLOAD_ARTIFACT};

/// The job that runs `twine check --strict` on every cell's wheel.
pub const TWINE_CHECK_JOB: &str = "twine-check";

/// The build job of a push (trusted: may write its branch's cache scope).
pub const PUSH_BUILD_JOB: &str = "build-push";
/// The build job of a pull request (runs the PR's code: only PR-fenced credentials).
pub const PR_BUILD_JOB: &str = "build-pr";
/// Secrets only trusted jobs may reference; they live in [`TRUSTED_ENVIRONMENT`], and the
/// audit refuses them in any job a pull request can start.
pub const TRUSTED_ONLY_SECRETS: &[&str] = &[
    "VOUCH_CACHE_PASSWORD",
    "VOUCH_CACHE_ADMIN_PASSWORD",
    "VOUCH_SEAL_KEY",
    "VOUCH_APP_PRIVATE_KEY",
    "FLEXCI_WEBHOOK_SECRET",
];

/// The build job, once per trust level. GitHub evaluates a job's `if:` before the job is
/// handed to a runner, and sends a runner only the secrets its job references, so a pull
/// request's runner (which runs the PR's code) never holds the push password; a single job
/// choosing the secret in a step expression would put both into its memory.
const BUILD_JOB: &str = r#"  @@JOB@@:
    name: build ${{ matrix.cell }}@@NAME_SUFFIX@@
    needs: @@NEEDS@@
    # @@WHY@@
    if: @@WHEN@@
    runs-on: ${{ matrix.runner }}
    # A Linux cell builds in the profile's manylinux image (pinned by digest), so its wheel
    # links against that image's glibc, not the runner's; an empty value runs on the runner.
    container: ${{ matrix.container }} # zizmor: ignore[unpinned-images] -- the profile refuses an image not pinned by @sha256
    timeout-minutes: @@BUILD_TIMEOUT@@@@ENVIRONMENT@@
    permissions:
      contents: read # check out the source
@@PERMISSIONS@@    strategy:
      fail-fast: false
      matrix: ${{ fromJson(needs.plan.outputs.matrix) }}
@@JOB_ENV@@    steps:
@@FETCH_VOUCH@@@@WINDOWS_GUARDS@@      - name: Check out
        uses: @@CHECKOUT@@
        with:
          # A pull request's head, exactly: the commit the /test request recorded.
          ref: ${{ github.event.pull_request.head.sha || github.sha }}
          persist-credentials: false
      # In an image the interpreter is the image's own (/opt/python/<tag>/bin/python).
      - name: Set up Python ${{ matrix.python }}
        id: python
        if: matrix.python_path == ''
        uses: @@SETUP_PYTHON@@
        with:
          python-version: ${{ matrix.python }}
      - name: Download the sdist
        uses: @@DOWNLOAD_ARTIFACT@@
        with:
          name: @@SDIST_ARTIFACT@@
          path: sdist
@@FREE_DISK@@@@ARTIFACT_NAME@@@@CACHE_STEPS@@@@BEFORE_BUILD@@@@CACHE_STEPS_LAST@@      - name: Build ${{ matrix.cell }}
        env:
          CELL: ${{ matrix.cell }}
          PYTHON: @@MATRIX_PYTHON@@
          HEAD_SHA: ${{ github.event.pull_request.head.sha || github.sha }}
@@BUILD_ENV@@        run: |
@@BUILD_SCRIPT@@          # Every cell builds from the one sdist, as `pip install` from PyPI would: a file the
          # sdist leaves out (MANIFEST.in) fails here, not on a user's machine.
          sdists=(sdist/*.tar.gz)
          if [ ${#sdists[@]} -ne 1 ] || [ ! -f "${sdists[0]}" ]; then
            echo "::error::expected one sdist in the @@SDIST_ARTIFACT@@ artifact"
            exit 1
          fi
          # The cell's toolchain, template and environment come from the profile; the wheel
          # and its build record (<wheel>.build.json) go to dist/.
          vouch build --profile "$VOUCH_PROFILE" --cell "$CELL" --source "${sdists[0]}" --out dist \
            --python "$PYTHON" --sha "$HEAD_SHA"@@BUILD_ARGS@@
@@AFTER_BUILD@@      - name: Upload the unsigned build
        uses: @@UPLOAD_ARTIFACT@@
        with:
          name: unsigned-${{ steps.name.outputs.name }}
          path: dist/
          if-no-files-found: error
          overwrite: true
          retention-days: 3

"#;

/// The push build's seal key: it authenticates the sealed venvs and toolkits a push build
/// reuses on a self-hosted runner.
const SEAL_ENV: &str = "          VOUCH_SEAL_KEY: ${{ secrets.VOUCH_SEAL_KEY }}\n";
const SEAL_SCRIPT: &str = r#"# The key that authenticates the sealed venvs and toolkits this build reuses on a
# self-hosted runner: a pull request's build never holds it, so cannot forge them.
seal_arg=()
if [ -n "$VOUCH_SEAL_KEY" ]; then
  (umask 077 && printf '%s' "$VOUCH_SEAL_KEY" > "$seal")
  seal_arg=(--seal-key-file "$seal")
fi
unset VOUCH_SEAL_KEY
"#;

/// One build job: its cache (per `[workflows.cache]`), and for pushes the seal key.
fn build_job(v: &Vars<'_>, builders: &Builders, trust: Trust, hooks: [&str; 2]) -> String {
    let cache = BuildCache::new(&v.opts.cache, &v.opts.cache_tools, trust);
    let push = trust == Trust::Push;
    let mut files = cache.files.clone();
    if push {
        files.push(("seal", "vouch-seal-key"));
    }
    let mut script = String::new();
    for (var, path) in &files {
        script.push_str(&format!("{var}=\"$RUNNER_TEMP/{path}\"\n"));
    }
    if !files.is_empty() {
        let vars: Vec<String> = files.iter().map(|(v, _)| format!("\"${v}\"")).collect();
        script.push_str(&format!("trap 'rm -rf {}' EXIT\n", vars.join(" ")));
    }
    if push {
        script.push_str(SEAL_SCRIPT);
    }
    script.push_str(&cache.script);
    let mut env = cache.env.clone();
    let mut args = cache.args.to_owned();
    if push {
        env.push_str(SEAL_ENV);
        args.push_str(" \"${seal_arg[@]}\"");
    }
    // Every cell builds from the sdist job's file, with the vouch its platform's builder made.
    let mut needs: Vec<String> = match cache.needs.strip_prefix('[') {
        Some(list) => list
            .trim_end_matches(']')
            .split(", ")
            .map(str::to_owned)
            .collect(),
        None => vec![cache.needs.to_owned()],
    };
    needs.push(SDIST_JOB.to_owned());
    needs.extend(v.install().needs(builders, Consumer::Matrix));
    let needs = format!("[{}]", needs.join(", "));
    let fetch = v
        .install()
        .fetch_steps(MATRIX_PYTHON, builders, Consumer::Matrix);
    let (id, suffix, why, when, environment) = match trust {
        Trust::Push => (
            PUSH_BUILD_JOB,
            "",
            "A push: trusted code and trusted secrets.",
            "github.event_name == 'push'",
            format!(
                "\n    # The seal key (and the Redis cache's push password) live in this environment (default\n    # and push branches only), out of reach of a pull request's own workflow runs.\n    environment: {TRUSTED_ENVIRONMENT}"
            ),
        ),
        Trust::Pr => (
            PR_BUILD_JOB,
            " (PR)",
            "A pull request: its runner never receives a trusted secret, and it cannot sign.",
            "github.event_name == 'pull_request'",
            String::new(),
        ),
    };
    // Only this job's own placeholders; the shared ones are filled with the workflow.
    [
        ("@@JOB@@", id),
        ("@@NAME_SUFFIX@@", suffix),
        ("@@NEEDS@@", &needs),
        ("@@WHY@@", why),
        ("@@WHEN@@", when),
        ("@@ENVIRONMENT@@", &environment),
        ("@@PERMISSIONS@@", &cache.permissions),
        ("@@JOB_ENV@@", &cache.job_env),
        ("@@CACHE_STEPS@@", &cache.steps),
        ("@@CACHE_STEPS_LAST@@", &cache.steps_last),
        ("@@BUILD_ENV@@", &env),
        ("@@BUILD_SCRIPT@@", &indent(&script, 10)),
        ("@@BUILD_ARGS@@", &args),
        ("@@BEFORE_BUILD@@", hooks[0]),
        ("@@FETCH_VOUCH@@", &fetch),
        ("@@WINDOWS_GUARDS@@", guards::WINDOWS_BEFORE_CHECKOUT),
        ("@@FREE_DISK@@", guards::FREE_DISK),
        ("@@AFTER_BUILD@@", hooks[1]),
    ]
    .iter()
    .fold(BUILD_JOB.to_owned(), |t, (k, v)| t.replace(k, v))
}

fn build_jobs(v: &Vars<'_>, builders: &Builders) -> Result<String, Error> {
    let before = crate::steps::render(&v.opts.steps.before_build, "before_build")?;
    let after = crate::steps::render(&v.opts.steps.after_build, "after_build")?;
    Ok(build_job(v, builders, Trust::Push, [&before, &after])
        + &build_job(v, builders, Trust::Pr, [&before, &after]))
}

/// `[a, b, ...]` (or `a` alone) for a job's `needs:`.
fn needs(jobs: &[&str], vouch: Vec<String>) -> String {
    let all: Vec<String> = jobs.iter().map(|j| (*j).to_owned()).chain(vouch).collect();
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
    let install = v
        .install()
        .fetch_steps("python3", builders, Consumer::Tools);
    fill(
        r#"  dispatch:
    name: dispatch the signed build
    needs: @@NEEDS@@
    if: github.event_name == 'push'
    runs-on: ubuntu-24.04
    timeout-minutes: 10
    # The dispatch secret lives here (default and push branches only).
    environment: @@ENVIRONMENT@@
    permissions:
@@PERMISSIONS@@    steps:
@@INSTALL@@@@STEPS@@
"#,
        &[
            ("ENVIRONMENT", TRUSTED_ENVIRONMENT),
            (
                "NEEDS",
                &needs(&["attest"], v.install().needs(builders, Consumer::Tools)),
            ),
            (
                "PERMISSIONS",
                match dispatch.permissions() {
                    "" => "      {}\n",
                    p => p,
                },
            ),
            ("INSTALL", &install),
            ("STEPS", &dispatch.steps(Announcer::PushBuild)),
        ],
    )
}

pub(crate) fn render(v: &Vars<'_>) -> Result<String, Error> {
    let builders = Builders::for_matrix(&v.opts.machines);
    let build_jobs = build_jobs(v, &builders)?;
    let install_ubuntu = v
        .install()
        .fetch_steps("python3", &builders, Consumer::Tools);
    let tools_needs = |jobs: &[&str]| needs(jobs, v.install().needs(&builders, Consumer::Tools));
    let vouch_jobs = v.install().builder_jobs(
        &builders,
        "request",
        "needs.request.outputs.build == 'true'",
    );
    let dispatch = dispatch_job(v, &builders);
    let text = fill(
        r#"@@HEADER@@
#
# Builds every cell of the vouch profile @@PROFILE@@ (project @@PROJECT@@):
#
# - push to main, v<digit>* or hotfix-*, or a v<digit>* tag: trusted. Builds (may write its branch's
#   compiler-cache scope), signs in-run (`attest`: the only job here with an OIDC token; it
#   checks out and runs nothing), then dispatches the signed build (`dispatch`).
# - pull request labelled @@LABEL@@ by @@TRIGGER_FILE@@: builds exactly the head a /test
#   request recorded (`request` finds the record; without one there is nothing to build).
#   No job here can sign or read a trusted secret; @@SIGN_FILE@@ signs from the default
#   branch once this run succeeded.
# - any other label: nothing runs, and the check reports as "vouch-build (nothing to build)".
#
# @@SENTINEL@@ sums the run up; it reports under that name only when there was something
# to build. Require the commit status vouch/pr-build instead (posted by @@SIGN_FILE@@ from the
# default branch): this file, as a pull request runs it, is the pull request's own copy.
name: @@BUILD_NAME@@

on:
  pull_request:
    types: [labeled]
  push:
    # `v[0-9]*`, not `v*`: a branch like `vendor-bump` is not a release branch.
    branches: [main, 'v[0-9]*', 'hotfix-*']
    tags: ['v[0-9]*']

permissions: {}

# A pull request's build shares its group with the trigger's hygiene job, which cancels it
# when a new head arrives. Pushes are never cancelled. Any other label gets a group of its own.
concurrency:
  group: ${{ github.event_name == 'push' && format('vouch-push-{0}-{1}', github.ref, github.sha) || github.event.label.name == '@@LABEL@@' && format('@@PR_GROUP@@{0}', github.event.pull_request.number) || format('vouch-noop-{0}', github.run_id) }}
  cancel-in-progress: ${{ github.event_name == 'pull_request' }}

defaults:
  run:
    shell: bash

env:
  VOUCH_PROFILE: '@@PROFILE@@'
@@INSTALL_ENV@@
jobs:
  request:
    name: find the /test request
    if: github.event_name == 'push' || github.event.label.name == '@@LABEL@@'
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    permissions:
      actions: read # look up the request artifact
@@PUSH_PERMISSION@@    outputs:
      build: ${{ steps.find.outputs.build }}
      # The newest record of the request: its artifact and the trigger run that uploaded it.
      artifact_id: ${{ steps.find.outputs.artifact_id }}
      run_id: ${{ steps.find.outputs.run_id }}
    steps:
      - name: A /test recorded for this head by a default-branch run
        id: find
        env:
          GH_TOKEN: ${{ github.token }}
          EVENT: ${{ github.event_name }}
          REPO: ${{ github.repository }}
          REPO_ID: ${{ github.event.repository.id }}
          DEFAULT_BRANCH: ${{ github.event.repository.default_branch }}
          PR_NUMBER: ${{ github.event.pull_request.number }}
          HEAD_SHA: ${{ github.event.pull_request.head.sha }}
@@PUSH_ENV@@        run: |
@@PUSH_GUARD@@          # Not a security boundary (the sign workflow checks again, from the default branch):
          # it keeps a label set by hand, or a head that moved, from starting a build. The
          # newest record is the one a build uses (with the Redis cache, each /test grants the
          # pull request's cache user a new password).
          found=$(gh api "repos/$REPO/actions/artifacts?name=@@REQUEST@@$PR_NUMBER-$HEAD_SHA" \
            | jq -c --arg branch "$DEFAULT_BRANCH" --argjson repo "$REPO_ID" \
              '[.artifacts[] | select(.expired == false and .workflow_run.head_branch == $branch
                 and .workflow_run.head_repository_id == $repo)] | max_by(.created_at)
               | if . then {id, run: .workflow_run.id} else empty end')
          if [ -n "$found" ]; then
            echo "build=true" >> "$GITHUB_OUTPUT"
            echo "artifact_id=$(jq -r .id <<<"$found")" >> "$GITHUB_OUTPUT"
            echo "run_id=$(jq -r .run <<<"$found")" >> "$GITHUB_OUTPUT"
          else
            echo "::notice::no /test recorded for #$PR_NUMBER at $HEAD_SHA: nothing to build"
            echo "build=false" >> "$GITHUB_OUTPUT"
          fi

@@VOUCH_JOBS@@  plan:
    name: plan
    needs: @@PLAN_NEEDS@@
    if: needs.request.outputs.build == 'true'
    runs-on: ubuntu-24.04
    timeout-minutes: 15
    permissions:
      contents: read # check out the profile
    outputs:
      matrix: ${{ steps.plan.outputs.matrix }}
    steps:
@@INSTALL_UBUNTU@@      - name: Check out
        uses: @@CHECKOUT@@
        with:
          ref: ${{ github.event.pull_request.head.sha || github.sha }}
          persist-credentials: false
      - name: Plan the matrix
        id: plan
        run: |
          matrix=$(vouch plan --profile "$VOUCH_PROFILE" --format github --event "$GITHUB_EVENT_NAME")
          echo "matrix=$matrix" >> "$GITHUB_OUTPUT"

  @@SDIST_JOB@@:
    name: sdist
    needs: @@PLAN_NEEDS@@
    if: needs.request.outputs.build == 'true'
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    permissions:
      contents: read # check out the source it packs
    steps:
@@INSTALL_UBUNTU@@      - name: Check out
        uses: @@CHECKOUT@@
        with:
          ref: ${{ github.event.pull_request.head.sha || github.sha }}
          persist-credentials: false
@@SUBMODULES@@@@SUBMODULES_CHECKED_OUT@@      - name: Build the sdist once
        run: |
          # Fixed epoch and a normalized tar.gz: a rebuild from the same commit gives the same
          # bytes. Every cell's build job builds its wheel from this one file.
          vouch sdist --profile "$VOUCH_PROFILE" --source . --out sdist
@@TWINE_SDIST@@      - name: Upload the sdist
        uses: @@UPLOAD_ARTIFACT@@
        with:
          name: @@SDIST_ARTIFACT@@
          path: sdist/*.tar.gz
          if-no-files-found: error
          overwrite: true
          retention-days: 3

@@BUILD_JOBS@@  @@TWINE_JOB@@:
    name: twine check --strict
    needs: [@@PUSH_JOB@@, @@PR_JOB@@]
    # After whichever build job this event ran; no vouch, no checkout: it reads the wheels only.
    if: ${{ !cancelled() && (needs.@@PUSH_JOB@@.result == 'success' || needs.@@PR_JOB@@.result == 'success') }}
    runs-on: ubuntu-24.04
    timeout-minutes: 15
    permissions: {}
    steps:
      - name: Download every cell's unsigned build
        uses: @@DOWNLOAD_ARTIFACT@@
        with:
          pattern: unsigned-*
          path: dist
          merge-multiple: true
@@TWINE_WHEELS@@
  attest:
    name: attest ${{ matrix.cell }}
    needs: @@ATTEST_NEEDS@@
    if: github.event_name == 'push'
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    permissions:
      id-token: write # the OIDC token Sigstore's Fulcio certifies (keyless signing)
      attestations: write # records the bundle in this repository's attestation store
    strategy:
      fail-fast: false
      matrix: ${{ fromJson(needs.plan.outputs.matrix) }}
    steps:
@@INSTALL_UBUNTU@@@@ARTIFACT_NAME@@      - name: Download the unsigned build
        uses: @@DOWNLOAD_ARTIFACT@@
        with:
          name: unsigned-${{ steps.name.outputs.name }}
          path: dist
      - name: Sign the provenance (Sigstore, keyless) and record it with GitHub
        env:
          CELL: ${{ matrix.cell }}
          ARTIFACT: ${{ steps.name.outputs.name }}
          GH_TOKEN: ${{ github.token }}
        run: |
          @@TOKEN_TO_FILE@@
          # Exactly the cell's one wheel; its build record (a trusted push build's) supplies
          # the claims a rebuild needs.
          wheels=(dist/*.whl)
          records=(dist/*.build.json)
          if [ ${#wheels[@]} -ne 1 ] || [ ! -f "${wheels[0]}" ] \
              || [ ${#records[@]} -ne 1 ] || [ ! -f "${records[0]}" ]; then
            echo "::error::expected one wheel and one build record in unsigned-$ARTIFACT"
            exit 1
          fi
          claims=()
          epoch=$(jq -r '.source_date_epoch // empty' "${records[0]}")
          if [[ "$epoch" =~ ^[0-9]+$ ]]; then claims+=(--source-date-epoch "$epoch"); fi
          digest=$(jq -r '.inputs_digest // empty' "${records[0]}")
          if [ -n "$digest" ]; then claims+=(--build-inputs-digest "$digest"); fi
          scope=$(jq -r '.cache.policy.write // empty' "${records[0]}")
          if [ -n "$scope" ]; then claims+=(--cache-scope "$scope"); fi
          # --record-github: `gh attestation verify` and `vouch install --github-attestations`
          # then find the evidence by the wheel's digest, whatever the artifact is called.
          vouch attest --signer sigstore --cell "$CELL" --artifact-name "$ARTIFACT" \
            "${claims[@]}" --record-github --token-file "$tok" \
            --out "dist/$ARTIFACT.sigstore.json" "${wheels[0]}"
      - name: Upload the wheel with its bundle
        uses: @@UPLOAD_ARTIFACT@@
        with:
          name: ${{ steps.name.outputs.name }}
          path: dist/
          if-no-files-found: error
          overwrite: true

  @@ATTEST_SDIST_JOB@@:
    name: attest the sdist
    needs: @@ATTEST_SDIST_NEEDS@@
    if: github.event_name == 'push'
    runs-on: ubuntu-24.04
    timeout-minutes: 30
    permissions:
      id-token: write # the OIDC token Sigstore's Fulcio certifies (keyless signing)
      attestations: write # records the bundle in this repository's attestation store
    steps:
@@INSTALL_UBUNTU@@      - name: Download the sdist every cell built from
        uses: @@DOWNLOAD_ARTIFACT@@
        with:
          name: @@SDIST_ARTIFACT@@
          path: sdist
      - name: Sign the sdist's provenance (Sigstore, keyless) and record it with GitHub
        env:
          GH_TOKEN: ${{ github.token }}
        run: |
          @@TOKEN_TO_FILE@@
          sdists=(sdist/*.tar.gz)
          if [ ${#sdists[@]} -ne 1 ] || [ ! -f "${sdists[0]}" ]; then
            echo "::error::expected one sdist in the @@SDIST_ARTIFACT@@ artifact"
            exit 1
          fi
          vouch attest --signer sigstore --artifact-name @@SDIST_ARTIFACT@@ \
            --record-github --token-file "$tok" \
            --out "${sdists[0]}.sigstore.json" "${sdists[0]}"
      - name: Upload the sdist with its bundle
        uses: @@UPLOAD_ARTIFACT@@
        with:
          name: @@SDIST_ARTIFACT@@-signed
          path: sdist/
          if-no-files-found: error
          overwrite: true

@@DISPATCH@@  @@SENTINEL@@:
    name: ${{ needs.request.outputs.build == 'true' && '@@SENTINEL@@' || 'vouch-build (nothing to build)' }}
    needs: [request, plan, @@SDIST_JOB@@, @@PUSH_JOB@@, @@PR_JOB@@, @@TWINE_JOB@@, attest, @@ATTEST_SDIST_JOB@@]
    if: always()
    runs-on: ubuntu-24.04
    timeout-minutes: 5
    permissions: {}
    steps:
      - name: Every job this event needs succeeded
        env:
          BUILD: ${{ needs.request.outputs.build }}
          # The build job of the other trust level is skipped by design and not counted;
          # a pull request's run does not sign.
          RESULTS: >-
            ${{ needs.request.result }}
            ${{ needs.plan.result }}
            ${{ needs.@@SDIST_JOB@@.result }}
            ${{ github.event_name == 'push' && needs.@@PUSH_JOB@@.result || needs.@@PR_JOB@@.result }}
            ${{ needs.@@TWINE_JOB@@.result }}
            ${{ github.event_name == 'push' && needs.attest.result || 'success' }}
            ${{ github.event_name == 'push' && needs.@@ATTEST_SDIST_JOB@@.result || 'success' }}
        run: |
          if [ "$BUILD" != true ]; then
            echo "nothing to build"
            exit 0
          fi
          echo "request, plan, sdist, build, twine check, attest, attest the sdist: $RESULTS"
          for r in $RESULTS; do
            if [ "$r" != success ]; then
              echo "::error::a job this check needs did not succeed ($r)"
              exit 1
            fi
          done
"#,
        &[
            ("BUILD_JOBS", &build_jobs),
            ("PUSH_GUARD", &super::push_guard::script()),
            ("PUSH_ENV", super::push_guard::ENV),
            ("PUSH_PERMISSION", super::push_guard::PERMISSION),
            ("VOUCH_JOBS", &vouch_jobs),
            ("PLAN_NEEDS", &tools_needs(&["request"])),
            (
                "ATTEST_NEEDS",
                &tools_needs(&["plan", PUSH_BUILD_JOB, TWINE_CHECK_JOB]),
            ),
            (
                "ATTEST_SDIST_NEEDS",
                &tools_needs(&[SDIST_JOB, PUSH_BUILD_JOB]),
            ),
            ("TWINE_JOB", TWINE_CHECK_JOB),
            (
                "TWINE_WHEELS",
                &guards::twine_check("every wheel", "dist/*.whl", true),
            ),
            (
                "TWINE_SDIST",
                &guards::twine_check("the sdist", "sdist/*.tar.gz", false),
            ),
            ("SUBMODULES", guards::checkout_submodules(v.opts.submodules)),
            ("SUBMODULES_CHECKED_OUT", guards::SUBMODULES_CHECKED_OUT),
            ("DISPATCH", &dispatch),
            ("PUSH_JOB", PUSH_BUILD_JOB),
            ("PR_JOB", PR_BUILD_JOB),
            ("HEADER", HEADER),
            ("PROJECT", v.project),
            ("PROFILE", &v.opts.profile_path),
            ("LABEL", TRIGGER_LABEL),
            ("PR_GROUP", PR_BUILD_GROUP),
            ("REQUEST", REQUEST_ARTIFACT_PREFIX),
            ("TRIGGER_FILE", TRIGGER_FILE),
            ("SIGN_FILE", SIGN_FILE),
            ("SENTINEL", SENTINEL_JOB),
            ("BUILD_NAME", BUILD_WORKFLOW_NAME),
            ("INSTALL_ENV", &v.install().env()),
            ("BUILD_TIMEOUT", &v.opts.build_timeout_minutes.to_string()),
            ("INSTALL_UBUNTU", &install_ubuntu),
            ("ARTIFACT_NAME", ARTIFACT_NAME_STEP),
            ("CHECKOUT", &CHECKOUT.uses()),
            ("SETUP_PYTHON", &SETUP_PYTHON.uses()),
            ("UPLOAD_ARTIFACT", &UPLOAD_ARTIFACT.uses()),
            ("DOWNLOAD_ARTIFACT", &DOWNLOAD_ARTIFACT.uses()),
            ("SDIST_JOB", SDIST_JOB),
            ("ATTEST_SDIST_JOB", ATTEST_SDIST_JOB),
            ("SDIST_ARTIFACT", SDIST_ARTIFACT),
            ("MATRIX_PYTHON", MATRIX_PYTHON),
            ("TOKEN_TO_FILE", TOKEN_TO_FILE),
        ],
    );
    Ok(text)
}
