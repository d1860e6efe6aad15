//! Issue 4: the consumer. A fake GitHub API (the project's own, on loopback), a local Sigstore
//! instance, real artifacts signed keyless; every attack rejected with its exit code and
//! nothing written or installed.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::vouch_snapshot;
use serde_json::Value;
use vouch_testgh::FakeGithub;
use vouch_testsig::{GithubClaims, LocalSigstore};

pub(crate) const REPO: &str = "cupy/cupy";
pub(crate) const HEAD: &str = "1111111111111111111111111111111111111111";
pub(crate) const TOKEN: &str = "ghp_TestTokenThatMustNeverAppear0123456789";
const WF_ID: u64 = 161335;
const WHEEL: &str = "cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl";

pub(crate) struct World {
    pub dir: tempfile::TempDir,
    pub sigstore: LocalSigstore,
    pub store: PathBuf,
    pub root: PathBuf,
}

/// Claims for a build of `cupy/cupy` by `workflow` (file name), as `event`.
pub(crate) fn claims(event: &str, workflow: &str, run: u64) -> GithubClaims {
    let mut c = GithubClaims::push(REPO, HEAD);
    c.event_name = event.into();
    c.workflow_ref = format!("{REPO}/.github/workflows/{workflow}@{}", c.git_ref);
    c.job_workflow_ref = c.workflow_ref.clone();
    c.run_id = run.to_string();
    c
}

impl World {
    pub(crate) fn new() -> World {
        let dir = tempdir();
        let sigstore = LocalSigstore::start();
        let root = dir.path().join("trusted_root.json");
        std::fs::write(&root, sigstore.trusted_root().to_string()).unwrap();
        let store = dir.path().join("store");
        World {
            dir,
            sigstore,
            store,
            root,
        }
    }

    /// A wheel (bytes) and its keyless bundle, signed as the run described by `c`.
    pub(crate) fn signed(&self, tag: &str, c: &GithubClaims, data: &[u8]) -> (PathBuf, PathBuf) {
        let d = self.dir.path().join(format!("build-{tag}"));
        std::fs::create_dir_all(&d).unwrap();
        let wheel = d.join(WHEEL);
        std::fs::write(&wheel, data).unwrap();
        let bundle = d.join(format!("{WHEEL}.sigstore.json"));
        let extra = ["--cell", "cuda13x-py3.12-linux-64"];
        let r = attest_keyless(&self.sigstore, c, &wheel, &bundle, None, &[], &extra);
        assert_eq!(r.code, 0, "attest: {}", r.stderr);
        (wheel, bundle)
    }

    /// The sample package built by vouch: a real wheel pip installs.
    pub(crate) fn sample_wheel(&self) -> PathBuf {
        build_sample_wheel(self.dir.path())
    }

    /// Signs `data` as a push build with claims `c` and publishes it under the push artifact
    /// name as run `run_id`.
    fn publish_push(&self, tag: &str, c: &GithubClaims, run_id: u64, data: &[u8]) -> u64 {
        let (wheel, bundle) = self.signed(tag, c, data);
        self.publish(&push_name(), run_id, &[wheel, bundle])
    }

    /// Publishes `files` as artifact `name` of push run `run_id` of the build workflow.
    pub(crate) fn publish(&self, name: &str, run_id: u64, files: &[PathBuf]) -> u64 {
        let info = vouch_fetch::RunInfo {
            repo: REPO.into(),
            run_id,
            workflow_id: WF_ID,
            workflow_path: ".github/workflows/vouch-build.yml@refs/heads/main".into(),
            event: "push".into(),
            head_sha: HEAD.into(),
            head_branch: Some("main".into()),
            pr: None,
            default_branch: "main".into(),
        };
        vouch_fetch::publish(&self.store, name, &info, files).unwrap()
    }

    fn edit(&self, rel: &str, f: impl FnOnce(&mut Value)) {
        let p = self.store.join(rel);
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        f(&mut v);
        std::fs::write(&p, v.to_string()).unwrap();
    }

    /// The normal case: a push build of main, artifact `cupy-cuda13x-py3.12-linux-64-<HEAD>`.
    fn push_build(&self) -> u64 {
        self.publish_push(
            "push",
            &claims("push", "vouch-build.yml", 500),
            500,
            b"the wheel",
        )
    }

    fn fetch(&self, gh: &FakeGithub, extra: &[&str]) -> (Run, PathBuf) {
        let out = self.dir.path().join(format!("out-{}", rand_suffix()));
        let token = self.dir.path().join(format!("token-{}", rand_suffix()));
        std::fs::write(&token, TOKEN).unwrap();
        let r = run(vouch()
            .arg("-vvv")
            .arg("fetch")
            .args([
                "--repo",
                REPO,
                "--workflow",
                ".github/workflows/vouch-build.yml",
                "--api-url",
                &gh.url,
                "--token-file",
            ])
            .arg(&token)
            .arg("--trust-root")
            .arg(&self.root)
            .arg("--out")
            .arg(&out)
            .arg("--json")
            .args(extra));
        assert!(!token.exists(), "the token file is deleted after reading");
        for text in [&r.stdout, &r.stderr] {
            assert!(!text.contains(TOKEN), "the token leaked into output");
            assert!(
                !text.contains("blob-signature-secret"),
                "the download URL's query leaked"
            );
        }
        assert!(
            !gh.blob_saw_auth(),
            "the blob host received an Authorization header"
        );
        assert_eq!(
            gh.unauthorized(),
            0,
            "every API call carried the token and API version"
        );
        (r, out)
    }

