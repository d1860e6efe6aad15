//! Issue 14: pull-request builds, forks included, signed in a trusted context. The project's
//! fake GitHub serves a fork PR's finished build run (`vouch-build.yml`, `pull_request`) with
//! an unsigned wheel, and a `/test` request recorded by a default-branch `issue_comment` run of
//! `vouch-trigger.yml`. `vouch pr-run pin` and `vouch pr-run sign`, acting as `vouch-sign.yml`
//! (a `workflow_run` run of the default branch), sign it with the local Sigstore instance; the
//! result is published as the sign run's artifact; `vouch fetch`/`install` on the FlexCI side
//! verifies it against the signer-workflow policy. Every refusal is shown with its exit status.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use serde_json::{Value, json};
use vouch_testgh::FakeGithub;
use vouch_testsig::{GithubClaims, LocalSigstore};

use crate::common::*;
use crate::vouch_snapshot;

const REPO: &str = "cupy/cupy";
const REPO_ID: u64 = 1;
const FORK: &str = "contributor/cupy";
const FORK_ID: u64 = 99;
/// The PR head the build run built.
const HEAD: &str = "1111111111111111111111111111111111111111";
const MOVED: &str = "2222222222222222222222222222222222222222";
const OTHER: &str = "3333333333333333333333333333333333333333";
/// The default branch's head (what a workflow_run run checks out, and its certificate names).
const MAIN: &str = "5555555555555555555555555555555555555555";
const TOKEN: &str = "ghp_PrSignTokenThatMustNeverAppear0123456789";
const PR: u64 = 7;
const BUILD_WF: u64 = 11;
const TRIGGER_WF: u64 = 12;
const SIGN_WF: u64 = 13;
const REQUEST_RUN: u64 = 650;
const BUILD_RUN: u64 = 700;
const SIGN_RUN: u64 = 900;
const REQUEST_ARTIFACT: u64 = 2001;
const UNSIGNED_ARTIFACT: u64 = 2002;
const SIGNED_ARTIFACT: u64 = 3001;
const DIST: &str = "vouch-sample";
/// The wheel most tests sign: bytes only, named as the cell's wheel (the signer checks the
/// name against the artifact's cell, and signs the digest).
const FAKE_WHEEL: &str = "vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl";

fn sign_workflow_ref(git_ref: &str) -> String {
    format!("{REPO}/.github/workflows/vouch-sign.yml@{git_ref}")
}

struct World {
    dir: tempfile::TempDir,
    sigstore: LocalSigstore,
    store: PathBuf,
    root: PathBuf,
    /// The cell's wheel: its file name, bytes and Python (`3.11`).
    wheel: String,
    data: Vec<u8>,
    py: String,
}

impl World {
    /// The normal world with a wheel of bytes only.
    fn new() -> World {
        World::with_wheel(FAKE_WHEEL, b"a fork's wheel".to_vec())
    }

    /// A fork PR (#7, head HEAD from `contributor/cupy`), its request recorded by run 650 of
    /// the trigger workflow on main, its build run 700 with `unsigned-<artifact>` holding
    /// `wheel` and its build record.
    fn with_wheel(wheel: &str, data: Vec<u8>) -> World {
        let dir = tempdir();
        let sigstore = LocalSigstore::start();
        let root = dir.path().join("trusted_root.json");
        std::fs::write(&root, sigstore.trusted_root().to_string()).unwrap();
        let tags = wheel.split('-').nth(2).unwrap();
        let py = format!("3.{}", &tags["cp3".len()..]);
        let w = World {
            store: dir.path().join("store"),
            dir,
            sigstore,
            root,
            wheel: wheel.to_owned(),
            data,
            py,
        };
        w.write("repository.json", repo_json(REPO, REPO_ID, false));
        for (file, id) in [
            ("vouch-build.yml", BUILD_WF),
            ("vouch-trigger.yml", TRIGGER_WF),
            ("vouch-sign.yml", SIGN_WF),
        ] {
            w.write(
                &format!("workflows/{file}.json"),
                json!({ "id": id, "path": format!(".github/workflows/{file}"), "state": "active" }),
            );
        }
        w.write(
            &format!("runs/{REQUEST_RUN}.json"),
            run_json(
                REQUEST_RUN,
                TRIGGER_WF,
                "vouch-trigger.yml",
                "issue_comment",
                MAIN,
                "main",
                REPO,
            ),
        );
        w.put_request(
            REQUEST_ARTIFACT,
            PR,
            &request_json(PR),
            trusted_run(REQUEST_RUN),
        );
        w.write(
            &format!("runs/{BUILD_RUN}.json"),
            run_json(
                BUILD_RUN,
                BUILD_WF,
                "vouch-build.yml",
                "pull_request",
                HEAD,
                "feature",
                FORK,
            ),
        );
        let record = build_record(&w.wheel, &w.data);
        w.put_artifact(
            UNSIGNED_ARTIFACT,
            &format!("unsigned-{}", w.artifact()),
            fork_run(BUILD_RUN),
            &[
                (&w.wheel, w.data.clone()),
                (&format!("{}.build.json", w.wheel), record),
            ],
        );
        w.write(&format!("pulls/{PR}.json"), pull_json(PR, HEAD, "main"));
        w.write(
            "permissions/maintainer.json",
            json!({ "permission": "write", "role_name": "maintain" }),
        );
        w
    }

    /// Replaces the request's recorded event with one whose comment says `body`.
    fn set_comment(&self, body: &str) {
        let event = json!({
            "action": "created",
            "issue": { "number": PR, "pull_request": {} },
            "comment": { "id": 99, "body": body, "author_association": "MEMBER",
                         "user": { "login": "maintainer" } },
        });
        self.put_artifact(
            REQUEST_ARTIFACT,
            &format!("vouch-request-{PR}-{HEAD}"),
            trusted_run(REQUEST_RUN),
            &[
                ("event.json", event.to_string().into_bytes()),
                ("request.json", request_json(PR).to_string().into_bytes()),
            ],
        );
    }

    /// A second build run `id` of the build workflow at HEAD (same PR, same request), whose
    /// `unsigned-<artifact>` (artifact `artifact_id`) holds other bytes.
    fn second_build(&self, id: u64, artifact_id: u64) {
        self.write(
            &format!("runs/{id}.json"),
            run_json(
                id,
                BUILD_WF,
                "vouch-build.yml",
                "pull_request",
                HEAD,
                "feature",
                FORK,
            ),
        );
        let data = b"another build of the same head".to_vec();
        let record = build_record(&self.wheel, &data);
        self.put_artifact(
            artifact_id,
            &format!("unsigned-{}", self.artifact()),
            fork_run(id),
            &[
                (&self.wheel, data),
                (&format!("{}.build.json", self.wheel), record),
            ],
        );
    }

    /// `<dist>-py<X.Y>-linux-64-pr7-<HEAD>`.
    fn artifact(&self) -> String {
        artifact_name(&self.py, PR, HEAD)
    }

    fn write(&self, rel: &str, v: Value) {
        let p = self.store.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(&p, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    }

    fn edit(&self, rel: &str, f: impl FnOnce(&mut Value)) {
        let p = self.store.join(rel);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, v.to_string()).unwrap();
    }

    /// Artifact `id` named `name` of the run `workflow_run` describes, holding `files`.
    fn put_artifact(&self, id: u64, name: &str, workflow_run: Value, files: &[(&str, Vec<u8>)]) {
        let zip = self.store.join(format!("artifacts/{id}.zip"));
        std::fs::create_dir_all(zip.parent().unwrap()).unwrap();
        let mut z = zip::ZipWriter::new(std::fs::File::create(&zip).unwrap());
        for (member, data) in files {
            z.start_file(*member, zip::write::SimpleFileOptions::default())
                .unwrap();
            std::io::Write::write_all(&mut z, data).unwrap();
        }
        z.finish().unwrap();
        self.write(
            &format!("artifacts/{id}.json"),
            json!({
                "id": id, "name": name, "expired": false,
                "created_at": format!("2026-08-20T10:{:02}:00Z", id % 60),
                "digest": format!("sha256:{}", sha256_file(&zip)),
                "workflow_run": workflow_run,
            }),
        );
    }

    /// A request artifact for `pr` at HEAD holding `request` (and an event), uploaded by the
    /// run `workflow_run` describes.
    fn put_request(&self, id: u64, pr: u64, request: &Value, workflow_run: Value) {
        let event = json!({
            "action": "created",
            "issue": { "number": pr, "pull_request": {} },
            "comment": { "id": 99, "body": format!("/test mini @{HEAD}"),
                         "author_association": "MEMBER", "user": { "login": "maintainer" } },
        });
        self.put_artifact(
            id,
            &format!("vouch-request-{pr}-{HEAD}"),
            workflow_run,
            &[
                ("event.json", event.to_string().into_bytes()),
                ("request.json", request.to_string().into_bytes()),
            ],
        );
    }

    fn github(&self) -> FakeGithub {
        FakeGithub::start(self.store.clone(), TOKEN)
    }

    fn token_file(&self) -> PathBuf {
        let token = self.dir.path().join(format!("token-{}", unique()));
        std::fs::write(&token, TOKEN).unwrap();
        token
    }

    /// `vouch pr-run SUB --repo --run-id 700 --api-url --token-file`, outside any Actions run.
    fn pr_run(&self, gh: &FakeGithub, sub: &str) -> std::process::Command {
        let mut cmd = vouch();
        cmd.env_clear()
            .args(["pr-run", sub, "--repo", REPO, "--run-id"])
            .arg(BUILD_RUN.to_string())
            .args(["--api-url", &gh.url, "--token-file"])
            .arg(self.token_file());
        cmd
    }

    /// `vouch pr-run sign` as `vouch-sign.yml` runs it: in GitHub Actions, a `workflow_run`
    /// run `run_id` of the signer at `git_ref`, keyless with the local Sigstore.
    fn sign_as(
        &self,
        gh: &FakeGithub,
        artifact: &str,
        run_id: u64,
        git_ref: &str,
    ) -> (Run, PathBuf) {
        self.sign_with(gh, artifact, run_id, git_ref, &[])
    }

    /// [`Self::sign_as`] with `extra` flags.
    fn sign_with(
        &self,
        gh: &FakeGithub,
        artifact: &str,
        run_id: u64,
        git_ref: &str,
        extra: &[&str],
    ) -> (Run, PathBuf) {
        let out = self.dir.path().join(format!("signed-{}", unique()));
        let event = if git_ref.starts_with("refs/pull/") {
            "pull_request"
        } else {
            "workflow_run"
        };
        let claims = sign_claims(run_id, git_ref, event);
        let oidc = self.dir.path().join(format!("oidc-{}", unique()));
        std::fs::write(&oidc, self.sigstore.mint_token(&claims)).unwrap();
        let mut cmd = self.pr_run(gh, "sign");
        cmd.args(["--artifact", artifact, "--json", "--out"])
            .arg(&out)
            .args(["--signer", "sigstore", "--fulcio-url", &self.sigstore.url])
            .args(["--rekor-url", &self.sigstore.url, "--oidc-token-file"])
            .arg(&oidc)
            .args(extra);
        in_actions(&mut cmd, &claims);
        let r = run(&mut cmd);
        assert!(!oidc.exists(), "the OIDC token file is consumed");
        for text in [&r.stdout, &r.stderr] {
            assert!(!text.contains(TOKEN), "the GitHub token leaked");
        }
        (r, out)
    }

    /// Signs this world's artifact as sign run 900 on main; asserts it worked.
    fn sign(&self, gh: &FakeGithub) -> PathBuf {
        let (r, out) = self.sign_as(gh, &self.artifact(), SIGN_RUN, "refs/heads/main");
        assert_eq!(r.code, 0, "{}", r.stderr);
        out
    }

    /// Publishes what `sign` wrote as artifact `name` of `run` (by default the sign run).
    fn publish(&self, signed: &Path, id: u64, name: &str, run: u64) {
        let bundle = format!("{}.sigstore.json", self.artifact());
        self.put_artifact(
            id,
            name,
            trusted_run(run),
            &[
                (
                    &self.wheel,
                    std::fs::read(signed.join(&self.wheel)).unwrap(),
                ),
                (&bundle, std::fs::read(signed.join(&bundle)).unwrap()),
            ],
        );
    }

    /// The sign run 900 (`workflow_run` of main) and its artifact `<artifact>`.
    fn publish_signed(&self, signed: &Path) {
        self.write(
            &format!("runs/{SIGN_RUN}.json"),
            run_json(
                SIGN_RUN,
                SIGN_WF,
                "vouch-sign.yml",
                "workflow_run",
                MAIN,
                "main",
                REPO,
            ),
        );
        self.publish(signed, SIGNED_ARTIFACT, &self.artifact(), SIGN_RUN);
    }

    /// `vouch SUB --repo --api-url --token-file --trust-root`, for the consumer's flags.
    fn consumer(&self, gh: &FakeGithub, sub: &str) -> std::process::Command {
        let mut cmd = vouch();
        cmd.args([sub, "--repo", REPO, "--api-url", &gh.url, "--token-file"])
            .arg(self.token_file())
            .arg("--trust-root")
            .arg(&self.root)
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN_FILE")
            .env_remove("FLEXCI_BRANCH")
            .env_remove("FLEXCI_REFERENCE_COMMIT_ID")
            .env_remove("FLEXCI_COMMIT_ID");
        cmd
    }

    /// `vouch fetch --out OUT --json` for PR 7 at `sha`, artifact `name`.
    fn fetch(&self, gh: &FakeGithub, pr: u64, sha: &str, name: &str) -> (Run, PathBuf) {
        let out = self.dir.path().join(format!("fetched-{}", unique()));
        let r = run(self
            .consumer(gh, "fetch")
            .args([
                "--event",
                "pull_request",
                "--pr",
                &pr.to_string(),
                "--sha",
                sha,
            ])
            .args(["--artifact-name", name, "--json", "--out"])
            .arg(&out));
        (r, out)
    }
}

fn unique() -> u32 {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed)
}

fn artifact_name(py: &str, pr: u64, sha: &str) -> String {
    format!("{DIST}-py{py}-linux-64-pr{pr}-{sha}")
}

fn repo_json(full_name: &str, id: u64, fork: bool) -> Value {
    json!({
        "id": id, "full_name": full_name, "fork": fork, "default_branch": "main",
        "owner": { "login": full_name.split('/').next().unwrap() },
    })
}

fn run_json(
    id: u64,
    workflow_id: u64,
    file: &str,
    event: &str,
    head_sha: &str,
    head_branch: &str,
    head_repo: &str,
) -> Value {
    let head_id = if head_repo == REPO { REPO_ID } else { FORK_ID };
    json!({
        "id": id, "workflow_id": workflow_id, "path": format!(".github/workflows/{file}"),
        "event": event, "status": "completed", "conclusion": "success", "run_attempt": 1,
        // After every artifact's (10:MM): a build run is created after its request.
        "created_at": format!("2026-08-20T11:{:02}:00Z", id % 60),
        "head_sha": head_sha, "head_branch": head_branch,
        "repository": repo_json(REPO, REPO_ID, false),
        "head_repository": repo_json(head_repo, head_id, head_repo != REPO),
        "pull_requests": [],
    })
}