    /// Fetches the push build from a fresh fake API, which must refuse it; the caller
    /// snapshots the refusal.
    fn push_rejected(&self) -> Run {
        let gh = self.github();
        let (r, out) = self.fetch(&gh, PUSH);
        assert_nothing_written(&out);
        r
    }

    pub(crate) fn github(&self) -> FakeGithub {
        FakeGithub::start(self.store.clone(), TOKEN)
    }

    /// `vouch fetch --repo REPO --api-url URL --trust-root ROOT --out OUT`, for the caller to
    /// add the token and the artifact flags; none of `fetch`'s checks.
    fn fetch_cmd(&self, api_url: &str, out: &Path) -> std::process::Command {
        let mut cmd = vouch();
        cmd.arg("fetch")
            .args(["--repo", REPO, "--api-url", api_url, "--trust-root"])
            .arg(&self.root)
            .arg("--out")
            .arg(out);
        cmd
    }
}

pub(crate) fn rand_suffix() -> String {
    use std::sync::atomic::{AtomicU32, Ordering};
    static N: AtomicU32 = AtomicU32::new(0);
    N.fetch_add(1, Ordering::Relaxed).to_string()
}

fn push_name() -> String {
    format!("cupy-cuda13x-py3.12-linux-64-{HEAD}")
}

const PUSH: &[&str] = &[
    "--event",
    "push",
    "--sha",
    HEAD,
    "--dist",
    "cupy-cuda13x",
    "--python-version",
    "3.12",
    "--platform",
    "linux-64",
    "--cell",
    "cuda13x-py3.12-linux-64",
];

pub(crate) fn assert_nothing_written(out: &Path) {
    assert!(
        !out.exists() || std::fs::read_dir(out).unwrap().next().is_none(),
        "nothing may be written on failure"
    );
}

#[test]
fn push_build_fetches_in_four_api_calls() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    let (r, out) = w.fetch(&gh, PUSH);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["run_id"], 500);
    assert!(gh.api_calls() <= 4, "{} API calls", gh.api_calls());
    assert_eq!(j["api_calls"], gh.api_calls());
    assert_eq!(std::fs::read(out.join(WHEEL)).unwrap(), b"the wheel");
    assert!(out.join(format!("{WHEEL}.sigstore.json")).is_file());
    assert_eq!(
        j["wheels"][0]["verified"]["signer"]["run"],
        "https://github.com/cupy/cupy/actions/runs/500/attempts/1"
    );
}

#[test]
fn newest_passing_candidate_wins_and_rejections_are_reported() {
    let w = World::new();
    w.push_build();
    // A re-run (newer artifact) of a run that failed.
    w.publish_push(
        "rerun",
        &claims("push", "vouch-build.yml", 501),
        501,
        b"rerun wheel",
    );
    w.edit("runs/501.json", |r| r["conclusion"] = "failure".into());
    let gh = w.github();
    let (r, out) = w.fetch(&gh, PUSH);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["run_id"], 500);
    assert!(
        r.json()["rejected"][0]["reason"]
            .as_str()
            .unwrap()
            .contains("did not succeed")
    );
    assert_eq!(std::fs::read(out.join(WHEEL)).unwrap(), b"the wheel");
}

/// The push build with its run edited as an attacker would: fetch must refuse it.
fn pin_attack(edit: impl FnOnce(&mut Value)) -> Run {
    let w = World::new();
    w.push_build();
    w.edit("runs/500.json", edit);
    w.push_rejected()
}