/// An artifact's `workflow_run` for a run of this repository's default branch.
fn trusted_run(id: u64) -> Value {
    json!({ "id": id, "repository_id": REPO_ID, "head_repository_id": REPO_ID,
            "head_branch": "main", "head_sha": MAIN })
}

/// An artifact's `workflow_run` for a run of the fork's branch (the PR's build).
fn fork_run(id: u64) -> Value {
    json!({ "id": id, "repository_id": REPO_ID, "head_repository_id": FORK_ID,
            "head_branch": "feature", "head_sha": HEAD })
}

fn request_json(pr: u64) -> Value {
    json!({
        "schema": "https://vouch.build/test-request/v1", "repository": REPO, "pr": pr,
        "head_sha": HEAD, "head_repository": FORK, "base_ref": "main", "base_sha": MAIN,
        "comment_id": 99, "author": "maintainer", "author_association": "MEMBER",
        "recorded_by_run": REQUEST_RUN,
    })
}

fn pull_json(pr: u64, head: &str, base: &str) -> Value {
    json!({
        "number": pr, "state": "open",
        "head": { "ref": "feature", "sha": head, "label": "contributor:feature",
                  "repo": repo_json(FORK, FORK_ID, true) },
        // The base moved on since the request: it is recorded, never compared.
        "base": { "ref": base, "sha": OTHER, "repo": repo_json(REPO, REPO_ID, false) },
    })
}

/// The build record a cell build writes next to its wheel (PR-written: reported data only).
fn build_record(wheel: &str, data: &[u8]) -> Vec<u8> {
    use sha2::Digest as _;
    json!({
        "schema": "https://vouch.build/cell-record/v1", "cell": "py3.11-linux-64",
        "wheel": wheel, "sha256": format!("sha256:{}", hex::encode(sha2::Sha256::digest(data))),
        "inputs_digest": "sha256:feedface", "source_date_epoch": 1_700_000_000u64,
        "cache": { "policy": { "write": "pr/7" } },
    })
    .to_string()
    .into_bytes()
}

/// The OIDC claims of a `vouch-sign.yml` run `run` at `git_ref`.
fn sign_claims(run: u64, git_ref: &str, event: &str) -> GithubClaims {
    let mut c = GithubClaims::push(REPO, MAIN);
    c.event_name = event.into();
    c.git_ref = git_ref.into();
    c.workflow_ref = sign_workflow_ref(git_ref);
    c.job_workflow_ref = c.workflow_ref.clone();
    c.run_id = run.to_string();
    c
}

/// The GitHub Actions environment of the run `claims` describe.
fn in_actions(cmd: &mut std::process::Command, c: &GithubClaims) {
    cmd.env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", &c.repository)
        .env("GITHUB_REPOSITORY_ID", &c.repository_id)
        .env("GITHUB_WORKFLOW_REF", &c.workflow_ref)
        .env("GITHUB_REF", &c.git_ref)
        .env("GITHUB_SHA", &c.sha)
        .env("GITHUB_EVENT_NAME", &c.event_name)
        .env("GITHUB_RUN_ID", &c.run_id)
        .env("GITHUB_RUN_ATTEMPT", &c.run_attempt)
        .env("RUNNER_ENVIRONMENT", &c.runner_environment);
}

/// The sample package, built by vouch once per test process: a real wheel to install.
fn real_wheel() -> &'static (String, Vec<u8>) {
    static WHEEL: OnceLock<(String, Vec<u8>)> = OnceLock::new();
    WHEEL.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("prsign-sample-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        let wheel = build_sample_wheel(&dir);
        let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
        (name, std::fs::read(&wheel).unwrap())
    })
}

// ------------------------------------------------------------------ the flow end to end