#[test]
fn rejects_same_named_artifact_from_sibling_workflow() {
    vouch_snapshot!(pin_attack(|r| r["workflow_id"] = 999.into()), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run's workflow_id 999 is not 161335 (.github/workflows/vouch-build.yml)",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run's workflow_id 999 is not 161335 (.github/workflows/vouch-build.yml)
    "#);
}

#[test]
fn rejects_failed_run() {
    vouch_snapshot!(pin_attack(|r| r["conclusion"] = "failure".into()), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run did not succeed (status \"completed\", conclusion \"failure\")",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run did not succeed (status "completed", conclusion "failure")
    "#);
}

#[test]
fn rejects_cancelled_run() {
    vouch_snapshot!(pin_attack(|r| r["conclusion"] = "cancelled".into()), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run did not succeed (status \"completed\", conclusion \"cancelled\")",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run did not succeed (status "completed", conclusion "cancelled")
    "#);
}

/// Marks the push build's run 500 as still going.
fn in_progress(w: &World) {
    w.edit("runs/500.json", |r| {
        r["status"] = "in_progress".into();
        r["conclusion"] = Value::Null;
    });
}

/// A push build dispatches its tests from inside its own run, so the test job may fetch while
/// the run is still going: fetch waits for it to complete (here a second into the wait).
#[test]
fn waits_for_the_run_to_complete() {
    let w = World::new();
    w.push_build();
    in_progress(&w);
    let gh = w.github();
    let store = w.store.clone();
    let completes = std::thread::spawn(move || {
        std::thread::sleep(std::time::Duration::from_secs(1));
        let p = store.join("runs/500.json");
        let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&p).unwrap()).unwrap();
        v["status"] = "completed".into();
        v["conclusion"] = "success".into();
        std::fs::write(&p, v.to_string()).unwrap();
    });
    let started = std::time::Instant::now();
    let (r, out) = w.fetch(&gh, &[PUSH, &["--wait-for-run", "60"]].concat());
    completes.join().unwrap();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(out.join(WHEEL)).unwrap(), b"the wheel");
    assert!(
        started.elapsed() < std::time::Duration::from_secs(30),
        "asked again soon after the run completed: {:?}",
        started.elapsed()
    );
}

/// A run still going when the wait is up is refused, and says how long it was waited for.
#[test]
fn refuses_a_run_still_going_when_the_wait_is_up() {
    let w = World::new();
    w.push_build();
    in_progress(&w);
    let gh = w.github();
    let runs = [("1", "waited"), ("0", "not waited")].map(|(secs, label)| {
        let (r, out) = w.fetch(&gh, &[PUSH, &["--wait-for-run", secs]].concat());
        assert_nothing_written(&out);
        (label, r)
    });
    insta::assert_snapshot!(snapshot_cases(runs, &[]), @r#"
    ===== "waited"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run is still \"in_progress\" after [TIME] of waiting for it to complete",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run is still "in_progress" after [TIME] of waiting for it to complete

    ===== "not waited"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run is still \"in_progress\" (not waited for)",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run is still "in_progress" (not waited for)
    "#);
}

/// Issue 31 (6): a same-named artifact from a fork's run that never ends, newer than the real
/// one, is turned down on what its run is (a fork's) without waiting for it to end: the fetch
/// returns the real build well inside `--wait-for-run`, instead of after all of it.
#[test]
fn issue31_a_decoy_whose_run_never_ends_does_not_stall_fetch() {
    let w = World::new();
    w.push_build();
    w.publish_push(
        "decoy",
        &claims("push", "vouch-build.yml", 501),
        501,
        b"decoy",
    );
    w.edit("runs/501.json", |r| {
        r["status"] = "in_progress".into();
        r["conclusion"] = Value::Null;
        r["head_repository"]["full_name"] = "attacker/cupy".into();
        r["head_repository"]["fork"] = true.into();
    });
    let gh = w.github();
    let window = 30;
    let started = std::time::Instant::now();
    let (r, out) = w.fetch(
        &gh,
        &[PUSH, &["--wait-for-run", &window.to_string()]].concat(),
    );
    let took = started.elapsed();
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["run_id"], 500);
    assert_eq!(j["rejected"][0]["run_id"], 501);
    assert_eq!(
        j["rejected"][0]["reason"],
        "a push build's head repository is \"attacker/cupy\", a fork or another repository"
    );
    assert_eq!(std::fs::read(out.join(WHEEL)).unwrap(), b"the wheel");
    assert!(
        took < std::time::Duration::from_secs(window / 3),
        "the decoy held the fetch for {took:?} of its {window}s window"
    );
}

#[test]
fn rejects_run_of_another_event() {
    vouch_snapshot!(pin_attack(|r| r["event"] = "workflow_dispatch".into()), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run's event is \"workflow_dispatch\", expected \"push\"",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run's event is "workflow_dispatch", expected "push"
    "#);
}

#[test]
fn rejects_run_of_another_head_sha() {
    vouch_snapshot!(pin_attack(|r| r["head_sha"] = "3333333333333333333333333333333333333333".into()), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run's head_sha is 3333333333333333333333333333333333333333, expected 1111111111111111111111111111111111111111",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run's head_sha is 3333333333333333333333333333333333333333, expected 1111111111111111111111111111111111111111
    "#);
}

#[test]
fn rejects_fork_run_for_push() {
    let fork = |r: &mut Value| {
        r["head_repository"]["full_name"] = "attacker/cupy".into();
        r["head_repository"]["fork"] = true.into();
    };
    vouch_snapshot!(pin_attack(fork), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): a push build's head repository is \"attacker/cupy\", a fork or another repository",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): a push build's head repository is "attacker/cupy", a fork or another repository
    "#);
}

#[test]
fn rejects_artifact_whose_run_id_is_not_the_pinned_run() {
    let w = World::new();
    w.push_build();
    // The artifact claims run 501; the API's run 501 is another run (id 500).
    let id = 1001;
    w.edit(&format!("artifacts/{id}.json"), |a| {
        a["workflow_run"]["id"] = 501.into()
    });
    std::fs::copy(w.store.join("runs/500.json"), w.store.join("runs/501.json")).unwrap();
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 501): artifact's workflow_run.id is not the run (the artifact names run 501, the run is 500)",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 501): artifact's workflow_run.id is not the run (the artifact names run 501, the run is 500)
    "#);
}

#[test]
fn rejects_expired_artifact() {
    let w = World::new();
    let id = w.push_build();
    let gh = w.github();
    gh.faults.expired.lock().unwrap().push(id);
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 31
    ----- stdout -----
    {
      "exit_code": 31,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): artifact has expired (HTTP 410)",
      "ok": false,
      "status": "download"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): artifact has expired (HTTP 410)
    "#);
}

/// Rewrites the artifact zip with other members (and, as an uploader would, its digest).
fn replace_zip(w: &World, id: u64, members: &[(&str, Vec<u8>)]) {
    let p = w.store.join(format!("artifacts/{id}.zip"));
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    for (name, data) in members {
        z.start_file(*name, zip::write::SimpleFileOptions::default())
            .unwrap();
        std::io::Write::write_all(&mut z, data).unwrap();
    }
    z.finish().unwrap();
    let digest = format!("sha256:{}", sha256_file(&p));
    w.edit(&format!("artifacts/{id}.json"), |a| {
        a["digest"] = digest.into()
    });
}

#[test]
fn rejects_wheel_swapped_inside_the_zip() {
    let w = World::new();
    let id = w.push_build();
    let bundle = std::fs::read(
        w.dir
            .path()
            .join(format!("build-push/{WHEEL}.sigstore.json")),
    )
    .unwrap();
    replace_zip(
        &w,
        id,
        &[
            (WHEEL, b"a trojan wheel".to_vec()),
            (&format!("{WHEEL}.sigstore.json"), bundle),
        ],
    );
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 15
    ----- stdout -----
    {
      "exit_code": 15,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: digest check failed: artifact mismatch: artifact hash does not match any subject in attestation",
      "ok": false,
      "status": "digest"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: digest check failed: artifact mismatch: artifact hash does not match any subject in attestation
    "#);
}

#[test]
fn rejects_bundle_signed_by_another_workflow_of_the_repo() {
    let w = World::new();
    w.publish_push(
        "other-wf",
        &claims("push", "release.yml", 500),
        500,
        b"the wheel",
    );
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: policy check failed: build config workflow (OID .1.18): expected \"https://github.com/cupy/cupy/.github/workflows/vouch-build.yml\", found \"https://github.com/cupy/cupy/.github/workflows/release.yml@refs/heads/main\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: policy check failed: build config workflow (OID .1.18): expected "https://github.com/cupy/cupy/.github/workflows/vouch-build.yml", found "https://github.com/cupy/cupy/.github/workflows/release.yml@refs/heads/main"
    "#);
}

fn archive_attack(members: Vec<(&str, Vec<u8>)>) -> Run {
    let w = World::new();
    let id = w.push_build();
    replace_zip(&w, id, &members);
    let gh = w.github();
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    assert!(!w.dir.path().parent().unwrap().join("evil").exists());
    r
}

#[test]
fn rejects_zip_with_absolute_member() {
    vouch_snapshot!(archive_attack(vec![("/tmp/evil", b"x".to_vec())]), @r#"
    success: false
    exit_code: 32
    ----- stdout -----
    {
      "exit_code": 32,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): member \"/tmp/evil\" has an unsafe name (absolute path)",
      "ok": false,
      "status": "unsafe-archive"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): member "/tmp/evil" has an unsafe name (absolute path)
    "#);
}

#[test]
fn rejects_zip_with_symlink_member() {
    let w = World::new();
    let id = w.push_build();
    let p = w.store.join(format!("artifacts/{id}.zip"));
    let mut z = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    z.add_symlink(
        "link",
        "/etc/passwd",
        zip::write::SimpleFileOptions::default(),
    )
    .unwrap();
    z.finish().unwrap();
    let digest = format!("sha256:{}", sha256_file(&p));
    w.edit(&format!("artifacts/{id}.json"), |a| {
        a["digest"] = digest.into()
    });
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 32
    ----- stdout -----
    {
      "exit_code": 32,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): member \"link\" is a symbolic link",
      "ok": false,
      "status": "unsafe-archive"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): member "link" is a symbolic link
    "#);
}

#[test]
fn rejects_zip_with_ten_thousand_members() {
    let names: Vec<String> = (0..10_000).map(|i| format!("f{i}")).collect();
    vouch_snapshot!(archive_attack(names.iter().map(|n| (n.as_str(), Vec::new())).collect()), @r#"
    success: false
    exit_code: 32
    ----- stdout -----
    {
      "exit_code": 32,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): 10000 members, over the limit of 1000",
      "ok": false,
      "status": "unsafe-archive"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): 10000 members, over the limit of 1000
    "#);
}

#[test]
fn rejects_zip_bomb() {
    // One deflated member of 10 MB of zeros (about 10 KB), raw-copied 1000 times: 10 MB on
    // the wire, 10 GB declared. The declared sizes stop it before anything is inflated.
    let w = World::new();
    let id = w.push_build();
    let seed = w.dir.path().join("seed.zip");
    let mut z = zip::ZipWriter::new(std::fs::File::create(&seed).unwrap());
    z.start_file(
        "zeros",
        zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated),
    )
    .unwrap();
    std::io::Write::write_all(&mut z, &vec![0u8; 10 << 20]).unwrap();
    z.finish().unwrap();
    let p = w.store.join(format!("artifacts/{id}.zip"));
    let mut src = zip::ZipArchive::new(std::fs::File::open(&seed).unwrap()).unwrap();
    let mut bomb = zip::ZipWriter::new(std::fs::File::create(&p).unwrap());
    for i in 0..1000 {
        bomb.raw_copy_file_rename(src.by_index(0).unwrap(), format!("z{i}"))
            .unwrap();
    }
    bomb.finish().unwrap();
    assert!(std::fs::metadata(&p).unwrap().len() < 20 << 20);
    let digest = format!("sha256:{}", sha256_file(&p));
    w.edit(&format!("artifacts/{id}.json"), |a| {
        a["digest"] = digest.into()
    });
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 32
    ----- stdout -----
    {
      "exit_code": 32,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): members add up to more than 4294967296 bytes uncompressed (zip bomb?)",
      "ok": false,
      "status": "unsafe-archive"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): members add up to more than 4294967296 bytes uncompressed (zip bomb?)
    "#);
}