/// The acceptance test: a fork PR's build, signed by the signer in a trusted context, then
/// installed by FlexCI (`--from-flexci`) after verifying it against the signer-workflow policy.
#[test]
fn fork_pr_build_is_signed_by_the_signer_and_installed_on_flexci() {
    let (name, data) = real_wheel();
    let w = World::with_wheel(name, data.clone());
    let gh = w.github();

    // vouch-sign.yml, job `pin`: the matrix of artifacts to sign, and the request for FlexCI.
    let matrix = w.dir.path().join("matrix.json");
    let request = w.dir.path().join("request");
    let r = run(w
        .pr_run(&gh, "pin")
        .arg("--matrix-out")
        .arg(&matrix)
        .arg("--request-out")
        .arg(&request));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let want = json!({ "include": [{ "artifact": w.artifact() }] });
    assert_eq!(serde_json::from_str::<Value>(&r.stdout).unwrap(), want);
    assert_eq!(
        serde_json::from_str::<Value>(&std::fs::read_to_string(&matrix).unwrap()).unwrap(),
        want
    );
    assert!(r.stderr.contains(&format!(
        "pinned run {BUILD_RUN} (pull_request of {FORK} at {HEAD}) for #7: /test by maintainer (MEMBER), comment 99, recorded by run {REQUEST_RUN}"
    )), "{}", r.stderr);
    let recorded: Value =
        serde_json::from_str(&std::fs::read_to_string(request.join("request.json")).unwrap())
            .unwrap();
    assert_eq!(recorded, request_json(PR));
    let event: Value =
        serde_json::from_str(&std::fs::read_to_string(request.join("event.json")).unwrap())
            .unwrap();
    assert_eq!(event["comment"]["body"], format!("/test mini @{HEAD}"));

    // vouch-sign.yml, job `sign` (one per matrix entry), then its upload.
    let signed = w.sign(&gh);
    assert_eq!(std::fs::read(signed.join(&w.wheel)).unwrap(), *data);
    w.publish_signed(&signed);

    // FlexCI: `vouch install --from-flexci` into a venv.
    let target = w.dir.path().join("site");
    let r = run(w
        .consumer(&gh, "install")
        .args(["--from-flexci", "--dist", DIST, "--python-version", &w.py])
        .args(["--platform", "linux-64", "--python"])
        .arg(venv_python())
        .args(["--json", "--", "--target"])
        .arg(&target)
        .arg("-q")
        .env("FLEXCI_BRANCH", "refs/pull/7/merge")
        .env("FLEXCI_REFERENCE_COMMIT_ID", HEAD));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let report = r.json();
    assert_eq!(report["fetch"]["run_id"], SIGN_RUN);
    let v = &report["fetch"]["wheels"][0]["verified"];
    assert_eq!(
        v["signer"]["signer_workflow"],
        format!(
            "https://github.com/{}",
            sign_workflow_ref("refs/heads/main")
        )
    );
    assert_eq!(v["signer"]["event"], "workflow_run");
    let p = &v["statement"]["pr_build"];
    assert_eq!(p["buildRun"]["runId"], BUILD_RUN);
    assert_eq!(p["buildRun"]["headRepository"], FORK);
    assert_eq!(p["request"]["pr"], PR);
    assert_eq!(p["request"]["baseSha"], MAIN);
    assert_eq!(p["reportedByBuild"]["cell"], "py3.11-linux-64");
    assert_eq!(p["reportedByBuild"]["cacheScope"], "pr/7");
    let out = std::process::Command::new(venv_python())
        .env("PYTHONPATH", &target)
        .args(["-c", "import vouch_sample; print(vouch_sample.greeting())"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from vouch-sample"
    );
}

/// The signer's statement and the consumer's messages, as a user sees them.
#[test]
fn signed_pr_build_fetches_and_verifies_and_audits() {
    let w = World::new();
    let gh = w.github();
    let signed = w.sign(&gh);
    w.publish_signed(&signed);
    let out = w.dir.path().join("fetched");
    let r = vouch_snapshot!(
        [(r"[0-9]{1,3} API calls", "[N] API calls")],
        w.consumer(&gh, "fetch")
            .args(["--event", "pull_request", "--pr", "7", "--sha", HEAD])
            .args(["--dist", DIST, "--python-version", "3.11", "--platform", "linux-64"])
            .args(["--cell", "py3.11-linux-64", "--out"])
            .arg(&out),
        @r#"
            success: true
            exit_code: 0
            ----- stdout -----
            sha256:[SHA256]  [TEMP]/fetched/vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl

            ----- stderr -----
            looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
            verified artifact 3001 from run 900 ([N] API calls)
        "#);
    assert_eq!(r.code, 0);
    let wheel = out.join(&w.wheel);
    let policy = [
        "--repo",
        REPO,
        "--predicate-type",
        "pr-build",
        "--signer-workflow",
        ".github/workflows/vouch-sign.yml@refs/heads/main",
        "--pr",
        "7",
        "--pr-head-sha",
        HEAD,
        "--pr-build-workflow",
        ".github/workflows/vouch-build.yml",
    ];
    let verify = |extra: &[&str]| {
        let mut cmd = vouch();
        cmd.arg("verify")
            .arg(&wheel)
            .arg("--bundle")
            .arg(out.join(format!("{}.sigstore.json", w.wheel)))
            .arg("--trust-root")
            .arg(&w.root)
            .args(extra);
        run(&mut cmd)
    };
    vouch_snapshot!(verify(&policy), @r#"
        success: true
        exit_code: 0
        ----- stdout -----
        verified: [TEMP]/fetched/vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl (sha256:[SHA256])
          signer:     https://github.com/cupy/cupy/.github/workflows/vouch-sign.yml@refs/heads/main
          issuer:     https://token.actions.githubusercontent.com
          repository: https://github.com/cupy/cupy  ref: refs/heads/main  commit: 5555555555555555555555555555555555555555
          workflow:   https://github.com/cupy/cupy/.github/workflows/vouch-sign.yml@refs/heads/main  event: workflow_run  runner: github-hosted
          run:        https://github.com/cupy/cupy/actions/runs/900/attempts/1
          predicate:  https://vouch.build/pr-build/v1
          built by:   run 700 (attempt 1) of .github/workflows/vouch-build.yml, pull_request of contributor/cupy at 1111111111111111111111111111111111111111 (artifact unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111)
          request:    #7 /test by maintainer (MEMBER), comment 99, base main at 5555555555555555555555555555555555555555, recorded by run 650
          built:      1111111111111111111111111111111111111111 (the vouched head itself; tests must run from this commit, not a merge)
          reported:   cell py3.11-linux-64, inputs sha256:feedface, epoch 1700000000, cache scope pr/7 (by the build itself, not verified)
          checks:     certificate chain ok, SCT not checked, transparency log ok, signature ok, statement ok, digest ok, identity policy ok
          note:       trust root [TEMP]/trusted_root.json has no CT logs: SCT not checked
          note:       pull-request build: run 700 of .github/workflows/vouch-build.yml (event pull_request, head 1111111111111111111111111111111111111111 from contributor/cupy) signed by a trusted workflow_run signer; reportedByBuild (cell, inputs digest, epoch, cache scope) is what the PR's own build reported, not verified

        ----- stderr -----
    "#);
    // gh accepts the same bundle as the signer's attestation of the pr-build predicate; the
    // request binding (PR, head, build run) is vouch's to check, which gh does not read.
    let gh = gh_attestation_verify(
        &w.root,
        &wheel,
        &out.join(format!("{}.sigstore.json", w.wheel)),
        &[
            "--repo",
            REPO,
            "--signer-workflow",
            &format!("{REPO}/.github/workflows/vouch-sign.yml"),
            "--predicate-type",
            vouch_verify::PREDICATE_PR_BUILD_V1,
        ],
    );
    assert_eq!(gh.code, 0, "gh refused the pr-build bundle: {}", gh.stderr);
    let unpinned = [
        &policy[..5],
        &[".github/workflows/vouch-sign.yml"],
        &policy[6..],
    ]
    .concat();
    let slsa = [&policy[..2], &policy[4..]].concat();
    let cases = [
        ("signer without its ref", verify(&unpinned)),
        ("as SLSA provenance", verify(&slsa)),
    ];
    insta::assert_snapshot!(snapshot_cases(cases, &[]), @r#"
        ===== "signer without its ref"
        success: false
        exit_code: 16
        ----- stdout -----

        ----- stderr -----
        error: verification of [TEMP]/fetched/vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl.sigstore.json failed
          caused by: policy check failed: a pr-build statement is only as trustworthy as the workflow that signed it: name it with its ref (signer workflow .github/workflows/vouch-sign.yml@refs/heads/<default branch>), not ".github/workflows/vouch-sign.yml"

        ===== "as SLSA provenance"
        success: false
        exit_code: 14
        ----- stdout -----

        ----- stderr -----
        error: verification of [TEMP]/fetched/vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl.sigstore.json failed
          caused by: statement check failed: predicateType: expected "https://slsa.dev/provenance/v1", found "https://vouch.build/pr-build/v1"
    "#);
    let audit = run(vouch()
        .arg("audit")
        .arg(&out)
        .arg("--trust-root")
        .arg(&w.root)
        .args(policy));
    vouch_snapshot!(audit, @r#"
        success: true
        exit_code: 0
        ----- stdout -----
        verified     [TEMP]/fetched/vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl  pull-request build of #7 (head 1111111111111111111111111111111111111111 from contributor/cupy, run 700 of .github/workflows/vouch-build.yml), signed by https://github.com/cupy/cupy/.github/workflows/vouch-sign.yml@refs/heads/main run https://github.com/cupy/cupy/actions/runs/900/attempts/1 (https://vouch.build/pr-build/v1)

        ----- stderr -----
        1 of 1 files verified
    "#);
}

// ------------------------------------------------------------------ the signer refuses

/// One signer run per case, each in a world edited the way the case says. Every refusal
/// happens before anything is signed or written.
#[test]
fn the_signer_refuses() {
    type Edit = fn(&World);
    let cases: &[(&str, Edit)] = &[
        ("the build run failed", |w| {
            w.edit(&format!("runs/{BUILD_RUN}.json"), |r| {
                r["conclusion"] = "failure".into()
            })
        }),
        ("a push build", |w| {
            w.edit(&format!("runs/{BUILD_RUN}.json"), |r| {
                r["event"] = "push".into()
            })
        }),
        ("another workflow's run", |w| {
            w.edit(&format!("runs/{BUILD_RUN}.json"), |r| {
                r["workflow_id"] = TRIGGER_WF.into()
            })
        }),
        ("the PR's head moved after the build", |w| {
            w.write(&format!("pulls/{PR}.json"), pull_json(PR, MOVED, "main"))
        }),
        ("the PR now targets another base branch", |w| {
            w.write(&format!("pulls/{PR}.json"), pull_json(PR, HEAD, "v14"))
        }),
        ("the PR was closed", |w| {
            w.edit(&format!("pulls/{PR}.json"), |p| {
                p["state"] = "closed".into()
            })
        }),
        ("only another PR's request", |w| {
            std::fs::remove_file(w.store.join(format!("artifacts/{REQUEST_ARTIFACT}.json")))
                .unwrap();
            w.put_request(
                REQUEST_ARTIFACT + 10,
                8,
                &request_json(8),
                trusted_run(REQUEST_RUN),
            );
        }),
        ("a request naming another PR", |w| {
            let mut req = request_json(PR);
            req["pr"] = 8.into();
            w.put_request(REQUEST_ARTIFACT, PR, &req, trusted_run(REQUEST_RUN));
        }),
        ("a request forged by the fork's own run", |w| {
            w.put_request(REQUEST_ARTIFACT, PR, &request_json(PR), fork_run(BUILD_RUN));
        }),
        (
            "a request from a default-branch run of another workflow",
            |w| {
                w.edit(&format!("runs/{REQUEST_RUN}.json"), |r| {
                    r["workflow_id"] = BUILD_WF.into();
                    r["path"] = ".github/workflows/vouch-build.yml".into();
                })
            },
        ),
        ("two wheels in one unsigned artifact", |w| {
            let second = w.wheel.replace("0.1.0", "0.1.1");
            w.put_artifact(
                UNSIGNED_ARTIFACT,
                &format!("unsigned-{}", w.artifact()),
                fork_run(BUILD_RUN),
                &[(&w.wheel, w.data.clone()), (&second, b"another".to_vec())],
            );
        }),
        ("a wheel of another cell under this cell's name", |w| {
            w.put_artifact(
                UNSIGNED_ARTIFACT,
                &format!("unsigned-{}", w.artifact()),
                fork_run(BUILD_RUN),
                &[(&w.wheel.replace("cp311", "cp312"), w.data.clone())],
            );
        }),
        ("the artifact is another run's", |w| {
            w.edit(&format!("artifacts/{UNSIGNED_ARTIFACT}.json"), |a| {
                a["workflow_run"]["id"] = (BUILD_RUN + 1).into()
            });
            w.put_artifact(
                UNSIGNED_ARTIFACT + 1,
                &format!("unsigned-{}", artifact_name("3.12", PR, HEAD)),
                fork_run(BUILD_RUN),
                &[(&w.wheel.replace("cp311", "cp312"), w.data.clone())],
            );
        }),
    ];
    let runs = cases.iter().map(|(label, edit)| {
        let w = World::new();
        edit(&w);
        let gh = w.github();
        let (r, out) = w.sign_as(&gh, &w.artifact(), SIGN_RUN, "refs/heads/main");
        assert!(!out.exists(), "{label}: nothing written");
        (*label, r)
    });
    insta::assert_snapshot!(snapshot_cases(runs.collect::<Vec<_>>(), &[]), @r#"
    ===== "the build run failed"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "it did not succeed (status \"completed\", conclusion \"failure\")"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: it did not succeed (status "completed", conclusion "failure")
    ::error title=vouch::build run 700 is not signed: it did not succeed (status "completed", conclusion "failure")

    ===== "a push build"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "its event is \"push\": only pull_request builds are signed here (push builds sign in their own run)"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: its event is "push": only pull_request builds are signed here (push builds sign in their own run)
    ::error title=vouch::build run 700 is not signed: its event is "push": only pull_request builds are signed here (push builds sign in their own run)

    ===== "another workflow's run"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "its workflow_id is 12, not 11 (.github/workflows/vouch-build.yml): another workflow's run"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: its workflow_id is 12, not 11 (.github/workflows/vouch-build.yml): another workflow's run
    ::error title=vouch::build run 700 is not signed: its workflow_id is 12, not 11 (.github/workflows/vouch-build.yml): another workflow's run

    ===== "the PR's head moved after the build"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "pull request #7's head is now 2222222222222222222222222222222222222222; the run built 1111111111111111111111111111111111111111, which nobody has asked to test since"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: pull request #7's head is now 2222222222222222222222222222222222222222; the run built 1111111111111111111111111111111111111111, which nobody has asked to test since
    ::error title=vouch::build run 700 is not signed: pull request #7's head is now 2222222222222222222222222222222222222222; the run built 1111111111111111111111111111111111111111, which nobody has asked to test since

    ===== "the PR now targets another base branch"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "pull request #7 now targets \"v14\"; the request was for \"main\""
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: pull request #7 now targets "v14"; the request was for "main"
    ::error title=vouch::build run 700 is not signed: pull request #7 now targets "v14"; the request was for "main"

    ===== "the PR was closed"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "no open pull request has head \"contributor:feature\""
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: no open pull request has head "contributor:feature"
    ::error title=vouch::build run 700 is not signed: no open pull request has head "contributor:feature"

    ===== "only another PR's request"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "no open pull request from \"contributor:feature\" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: no artifact \"vouch-request-7-1111111111111111111111111111111111111111\" is listed)"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: no open pull request from "contributor:feature" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: no artifact "vouch-request-7-1111111111111111111111111111111111111111" is listed)
    ::error title=vouch::build run 700 is not signed: no open pull request from "contributor:feature" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: no artifact "vouch-request-7-1111111111111111111111111111111111111111" is listed)

    ===== "a request naming another PR"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "the request recorded for #7 says pr is \"8\", the API says \"7\""
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: the request recorded for #7 says pr is "8", the API says "7"
    ::error title=vouch::build run 700 is not signed: the request recorded for #7 says pr is "8", the API says "7"

    ===== "a request forged by the fork's own run"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "no open pull request from \"contributor:feature\" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: artifact 2001 was uploaded by run 700 of branch \"feature\" in repository 99 (a request counts only from \"main\" of repository 1))"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: no open pull request from "contributor:feature" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: artifact 2001 was uploaded by run 700 of branch "feature" in repository 99 (a request counts only from "main" of repository 1))
    ::error title=vouch::build run 700 is not signed: no open pull request from "contributor:feature" has a /test request for 1111111111111111111111111111111111111111 recorded by a default-branch run of this repository (#7: artifact 2001 was uploaded by run 700 of branch "feature" in repository 99 (a request counts only from "main" of repository 1))

    ===== "a request from a default-branch run of another workflow"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "its request for #7 was recorded by run 650, which is a run of workflow 11 (\".github/workflows/vouch-build.yml\"), not an issue_comment run of .github/workflows/vouch-trigger.yml"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    error: build run 700 is not signed
      caused by: its request for #7 was recorded by run 650, which is a run of workflow 11 (".github/workflows/vouch-build.yml"), not an issue_comment run of .github/workflows/vouch-trigger.yml
    ::error title=vouch::build run 700 is not signed: its request for #7 was recorded by run 650, which is a run of workflow 11 (".github/workflows/vouch-build.yml"), not an issue_comment run of .github/workflows/vouch-trigger.yml

    ===== "two wheels in one unsigned artifact"
    success: false
    exit_code: 3
    ----- stdout -----
    {
      "causes": [],
      "exit_code": 3,
      "message": "artifact \"unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" (id 2002) is not one cell's wheel: it holds 2 wheels (vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl, vouch_sample-0.1.1-cp311-cp311-linux_x86_64.whl); exactly one, the cell's, is signed",
      "ok": false,
      "status": "invalid-input"
    }

    ----- stderr -----
    pinned run 700 (pull_request of contributor/cupy at 1111111111111111111111111111111111111111) for #7: /test by maintainer (MEMBER), comment 99, recorded by run 650
    error: artifact "unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" (id 2002) is not one cell's wheel: it holds 2 wheels (vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl, vouch_sample-0.1.1-cp311-cp311-linux_x86_64.whl); exactly one, the cell's, is signed
    ::error title=vouch::artifact "unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" (id 2002) is not one cell's wheel: it holds 2 wheels (vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl, vouch_sample-0.1.1-cp311-cp311-linux_x86_64.whl); exactly one, the cell's, is signed

    ===== "a wheel of another cell under this cell's name"
    success: false
    exit_code: 3
    ----- stdout -----
    {
      "causes": [],
      "exit_code": 3,
      "message": "artifact \"unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" (id 2002) is not one cell's wheel: vouch_sample-0.1.0-cp312-cp312-linux_x86_64.whl: tags cp312-cp312 include no cp311-cp311 (Python 3.11)",
      "ok": false,
      "status": "invalid-input"
    }

    ----- stderr -----
    pinned run 700 (pull_request of contributor/cupy at 1111111111111111111111111111111111111111) for #7: /test by maintainer (MEMBER), comment 99, recorded by run 650
    error: artifact "unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" (id 2002) is not one cell's wheel: vouch_sample-0.1.0-cp312-cp312-linux_x86_64.whl: tags cp312-cp312 include no cp311-cp311 (Python 3.11)
    ::error title=vouch::artifact "unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" (id 2002) is not one cell's wheel: vouch_sample-0.1.0-cp312-cp312-linux_x86_64.whl: tags cp312-cp312 include no cp311-cp311 (Python 3.11)

    ===== "the artifact is another run's"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "causes": [
        "\"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" is not an artifact of it to sign (the run uploaded no unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111; it has vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111)"
      ],
      "exit_code": 30,
      "message": "build run 700 is not signed",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    pinned run 700 (pull_request of contributor/cupy at 1111111111111111111111111111111111111111) for #7: /test by maintainer (MEMBER), comment 99, recorded by run 650
    error: build run 700 is not signed
      caused by: "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" is not an artifact of it to sign (the run uploaded no unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111; it has vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111)
    ::error title=vouch::build run 700 is not signed: "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" is not an artifact of it to sign (the run uploaded no unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111; it has vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111)
    "#);
}

/// A build run that built nothing (an unrelated label) is nothing to sign: the signer's pin
/// job succeeds with an empty matrix, so the sign workflow does not go red.
#[test]
fn a_run_that_built_nothing_is_nothing_to_sign() {
    let w = World::new();
    std::fs::remove_file(w.store.join(format!("artifacts/{UNSIGNED_ARTIFACT}.json"))).unwrap();
    let gh = w.github();
    let matrix = w.dir.path().join("m.json");
    vouch_snapshot!(w.pr_run(&gh, "pin").arg("--matrix-out").arg(&matrix), @r#"
        success: true
        exit_code: 0
        ----- stdout -----
        {"include":[]}

        ----- stderr -----
        run 700 uploaded no unsigned-* artifact: nothing to sign
    "#);
    assert_eq!(
        std::fs::read_to_string(&matrix).unwrap(),
        r#"{"include":[]}"#
    );
}

// ------------------------------------------------------------------ the consumer refuses

/// What FlexCI must not install, each signed and published its own way.
#[test]
fn the_consumer_refuses() {
    let mut runs = Vec::new();
    let w = World::new();
    let gh = w.github();
    let signed = w.sign(&gh);
    w.publish_signed(&signed);
    let name = w.artifact();
    runs.push(("expecting another head", w.fetch(&gh, PR, OTHER, &name).0));
    runs.push((
        "expecting another head, name rendered from it",
        w.fetch(&gh, PR, OTHER, &artifact_name("3.11", PR, OTHER)).0,
    ));
    runs.push(("expecting another PR", w.fetch(&gh, 8, HEAD, &name).0));
    // The signed wheel and bundle, uploaded under another cell's name by the sign run.
    let other_cell = artifact_name("3.12", PR, HEAD);
    w.publish(&signed, SIGNED_ARTIFACT + 1, &other_cell, SIGN_RUN);
    runs.push(("another cell's name", w.fetch(&gh, PR, HEAD, &other_cell).0));

    // The PR's own build run uploads a signed-looking artifact under the final name.
    let w = World::new();
    let gh = w.github();
    let signed = w.sign(&gh);
    w.publish(&signed, SIGNED_ARTIFACT, &w.artifact(), BUILD_RUN);
    runs.push((
        "uploaded by the PR's build run",
        w.fetch(&gh, PR, HEAD, &w.artifact()).0,
    ));

    // Sign run 901's genuine bundle, uploaded as sign run 900's artifact.
    let w = World::new();
    let gh = w.github();
    let (r, signed) = w.sign_as(&gh, &w.artifact(), SIGN_RUN + 1, "refs/heads/main");
    assert_eq!(r.code, 0, "{}", r.stderr);
    w.publish_signed(&signed);
    runs.push((
        "a bundle of another sign run",
        w.fetch(&gh, PR, HEAD, &w.artifact()).0,
    ));

    // A signer run on another branch.
    let w = World::new();
    let gh = w.github();
    let signed = w.sign(&gh);
    w.publish_signed(&signed);
    w.edit(&format!("runs/{SIGN_RUN}.json"), |r| {
        r["head_branch"] = "feature".into()
    });
    runs.push((
        "a sign run of another branch",
        w.fetch(&gh, PR, HEAD, &w.artifact()).0,
    ));

    // A PR that edits vouch-sign.yml to run on pull_request signs with its own copy.
    let w = World::new();
    let gh = w.github();
    let (r, signed) = w.sign_as(&gh, &w.artifact(), SIGN_RUN, "refs/pull/7/merge");
    assert_eq!(r.code, 0, "{}", r.stderr);
    w.publish_signed(&signed);
    runs.push((
        "signed by the PR's copy of the signer",
        w.fetch(&gh, PR, HEAD, &w.artifact()).0,
    ));

    for (label, r) in &runs {
        assert!(!r.stdout.contains("\"fetched\": true"), "{label}");
    }
    insta::assert_snapshot!(snapshot_cases(runs, &[]), @r#"
    ===== "expecting another head"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: statement buildRun.headSha: expected \"3333333333333333333333333333333333333333\", found \"1111111111111111111111111111111111111111\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: statement buildRun.headSha: expected "3333333333333333333333333333333333333333", found "1111111111111111111111111111111111111111"

    ===== "expecting another head, name rendered from it"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-3333333333333333333333333333333333333333\" is listed (expired artifacts are no longer listed)",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-3333333333333333333333333333333333333333 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-3333333333333333333333333333333333333333" is listed (expired artifacts are no longer listed)

    ===== "expecting another PR"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: statement request.pr: expected \"8\", found \"7\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #8 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: statement request.pr: expected "8", found "7"

    ===== "another cell's name"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3002 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: statement buildRun.artifactName: expected \"unsigned-vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111\", found \"unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3002 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: statement buildRun.artifactName: expected "unsigned-vouch-sample-py3.12-linux-64-pr7-1111111111111111111111111111111111111111", found "unsigned-vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111"

    ===== "uploaded by the PR's build run"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3001 (run 700): run's workflow_id 11 is not 13 (.github/workflows/vouch-sign.yml)",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3001 (run 700): run's workflow_id 11 is not 13 (.github/workflows/vouch-sign.yml)

    ===== "a bundle of another sign run"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: run (OID .1.21): expected \"900\", found \"https://github.com/cupy/cupy/actions/runs/901/attempts/1\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: run (OID .1.21): expected "900", found "https://github.com/cupy/cupy/actions/runs/901/attempts/1"

    ===== "a sign run of another branch"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3001 (run 900): run's head_branch is \"feature\", expected \"main\": a signer counts only when it runs the default branch's workflow",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3001 (run 900): run's head_branch is "feature", expected "main": a signer counts only when it runs the default branch's workflow

    ===== "signed by the PR's copy of the signer"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111\" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: build trigger (OID .1.20) of a pr-build signer: expected \"workflow_run\", found \"pull_request\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
    error: no artifact named "vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111" passed: artifact 3001 (run 900): vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl: policy check failed: build trigger (OID .1.20) of a pr-build signer: expected "workflow_run", found "pull_request"
    "#);
}

/// A signer with a local key (self-hosted, offline): the statement's signedBy is the only
/// identity there is, and `fetch --key` holds the policy to it.
#[test]
fn key_signed_pr_build_fetches_with_the_key() {
    let w = World::new();
    let gh = w.github();
    let (key, public) = keygen(w.dir.path(), "signer.pem");
    let out = w.dir.path().join("key-signed");
    let mut cmd = w.pr_run(&gh, "sign");
    cmd.args(["--artifact", &w.artifact(), "--out"])
        .arg(&out)
        .arg("--signer")
        .arg(format!("key:{}", key.display()));
    in_actions(
        &mut cmd,
        &sign_claims(SIGN_RUN, "refs/heads/main", "workflow_run"),
    );
    let r = run(&mut cmd);
    assert_eq!(r.code, 0, "{}", r.stderr);
    w.publish_signed(&out);
    let fetched = w.dir.path().join("key-fetched");
    let r = run(w
        .consumer(&gh, "fetch")
        .args(["--event", "pull_request", "--pr", "7", "--sha", HEAD])
        .args(["--artifact-name", &w.artifact(), "--json", "--key"])
        .arg(&public)
        .arg("--out")
        .arg(&fetched));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let v = &r.json()["wheels"][0]["verified"];
    assert_eq!(v["signed_with"], "public-key");
    assert_eq!(v["signer"]["event"], "workflow_run");
    assert_eq!(v["statement"]["pr_build"]["request"]["pr"], PR);
    assert_eq!(std::fs::read(fetched.join(&w.wheel)).unwrap(), w.data);
}

/// Issue 18: `vouch-sign.yml` records each pull-request build's bundle in the base
/// repository's attestation store, where the consumer finds it by digest.
#[test]
fn pr_build_bundles_are_recorded_in_the_attestation_store() {
    let w = World::new();
    let gh = w.github();
    let (r, out) = w.sign_with(
        &gh,
        &w.artifact(),
        SIGN_RUN,
        "refs/heads/main",
        &["--record-github"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recorded = gh.attestations();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].repo, REPO);
    assert_eq!(
        recorded[0].predicate_type,
        "https://vouch.build/pr-build/v1"
    );
    let wheel_digest = format!(
        "sha256:{}",
        vouch_core::Sha256Digest::of(&std::fs::read(out.join(&w.wheel)).unwrap()).hex()
    );
    assert_eq!(recorded[0].digests, vec![wheel_digest]);
    assert_eq!(r.json()["github_attestation"]["id"], 1);
}

// ------------------------------------------------------------------ issue 31: the vouch chain

/// `vouch pr-run pin` as the sign workflow's pin job runs it, in GitHub Actions.
fn pin_in_actions(w: &World, gh: &FakeGithub, run_id: u64) -> Run {
    let mut cmd = vouch();
    cmd.env_clear()
        .args(["pr-run", "pin", "--repo", REPO, "--run-id"])
        .arg(run_id.to_string())
        .args(["--api-url", &gh.url, "--token-file"])
        .arg(w.token_file());
    in_actions(
        &mut cmd,
        &sign_claims(SIGN_RUN, "refs/heads/main", "workflow_run"),
    );
    run(&mut cmd)
}

/// Each link of issue 31 the signer holds, one world per case: every one of these was signed
/// before (the pin passed). Snapshotted with the reason a maintainer reads.
#[test]
fn issue_31_the_signer_refuses() {
    type Edit = fn(&World);
    let cases: &[(&str, Edit)] = &[
        // 1: the request is for the head the comment named, never a later one.
        ("the comment names no commit", |w| {
            w.set_comment("/test mini")
        }),
        ("the comment names another head", |w| {
            w.set_comment(&format!("/test mini @{}", &MOVED[..16]))
        }),
        ("the comment names seven digits of the head", |w| {
            w.set_comment(&format!("/test mini @{}", &HEAD[..7]))
        }),
        ("the event is another comment's", |w| {
            let mut req = request_json(PR);
            req["comment_id"] = 98.into();
            w.put_request(REQUEST_ARTIFACT, PR, &req, trusted_run(REQUEST_RUN));
        }),
        // 2: one request, one build.
        ("the build run was created before the request", |w| {
            w.edit(&format!("runs/{BUILD_RUN}.json"), |r| {
                r["created_at"] = "2026-08-20T10:20:59Z".into()
            })
        }),
        (
            "an earlier run after the same request built the cell",
            |w| w.second_build(BUILD_RUN - 1, UNSIGNED_ARTIFACT + 100),
        ),
        (
            "an earlier run after the same request is still running",
            |w| {
                w.second_build(BUILD_RUN - 1, UNSIGNED_ARTIFACT + 100);
                w.edit(&format!("runs/{}.json", BUILD_RUN - 1), |r| {
                    r["status"] = "in_progress".into();
                    r["conclusion"] = Value::Null;
                });
            },
        ),
        ("the pull request changes the build workflow", |w| {
            w.write(
                &format!("pull-files/{PR}.json"),
                json!([
                    { "filename": "cupy/__init__.py", "status": "modified" },
                    { "filename": ".github/workflows/vouch-build.yml", "status": "modified" },
                ]),
            )
        }),
        ("the pull request renames the build workflow away", |w| {
            w.write(
                &format!("pull-files/{PR}.json"),
                json!([{ "filename": ".github/workflows/old.yml", "status": "renamed",
                         "previous_filename": ".github/workflows/vouch-build.yml" }]),
            )
        }),
        // 7a: organization membership is not write access.
        ("the commenter cannot write to the repository", |w| {
            w.write(
                "permissions/maintainer.json",
                json!({ "permission": "read", "role_name": "triage" }),
            )
        }),
        // The test the issue asks for: any default-branch run of the trigger workflow would
        // have done; its pull_request_target runs are caused by the pull request's author.
        (
            "a request recorded by a pull_request_target run of the trigger",
            |w| {
                w.edit(&format!("runs/{REQUEST_RUN}.json"), |r| {
                    r["event"] = "pull_request_target".into()
                })
            },
        ),
    ];
    let runs = cases.iter().map(|(label, edit)| {
        let w = World::new();
        edit(&w);
        let gh = w.github();
        let (r, out) = w.sign_as(&gh, &w.artifact(), SIGN_RUN, "refs/heads/main");
        assert!(!out.exists(), "{label}: nothing written");
        assert_ne!(r.code, 0, "{label}: signed");
        (*label, r)
    });
    insta::assert_snapshot!(
        "issue_31_the_signer_refuses",
        snapshot_cases(runs.collect::<Vec<_>>(), &[])
    );
}

/// Issue 31 (2): runs 700 and 701 build the same head after one request, with different
/// wheels. 700 is signed; 701 is refused for the cell 700 built first. A re-run attempt of 700
/// is still 700 and is signed again (a maintainer retrying a failed cell).
#[test]
fn issue_31_one_test_authorises_one_build_of_each_cell() {
    let w = World::new();
    w.second_build(BUILD_RUN + 1, UNSIGNED_ARTIFACT + 100);
    let gh = w.github();
    w.sign(&gh);

    let r = pin_in_actions(&w, &gh, BUILD_RUN + 1);
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "caused by: every cell it built was built first by another run created after the same request ({}: run {BUILD_RUN}, created after the same request, built it first",
            w.artifact()
        )),
        "{}",
        r.stderr
    );

    w.edit(&format!("runs/{BUILD_RUN}.json"), |r| {
        r["run_attempt"] = 2.into()
    });
    w.sign(&gh);
}

/// Issue 31 (7d): artifact names the pull request chose reach the signer's log only escaped,
/// so none can become a workflow command (`::add-mask::`, `::warning::`, `%0A` tricks).
#[test]
fn issue_31_pr_chosen_names_cannot_become_workflow_commands() {
    let w = World::new();
    for (id, name) in [
        (2101, "unsigned-x\n::add-mask::secret\n".to_owned()),
        (2102, "unsigned-y\r\n::warning::forged".to_owned()),
        (2103, "unsigned-z%0A::error::forged".to_owned()),
        (
            2104,
            format!("unsigned-{}\n::set-output name=x::y", w.artifact()),
        ),
    ] {
        w.put_artifact(id, &name, fork_run(BUILD_RUN), &[("f", b"x".to_vec())]);
    }
    let gh = w.github();
    let r = pin_in_actions(&w, &gh, BUILD_RUN);
    assert_eq!(r.code, 0, "{}", r.stderr);
    for line in r.stdout.lines().chain(r.stderr.lines()) {
        let command = line.trim_start().starts_with("::") || line.contains("##[");
        assert!(
            !command
                || line.starts_with("::warning title=vouch::")
                || line.starts_with("::error title=vouch::"),
            "a line the runner would read as a workflow command: {line:?}\n{}",
            r.stderr
        );
    }
    assert!(
        r.stderr.contains("%0A%3A%3Aadd-mask%3A%3Asecret"),
        "{}",
        r.stderr
    );
}

// ------------------------------------------------------------------ issue 32: which commit

/// A git checkout whose HEAD is `sha` (which need not exist as an object: `rev-parse HEAD`
/// reads the ref), as a farm job that checked out the vouched head has.
fn checkout_at(dir: &Path, sha: &str) -> PathBuf {
    let repo = dir.join(format!("checkout-{}", unique()));
    std::fs::create_dir_all(&repo).unwrap();
    git_in(&repo, &["init", "-q"]);
    std::fs::write(repo.join(".git/HEAD"), format!("{sha}\n")).unwrap();
    repo
}

/// A checkout as FlexCI makes one for a pull request: `refs/pull/<N>/merge`, the head merged
/// into a base that moved on. Fixed dates, so its commits are the same every run.
fn merge_checkout(dir: &Path) -> PathBuf {
    let repo = dir.join(format!("checkout-merge-{}", unique()));
    std::fs::create_dir_all(&repo).unwrap();
    git_in(&repo, &["init", "-q"]);
    git_in(&repo, &["commit", "-q", "--allow-empty", "-m", "base"]);
    git_in(&repo, &["checkout", "-q", "-b", "head"]);
    git_in(
        &repo,
        &["commit", "-q", "--allow-empty", "-m", "the pull request"],
    );
    git_in(&repo, &["checkout", "-q", "main"]);
    git_in(
        &repo,
        &["commit", "-q", "--allow-empty", "-m", "main moved on"],
    );
    git_in(&repo, &["merge", "-q", "--no-ff", "-m", "merge", "head"]);
    repo
}

fn git_in(repo: &Path, args: &[&str]) -> String {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
        .args([
            "-c",
            "init.defaultBranch=main",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .env("GIT_AUTHOR_DATE", "1700000000 +0000")
        .env("GIT_COMMITTER_DATE", "1700000000 +0000")
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "git {args:?}: {}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// Issue 32 (5): a pull request's build is its vouched head. The signer records head, base and
/// built commit from the API and the request; the consumer installs only into a farm whose
/// checkout is the built commit, and refuses `refs/pull/<N>/merge` (exit 34), writing nothing.
#[test]
fn issue_32_the_farm_tests_the_commit_the_wheel_was_built_from() {
    let w = World::new();
    let gh = w.github();
    let signed = w.sign(&gh);
    w.publish_signed(&signed);

    let fetch = |checkout: &Path, json: &[&str]| {
        let out = w.dir.path().join(format!("fetched-{}", unique()));
        let r = run(w
            .consumer(&gh, "fetch")
            .args(["--event", "pull_request", "--pr", "7", "--sha", HEAD])
            .args([
                "--dist",
                DIST,
                "--python-version",
                "3.11",
                "--platform",
                "linux-64",
            ])
            .arg("--checkout")
            .arg(checkout)
            .args(json)
            .arg("--out")
            .arg(&out));
        (r, out)
    };

    // The head: installed; the statement says what was built, from what.
    let (r, out) = fetch(&checkout_at(w.dir.path(), HEAD), &["--json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(out.join(&w.wheel).exists());
    let p = &r.json()["wheels"][0]["verified"]["statement"]["pr_build"];
    assert_eq!(
        p["source"],
        json!({ "builtFrom": "head", "headSha": HEAD, "baseRef": "main", "baseSha": MAIN,
                "builtSha": HEAD })
    );

    // FlexCI's merge checkout, another commit, and no checkout at all: refused, nothing written.
    let merge = merge_checkout(w.dir.path());
    let merge_sha = git_in(&merge, &["rev-parse", "HEAD"]);
    let other = checkout_at(w.dir.path(), OTHER);
    let not_git = w.dir.path().join("not-a-checkout");
    std::fs::create_dir_all(&not_git).unwrap();
    let mut cases = Vec::new();
    for (what, dir) in [
        ("refs/pull/7/merge", &merge),
        ("another commit", &other),
        ("not a git checkout", &not_git),
    ] {
        let (r, out) = fetch(dir, &[]);
        assert!(!out.exists(), "{what}: nothing is written");
        cases.push((what, r));
    }
    insta::assert_snapshot!(
        snapshot_cases(cases, &[(&merge_sha, "[MERGE]"), (r"checkout-(merge-)?[0-9]+", "checkout-[N]")]),
        @r#"
        ===== "refs/pull/7/merge"
        success: false
        exit_code: 34
        ----- stdout -----

        ----- stderr -----
        looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
        error: the checkout "[TEMP]/checkout-[N]" is at [MERGE], but vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl was built from 1111111111111111111111111111111111111111: the tests would be another commit's than the wheel's. Check out the built commit (for a pull request, the vouched head itself, not refs/pull/<N>/merge) and run again

        ===== "another commit"
        success: false
        exit_code: 34
        ----- stdout -----

        ----- stderr -----
        looking for vouch-sample-py3.11-linux-64-pr7-1111111111111111111111111111111111111111 signed by .github/workflows/vouch-sign.yml (a pull_request build of #7 by .github/workflows/vouch-build.yml of cupy/cupy)
        error: the checkout "[TEMP]/checkout-[N]" is at 3333333333333333333333333333333333333333, but vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl was built from 1111111111111111111111111111111111111111: the tests would be another commit's than the wheel's. Check out the built commit (for a pull request, the vouched head itself, not refs/pull/<N>/merge) and run again

        ===== "not a git checkout"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: --checkout [TEMP]/not-a-checkout: not a git checkout, so the commit the tests would run from cannot be read (keep its .git)
    "#
    );
}