#[test]
fn rejects_truncated_download() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    gh.faults
        .truncate
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 31
    ----- stdout -----
    {
      "exit_code": 31,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): GitHub API: GET http://127.0.0.1:[PORT]/blob/1001: gave up after 4 attempts: connection failed",
      "ok": false,
      "status": "download"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): GitHub API: GET http://127.0.0.1:[PORT]/blob/1001: gave up after 4 attempts: connection failed
    "#);
}

#[test]
fn retries_a_500_then_succeeds() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    gh.faults
        .run_500s
        .store(1, std::sync::atomic::Ordering::Relaxed);
    let (r, _) = w.fetch(&gh, PUSH);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(gh.api_calls(), 5, "one retried call");
}

#[test]
fn waits_on_429_retry_after_then_succeeds() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    gh.faults
        .run_429_once
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let t = std::time::Instant::now();
    let (r, _) = w.fetch(&gh, PUSH);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        t.elapsed() >= std::time::Duration::from_secs(1),
        "retry-after: 1 was honoured"
    );
}

#[test]
fn permanent_5xx_fails_after_bounded_retries() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    gh.faults
        .run_500s
        .store(100, std::sync::atomic::Ordering::Relaxed);
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 31
    ----- stdout -----
    {
      "exit_code": 31,
      "fetched": false,
      "message": "GitHub API: GET http://127.0.0.1:[PORT]/repos/cupy/cupy/actions/runs/500: gave up after 4 attempts: HTTP 500",
      "ok": false,
      "status": "download"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: GitHub API: GET http://127.0.0.1:[PORT]/repos/cupy/cupy/actions/runs/500: gave up after 4 attempts: HTTP 500
    "#);
    assert_eq!(gh.api_calls(), 2 + 4);
}

#[test]
fn paginates_artifact_lists() {
    let w = World::new();
    for run_id in [498, 499] {
        w.publish_push(
            &format!("old{run_id}"),
            &claims("push", "vouch-build.yml", run_id),
            run_id,
            b"old",
        );
        w.edit(&format!("runs/{run_id}.json"), |r| {
            r["conclusion"] = "failure".into()
        });
    }
    w.push_build();
    let gh = w.github();
    gh.faults
        .page_size
        .store(2, std::sync::atomic::Ordering::Relaxed);
    let (r, _) = w.fetch(&gh, PUSH);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["run_id"], 500);
}

#[test]
fn install_installs_nothing_when_a_check_fails_and_pins_hashes_when_all_pass() {
    let w = World::new();
    let wheel = w.sample_wheel();
    let name = wheel.file_name().unwrap().to_str().unwrap().to_owned();
    let d = w.dir.path().join("sign");
    std::fs::create_dir_all(&d).unwrap();
    let bundle = d.join(format!("{name}.sigstore.json"));
    let r = attest_keyless(
        &w.sigstore,
        &claims("push", "vouch-build.yml", 500),
        &wheel,
        &bundle,
        None,
        &[],
        &[],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let art = "vouch-sample-py3.11-linux-64";
    w.publish(&format!("{art}-{HEAD}"), 500, &[wheel.clone(), bundle]);
    let target = w.dir.path().join("site");
    let install = |extra: &[&str]| {
        run(vouch()
            .arg("install")
            .args([
                "--repo",
                REPO,
                "--event",
                "push",
                "--sha",
                HEAD,
                "--artifact-name",
                &format!("{art}-{HEAD}"),
            ])
            .arg("--store")
            .arg(&w.store)
            .arg("--trust-root")
            .arg(&w.root)
            .arg("--python")
            .arg(venv_python())
            .args(extra)
            .arg("--")
            .arg("--target")
            .arg(&target)
            .arg("-q"))
    };
    // A policy the artifact does not meet (another run event): nothing installed.
    w.edit("runs/500.json", |r| r["event"] = "workflow_dispatch".into());
    let r = install(&[]);
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert!(!target.exists(), "nothing installed");
    w.edit("runs/500.json", |r| r["event"] = "push".into());
    let r = install(&[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
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

#[test]
fn token_from_environment_works_with_a_warning() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    let r = vouch_snapshot!(w
        .fetch_cmd(&gh.url, &w.dir.path().join("o"))
        .args(PUSH)
        .env("GH_TOKEN", TOKEN), @r#"
            success: true
            exit_code: 0
            ----- stdout -----
            sha256:[SHA256]  [TEMP]/o/cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl

            ----- stderr -----
            looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
            warning: using the token from $GH_TOKEN; prefer --token-file (environment variables leak into child processes)
            verified artifact 1001 from run 500 (4 API calls)
        "#);
    // The token must never appear, whatever else the output says: a negative check.
    assert!(!r.stderr.contains(TOKEN) && !r.stdout.contains(TOKEN));
}

/// A newer same-named decoy that fails pinning must not hide why the real candidate failed.
#[test]
fn exit_code_comes_from_the_candidate_that_got_furthest() {
    let w = World::new();
    w.publish_push(
        "other-wf",
        &claims("push", "release.yml", 500),
        500,
        b"the wheel",
    );
    w.publish_push(
        "decoy",
        &claims("push", "vouch-build.yml", 501),
        501,
        b"decoy",
    );
    w.edit("runs/501.json", |r| r["event"] = "workflow_dispatch".into());
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1002 (run 501): run's event is \"workflow_dispatch\", expected \"push\"; artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: policy check failed: build config workflow (OID .1.18): expected \"https://github.com/cupy/cupy/.github/workflows/vouch-build.yml\", found \"https://github.com/cupy/cupy/.github/workflows/release.yml@refs/heads/main\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1002 (run 501): run's event is "workflow_dispatch", expected "push"; artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: policy check failed: build config workflow (OID .1.18): expected "https://github.com/cupy/cupy/.github/workflows/vouch-build.yml", found "https://github.com/cupy/cupy/.github/workflows/release.yml@refs/heads/main"
    "#);
}

#[test]
fn refuses_plain_http_api_off_loopback() {
    let w = World::new();
    vouch_snapshot!(w
        .fetch_cmd("http://api.example.invalid", &w.dir.path().join("o"))
        .args(PUSH)
        .env("GH_TOKEN", TOKEN), @r#"
            success: false
            exit_code: 31
            ----- stdout -----

            ----- stderr -----
            looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
            warning: using the token from $GH_TOKEN; prefer --token-file (environment variables leak into child processes)
            error: GitHub API
              caused by: API URL http://api.example.invalid/: plain http is only allowed on loopback (the token would travel in clear)
        "#);
}

// ---------------------------------------------------------------- issue 12

/// The zip served is genuine and verifies, but the listing's `digest` says another zip was
/// uploaded: only the digest check stands between them.
#[test]
fn issue12_rejects_download_whose_digest_is_not_the_listed_one() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    *gh.faults.listed_digest.lock().unwrap() = Some(format!("sha256:{}", "ab".repeat(32)));
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 31
    ----- stdout -----
    {
      "exit_code": 31,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): download's digest sha256:[SHA256] is not the artifact's sha256:[SHA256]",
      "ok": false,
      "status": "download"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): download's digest sha256:[SHA256] is not the artifact's sha256:[SHA256]
    "#);
}

/// A genuine keyless wheel and bundle of run 499, uploaded as run 500's artifact: the run is
/// pinned through the API, and the certificate must name that same run.
#[test]
fn issue12_rejects_bundle_replayed_from_another_run() {
    let w = World::new();
    w.publish_push(
        "run499",
        &claims("push", "vouch-build.yml", 499),
        500,
        b"the wheel",
    );
    vouch_snapshot!(w.push_rejected(), @r#"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "exit_code": 16,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: policy check failed: run (OID .1.21): expected \"500\", found \"https://github.com/cupy/cupy/actions/runs/499/attempts/1\"",
      "ok": false,
      "status": "policy"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: policy check failed: run (OID .1.21): expected "500", found "https://github.com/cupy/cupy/actions/runs/499/attempts/1"
    "#);
}

/// The API answers the download with a 302 to plain http on a host that is not loopback by
/// name (`0.0.0.0` still reaches the test server, so a client that follows it really gets the
/// zip, and the fetch would pass).
#[test]
fn issue12_refuses_plain_http_blob_url_off_loopback() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    *gh.faults.blob_base.lock().unwrap() = Some(gh.url.replace("127.0.0.1", "0.0.0.0"));
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 31
    ----- stdout -----
    {
      "exit_code": 31,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): GitHub API: GET http://0.0.0.0:[PORT]/blob/1001: refusing a non-https download URL",
      "ok": false,
      "status": "download"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): GitHub API: GET http://0.0.0.0:[PORT]/blob/1001: refusing a non-https download URL
    "#);
}

/// `..` members: the name climbs out of fetch's private directory into the temp directory,
/// under a name nothing else uses, and that exact path must not appear. (A single `../evil`
/// would land inside fetch's own temp directory, where no check could see it.)
#[test]
fn issue12_zip_traversal_writes_nothing_outside() {
    let unique = format!(
        "vouch-issue12-escape-{}-{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .unwrap()
            .as_nanos()
    );
    // fetch extracts into <tmp>/vouch-fetch-XXXX/x: two `..` reach <tmp>.
    let member = format!("../../{unique}/evil");
    let landing = std::env::temp_dir().join(&unique);
    let w = World::new();
    let id = w.push_build();
    replace_zip(&w, id, &[(&member, b"x".to_vec())]);
    let gh = w.github();
    let (r, out) = w.fetch(&gh, PUSH);
    let written = landing.join("evil").exists();
    let _ = std::fs::remove_dir_all(&landing);
    assert!(!written, "{landing:?} was written");
    assert_nothing_written(&out);
    vouch_snapshot!(
        [(r"vouch-issue12-escape-[0-9]+-[0-9]+", "vouch-issue12-escape-[ID]")],
        &r,
        @r#"
    success: false
    exit_code: 32
    ----- stdout -----
    {
      "exit_code": 32,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): member \"../../vouch-issue12-escape-[ID]/evil\" has an unsafe name (`..` component)",
      "ok": false,
      "status": "unsafe-archive"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): member "../../vouch-issue12-escape-[ID]/evil" has an unsafe name (`..` component)
    "#);
}

/// `fetch` once wrote `DIR/.<name>.partial` with a plain create, following a link planted there.
#[test]
fn issue12_fetch_never_writes_through_a_planted_link() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    let out = w.dir.path().join("planted-out");
    std::fs::create_dir_all(&out).unwrap();
    let victim = w.dir.path().join("victim");
    std::fs::write(&victim, b"precious").unwrap();
    let bundle = format!("{WHEEL}.sigstore.json");
    for name in [WHEEL, bundle.as_str()] {
        std::os::unix::fs::symlink(&victim, out.join(format!(".{name}.partial"))).unwrap();
    }
    let token = w.dir.path().join("planted-token");
    std::fs::write(&token, TOKEN).unwrap();
    let r = run(w
        .fetch_cmd(&gh.url, &out)
        .arg("--token-file")
        .arg(&token)
        .args(PUSH));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(std::fs::read(&victim).unwrap(), b"precious");
    for name in [WHEEL, bundle.as_str()] {
        let meta = std::fs::symlink_metadata(out.join(name)).unwrap();
        assert!(
            meta.is_file(),
            "{name} is a regular file, not the planted link"
        );
    }
    assert_eq!(std::fs::read(out.join(WHEEL)).unwrap(), b"the wheel");
}

/// `--token-file` is consumed first: a usage error (ours or clap's) or `--store` (which needs no
/// token) must not leave it behind; `--keep-token-file` keeps it.
#[test]
fn issue12_token_file_is_deleted_on_usage_errors_and_with_store() {
    let w = World::new();
    w.push_build();
    let token = w.dir.path().join("tok");
    let out = w.dir.path().join("o");
    let cases: Vec<(Vec<&str>, i32)> = vec![
        // Ours: no --repo.
        (vec!["--out", out.to_str().unwrap(), "--event", "push"], 2),
        // Clap's: no --out at all.
        (vec!["--repo", REPO], 2),
        // Clap's: a conflict found after parsing.
        (
            vec![
                "--out",
                out.to_str().unwrap(),
                "--staging",
                "--trust-root",
                "x",
            ],
            2,
        ),
    ];
    for (args, code) in &cases {
        std::fs::write(&token, TOKEN).unwrap();
        let r = run(vouch()
            .arg("fetch")
            .args(args)
            .arg("--token-file")
            .arg(&token));
        assert_eq!(r.code, *code, "{args:?}: {}", r.stderr);
        assert!(!token.exists(), "{args:?}: the token file is gone");
    }
    // Before clap even parses: an unknown flag, --help, and the token file given first.
    for args in [
        vec!["--bogus", "--token-file", token.to_str().unwrap()],
        vec!["--help", "--token-file", token.to_str().unwrap()],
        vec!["--token-file", token.to_str().unwrap(), "--bogus"],
    ] {
        std::fs::write(&token, TOKEN).unwrap();
        let r = run(vouch().arg("fetch").args(&args));
        assert!(r.code == 2 || r.code == 0, "{args:?}: {}", r.stderr);
        assert!(!token.exists(), "{args:?}: the token file is gone");
        assert!(!r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN));
    }
    std::fs::write(&token, TOKEN).unwrap();
    let r = run(vouch()
        .args(["fetch", "--bogus"])
        .env("GH_TOKEN_FILE", &token));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!token.exists(), "GH_TOKEN_FILE with an unknown flag: gone");
    // Another command leaves GH_TOKEN_FILE alone: a later `vouch install` step needs it.
    std::fs::write(&token, TOKEN).unwrap();
    let r = run(vouch()
        .args(["plan", "--bogus"])
        .env("GH_TOKEN_FILE", &token));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(token.exists(), "plan does not read GH_TOKEN_FILE");
    // From the environment, too.
    std::fs::write(&token, TOKEN).unwrap();
    let r = run(vouch()
        .arg("fetch")
        .arg("--out")
        .arg(&out)
        .env("GH_TOKEN_FILE", &token));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!token.exists(), "GH_TOKEN_FILE: the token file is gone");
    // With --store: the fetch succeeds without any token, and the file is gone all the same.
    std::fs::write(&token, TOKEN).unwrap();
    let r = run(vouch()
        .arg("fetch")
        .args(["--repo", REPO, "--store"])
        .arg(&w.store)
        .arg("--trust-root")
        .arg(&w.root)
        .arg("--out")
        .arg(&out)
        .arg("--token-file")
        .arg(&token)
        .args(PUSH));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(!token.exists(), "--store: the token file is gone");
    // --keep-token-file, even on a usage error.
    std::fs::write(&token, TOKEN).unwrap();
    let r = run(vouch()
        .arg("fetch")
        .arg("--out")
        .arg(&out)
        .arg("--token-file")
        .arg(&token)
        .arg("--keep-token-file"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(token.exists(), "--keep-token-file keeps it");
}

/// Usage errors a FlexCI user meets, all found before any API call.
#[test]
fn issue12_fetch_checks_its_inputs_before_any_api_call() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    let junk_key = w.dir.path().join("junk.pem");
    std::fs::write(
        &junk_key,
        "-----BEGIN PUBLIC KEY-----\nnot base64\n-----END PUBLIC KEY-----\n",
    )
    .unwrap();
    let cases: Vec<(Vec<&str>, i32, &str)> = vec![
        (
            vec![
                "--event",
                "pull_requests",
                "--sha",
                HEAD,
                "--artifact-name",
                "x",
            ],
            2,
            "--event \"pull_requests\": expected one of push, pull_request, workflow_dispatch, schedule",
        ),
        (
            vec![
                "--event",
                "push",
                "--sha",
                "1111111",
                "--artifact-name",
                "x",
            ],
            2,
            "--sha \"1111111\" is not a full commit SHA",
        ),
        (
            vec![
                "--event",
                "push",
                "--pr",
                "7",
                "--sha",
                HEAD,
                "--artifact-name",
                "x",
            ],
            2,
            "--pr 7 names a pull request, but --event is \"push\"",
        ),
        (
            vec![
                "--artifact-name",
                "x",
                "--dist",
                "cupy-cuda13x",
                "--event",
                "push",
                "--sha",
                HEAD,
            ],
            2,
            "cannot be used with",
        ),
        (
            vec!["--from-flexci", "--artifact-name", "x"],
            2,
            "--from-flexci: none of FLEXCI_BRANCH, FLEXCI_REFERENCE_COMMIT_ID, FLEXCI_COMMIT_ID is set",
        ),
        (
            [&["--key", junk_key.to_str().unwrap()][..], PUSH].concat(),
            17,
            "not a PEM public key",
        ),
    ];
    for (args, code, expected) in cases {
        let r = run(w
            .fetch_cmd(&gh.url, &w.dir.path().join("o"))
            .args(&args)
            .env("GH_TOKEN", TOKEN)
            .env_remove("FLEXCI_BRANCH")
            .env_remove("FLEXCI_REFERENCE_COMMIT_ID")
            .env_remove("FLEXCI_COMMIT_ID"));
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{args:?}: {}", r.stderr);
    }
    assert_eq!(gh.api_calls(), 0, "nothing reached the API");
    // --api-url means nothing with --store.
    let r = run(vouch()
        .arg("fetch")
        .args(["--repo", REPO, "--api-url", &gh.url, "--store"])
        .arg(&w.store)
        .arg("--out")
        .arg(w.dir.path().join("o"))
        .args(PUSH));
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// A 401 says where a token comes from.
#[test]
fn issue12_unauthorized_names_token_file_and_gh_token() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    let fetch = |token: Option<&Path>| {
        let mut cmd = w.fetch_cmd(&gh.url, &w.dir.path().join("o"));
        cmd.args(PUSH)
            .env_remove("GH_TOKEN")
            .env_remove("GITHUB_TOKEN")
            .env_remove("GH_TOKEN_FILE");
        if let Some(t) = token {
            cmd.arg("--token-file").arg(t);
        }
        run(&mut cmd)
    };
    vouch_snapshot!(fetch(None), @r#"
        success: false
        exit_code: 31
        ----- stdout -----

        ----- stderr -----
        looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
        error: GitHub API: GET http://127.0.0.1:[PORT]/repos/cupy/cupy/actions/workflows/vouch-build.yml failed with HTTP 401: Bad credentials (no token was given: pass one with --token-file FILE, or set GH_TOKEN)
    "#);
    let wrong = w.dir.path().join("wrong-token");
    std::fs::write(&wrong, "ghp_wrong").unwrap();
    let r = vouch_snapshot!(fetch(Some(&wrong)), @r#"
        success: false
        exit_code: 31
        ----- stdout -----

        ----- stderr -----
        looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
        error: GitHub API: GET http://127.0.0.1:[PORT]/repos/cupy/cupy/actions/workflows/vouch-build.yml failed with HTTP 401: Bad credentials (the token from --token-file "[TEMP]/wrong-token" was refused: is it expired, or for another host?)
    "#);
    assert!(!r.stderr.contains("ghp_wrong"));
}

/// "(expired artifacts are no longer listed)" explains an empty listing only.
#[test]
fn issue12_expiry_hint_only_when_no_artifact_is_listed() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    let (r, out) = w.fetch(
        &gh,
        &[
            "--event",
            "push",
            "--sha",
            HEAD,
            "--artifact-name",
            "no-such-artifact",
        ],
    );
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"no-such-artifact\" is listed (expired artifacts are no longer listed)",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for no-such-artifact from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "no-such-artifact" is listed (expired artifacts are no longer listed)
    "#);
    w.edit("runs/500.json", |r| r["conclusion"] = "failure".into());
    let (r, out) = w.fetch(&gh, PUSH);
    assert_nothing_written(&out);
    vouch_snapshot!(&r, @r#"
    success: false
    exit_code: 30
    ----- stdout -----
    {
      "exit_code": 30,
      "fetched": false,
      "message": "no artifact named \"cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111\" passed: artifact 1001 (run 500): run did not succeed (status \"completed\", conclusion \"failure\")",
      "ok": false,
      "status": "no-run"
    }

    ----- stderr -----
    looking for cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111 from .github/workflows/vouch-build.yml (push of cupy/cupy)
    error: no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): run did not succeed (status "completed", conclusion "failure")
    "#);
    assert!(!r.stderr.contains("expired"), "{}", r.stderr);
}

/// `--source NAME[:ARG]` reaches every registered source: `store:DIR` reads the same artifact
/// `--store DIR` does, `github:URL` the same as `--api-url URL`, and a source nobody registered
/// is a usage error that lists the ones there are.
#[test]
fn issue13_source_spec_reaches_every_registered_source() {
    let w = World::new();
    w.push_build();
    let gh = w.github();
    for spec in [
        format!("store:{}", w.store.display()),
        format!("github:{}", gh.url),
    ] {
        let out = w.dir.path().join(format!("out-{}", rand_suffix()));
        let token = w.dir.path().join(format!("token-{}", rand_suffix()));
        std::fs::write(&token, TOKEN).unwrap();
        let r = run(vouch()
            .args(["fetch", "--repo", REPO, "--source", &spec])
            .arg("--token-file")
            .arg(&token)
            .arg("--trust-root")
            .arg(&w.root)
            .arg("--out")
            .arg(&out)
            .args(PUSH));
        assert_eq!(r.code, 0, "{spec}: {}", r.stderr);
        assert_eq!(
            std::fs::read(out.join(WHEEL)).unwrap(),
            b"the wheel",
            "{spec}"
        );
    }
    vouch_snapshot!(vouch().args(["fetch", "--source", "s3:bucket", "--out", "x"]), @r#"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: invalid value 's3:bucket' for '--source <SOURCE>': "s3:bucket": expected `github[:API_URL]` or `store:DIR`

    For more information, try '--help'.
    "#);
}
