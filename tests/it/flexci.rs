//! Issue 14: the FlexCI consumer. `vouch install --extras` (the verified wheel by hash, its
//! requirements apart, from a local `--find-links` directory standing in for the index) and
//! the ready-to-copy `pyproject-templates/cupy/flexci/fetch-wheel.sh`, run against the fake
//! GitHub API on loopback and a local Sigstore instance.

use std::path::{Path, PathBuf};

use crate::common::*;
use vouch_testgh::FakeGithub;
use vouch_testsig::{GithubClaims, LocalSigstore};

const REPO: &str = "cupy/cupy";
const HEAD: &str = "1111111111111111111111111111111111111111";
const TOKEN: &str = "ghp_FlexciTokenThatMustNeverAppear0123456789";
const SCRIPT: &str = "pyproject-templates/cupy/flexci/fetch-wheel.sh";

/// A pure-Python wheel `name-version` whose METADATA carries `headers` (Requires-Dist,
/// Provides-Extra), with one module `<import name>/__init__.py`.
fn wheel(dir: &Path, name: &str, version: &str, headers: &[&str]) -> PathBuf {
    let escaped = name.replace('-', "_");
    let dist_info = format!("{escaped}-{version}.dist-info");
    let mut metadata = format!("Metadata-Version: 2.1\nName: {name}\nVersion: {version}\n");
    for h in headers {
        metadata.push_str(h);
        metadata.push('\n');
    }
    let module = format!("{escaped}/__init__.py");
    let code = format!("VERSION = {version:?}\n");
    let wheel_file =
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n";
    let (m, w) = (
        format!("{dist_info}/METADATA"),
        format!("{dist_info}/WHEEL"),
    );
    let mut entries = vec![
        entry(&module, code.as_bytes()),
        entry(&m, metadata.as_bytes()),
        entry(&w, wheel_file),
    ];
    let record_path = format!("{dist_info}/RECORD");
    let record = record_for(&entries, &record_path);
    entries.push(entry(&record_path, &record));
    std::fs::create_dir_all(dir).unwrap();
    let path = dir.join(format!("{escaped}-{version}-py3-none-any.whl"));
    write_zip(&path, &entries);
    path
}

struct World {
    dir: tempfile::TempDir,
    sigstore: LocalSigstore,
    store: PathBuf,
    root: PathBuf,
    /// The `--find-links` directory: the requirements' wheels, standing in for the index.
    index: PathBuf,
}

impl World {
    fn new() -> World {
        let dir = tempdir();
        let sigstore = LocalSigstore::start();
        let root = dir.path().join("trusted_root.json");
        std::fs::write(&root, sigstore.trusted_root().to_string()).unwrap();
        let index = dir.path().join("index");
        wheel(&index, "dep-base", "1.0", &[]);
        // Needs the verified distribution back: with --target pip cannot see it installed,
        // and the index does not have it, so only the verified file can satisfy this.
        wheel(&index, "dep-test", "1.2", &["Requires-Dist: cupy-cuda13x"]);
        wheel(&index, "dep-more", "2.0", &[]);
        World {
            store: dir.path().join("store"),
            dir,
            sigstore,
            root,
            index,
        }
    }

    /// The CuPy stand-in: `dep-never` and `dep-win` are not in the index, so selecting either
    /// fails the install.
    fn cupy_wheel(&self) -> PathBuf {
        wheel(
            &self.dir.path().join("build"),
            "cupy-cuda13x",
            "14.2.0",
            &[
                "Requires-Dist: dep-base>=1",
                "Requires-Dist: dep-test; extra == \"test\"",
                "Requires-Dist: dep-win; sys_platform == \"win32\" and extra == \"test\"",
                "Requires-Dist: cupy-cuda13x[more]; extra == \"test\"",
                "Requires-Dist: dep-more; extra == \"more\"",
                "Requires-Dist: dep-never; extra == \"docs\"",
                "Provides-Extra: test",
                "Provides-Extra: docs",
                "Provides-Extra: more",
            ],
        )
    }

    /// Signs the CuPy stand-in as run `run` of vouch-build.yml, a push of HEAD to main, and
    /// publishes it under `name`. The store also knows vouch-sign.yml, where PR builds come
    /// from, with no runs.
    fn publish(&self, name: &str, run: u64) {
        self.publish_at(name, run, HEAD);
    }

    /// [`World::publish`], of commit `sha`.
    fn publish_at(&self, name: &str, run: u64, sha: &str) {
        let wheel = self.cupy_wheel();
        let bundle = PathBuf::from(format!("{}.sigstore.json", wheel.display()));
        let mut c = GithubClaims::push(REPO, sha);
        c.workflow_ref = format!("{REPO}/.github/workflows/vouch-build.yml@{}", c.git_ref);
        c.job_workflow_ref = c.workflow_ref.clone();
        c.run_id = run.to_string();
        let r = attest_keyless(&self.sigstore, &c, &wheel, &bundle, Some("{}"), &[], &[]);
        assert_eq!(r.code, 0, "attest: {}", r.stderr);
        let info = vouch_fetch::RunInfo {
            repo: REPO.into(),
            run_id: run,
            workflow_id: 161335,
            workflow_path: ".github/workflows/vouch-build.yml@refs/heads/main".into(),
            event: "push".into(),
            head_sha: sha.into(),
            head_branch: Some("main".into()),
            pr: None,
            default_branch: "main".into(),
        };
        vouch_fetch::publish(&self.store, name, &info, &[wheel, bundle]).unwrap();
        std::fs::write(
            self.store.join("workflows/vouch-sign.yml.json"),
            r#"{"id": 161336, "path": ".github/workflows/vouch-sign.yml", "state": "active"}"#,
        )
        .unwrap();
    }

    /// pip's arguments: into `target`, from the local index only.
    fn pip_args(&self, target: &Path) -> Vec<String> {
        vec![
            "--target".into(),
            target.display().to_string(),
            "--no-index".into(),
            "--find-links".into(),
            self.index.display().to_string(),
            "-q".into(),
        ]
    }
}

/// What `target` holds: the top-level module directories, sorted.
fn modules(target: &Path) -> Vec<String> {
    let mut names: Vec<String> = std::fs::read_dir(target)
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".dist-info") && !n.starts_with("__"))
        .collect();
    names.sort();
    names
}

#[test]
fn install_extras_installs_the_wheel_by_hash_and_its_requirements_apart() {
    let w = World::new();
    let name = format!("cupy-cuda13x-py3.12-linux-64-{HEAD}");
    w.publish(&name, 500);
    let install = |extras: &str, target: &Path, json: bool| {
        run(vouch()
            .args(["install", "--repo", REPO, "--event", "push", "--sha", HEAD])
            .args(["--artifact-name", &name, "--extras", extras])
            .arg("--store")
            .arg(&w.store)
            .arg("--trust-root")
            .arg(&w.root)
            .arg("--python")
            .arg(venv_python())
            .args(json.then_some("--json"))
            .arg("--")
            // pip's own chatter with --json: it must go to stderr, or stdout is no JSON.
            .args(
                w.pip_args(target)
                    .into_iter()
                    .filter(|a| !(json && a == "-q")),
            ))
    };

    // An extra the wheel does not provide: a usage error, and nothing installed, not even the
    // verified wheel.
    let target = w.dir.path().join("site-typo");
    let r = install("test,tset", &target, false);
    assert_exit(&r, 2, "--extras: \"tset\" is not an extra of ");
    assert!(
        r.stderr.contains("; it provides docs, more, test"),
        "{}",
        r.stderr
    );
    assert!(!target.exists(), "nothing may be installed");

    // `test`: the base requirement, test's, and `more` through the wheel's requirement on
    // itself; not `docs`', not the Windows-only one.
    let target = w.dir.path().join("site");
    let r = install("test", &target, true);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("they come from the package index and are NOT verified by vouch"),
        "{}",
        r.stderr
    );
    let j = r.json();
    let deps = &j["dependencies"];
    assert_eq!(deps["verified_by_vouch"], false);
    assert_eq!(deps["plan"][0]["name"], "cupy-cuda13x");
    assert_eq!(
        deps["plan"][0]["extras"],
        serde_json::json!(["more", "test"])
    );
    assert_eq!(
        deps["plan"][0]["requirements"],
        serde_json::json!(["dep-base>=1", "dep-test", "dep-more"])
    );
    let mut installed: Vec<(String, String)> = deps["installed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|i| {
            (
                i["name"].as_str().unwrap().to_owned(),
                i["version"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    installed.sort();
    assert_eq!(
        installed,
        [
            ("dep-base".to_owned(), "1.0".to_owned()),
            ("dep-more".to_owned(), "2.0".to_owned()),
            ("dep-test".to_owned(), "1.2".to_owned()),
        ],
        "pip's report, less the verified wheel"
    );
    assert_eq!(
        modules(&target),
        ["cupy_cuda13x", "dep_base", "dep_more", "dep_test"]
    );
    // The installed CuPy is the verified one: its bytes came from the wheel the statement
    // names (its RECORD line for the module matches what was signed).
    assert_eq!(
        std::fs::read_to_string(target.join("cupy_cuda13x/__init__.py")).unwrap(),
        "VERSION = \"14.2.0\"\n"
    );

    // The human report names what came from the index.
    let target = w.dir.path().join("site-human");
    let r = install("more", &target, false);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.ends_with(
            "installed 1 verified wheel(s)\ninstalled 2 distribution(s) from the package index, NOT verified by vouch:\n  dep-base 1.0\n  dep-more 2.0\n"
        ),
        "{}",
        r.stdout
    );
    assert!(
        r.stderr
            .contains("cupy-cuda13x 14.2.0 [more] requires: dep-base>=1, dep-more"),
        "{}",
        r.stderr
    );
}

/// A git checkout as FlexCI makes one: for a pull request `refs/pull/<N>/merge` (a merge whose
/// second parent is the head), else the commit itself. Returns its directory and the commit
/// under test (the head).
fn checkout(dir: &Path, merge: bool) -> (PathBuf, String) {
    let repo = dir.join(if merge {
        "checkout-pr"
    } else {
        "checkout-push"
    });
    std::fs::create_dir_all(&repo).unwrap();
    let git = |args: &[&str]| {
        let out = std::process::Command::new("git")
            .arg("-C")
            .arg(&repo)
            .args(["-c", "user.name=t", "-c", "user.email=t@example.invalid"])
            .args([
                "-c",
                "init.defaultBranch=main",
                "-c",
                "commit.gpgsign=false",
            ])
            .args(args)
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "git {args:?}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        String::from_utf8(out.stdout).unwrap().trim().to_owned()
    };
    git(&["init", "-q"]);
    git(&["commit", "-q", "--allow-empty", "-m", "base"]);
    if !merge {
        return (repo.clone(), git(&["rev-parse", "HEAD"]));
    }
    git(&["checkout", "-q", "-b", "head"]);
    git(&["commit", "-q", "--allow-empty", "-m", "the pull request"]);
    let head = git(&["rev-parse", "HEAD"]);
    git(&["checkout", "-q", "main"]);
    git(&["commit", "-q", "--allow-empty", "-m", "main moved on"]);
    git(&["merge", "-q", "--no-ff", "-m", "merge", "head"]);
    (repo, head)
}

/// Checks `sha` out at `repo`, detached: what check-checkout.sh does with a pull request's
/// merge checkout.
fn detach(repo: &Path, sha: &str) {
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(repo)
        .args(["checkout", "-q", "--detach", sha])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
}

/// `fetch-wheel.sh` as a FlexCI job runs it: `env` sets the job's variables on top of a clean
/// slate (vouch preinstalled, the token file, the checkout to check), `path` leads PATH.
struct Job<'a> {
    w: &'a World,
    gh: FakeGithub,
    path: String,
}

impl Job<'_> {
    fn run(&self, token: &str, target: &Path, env: &[(&str, &str)]) -> Run {
        let token_path = self.w.dir.path().join(format!("token-{token}"));
        std::fs::write(&token_path, TOKEN).unwrap();
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(repo_root().join(SCRIPT))
            .args(["--api-url", &self.gh.url])
            .arg("--trust-root")
            .arg(&self.w.root)
            .arg("--")
            .args(self.w.pip_args(target))
            .env("PATH", &self.path)
            .env("VOUCH_INSTALL", "preinstalled")
            .env("CUPY_CI_GITHUB_TOKEN_FILE", &token_path)
            .env("VOUCH_CACHE_DIR", cache_dir());
        for var in [
            "FLEXCI_BRANCH",
            "FLEXCI_REFERENCE_COMMIT_ID",
            "FLEXCI_COMMIT_ID",
            "PULL_REQUEST",
            "CUDA_VERSION",
            "CUDA_HOME",
            "GH_TOKEN",
            "GITHUB_TOKEN",
            "GH_TOKEN_FILE",
            "PYTHON",
            "VOUCH_CHECKOUT",
            "VOUCH_DISPATCHED_COMMIT",
            "VOUCH_PREINSTALLED_SHA256",
            "XDG_CACHE_HOME",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let r = run(&mut cmd);
        assert!(!token_path.exists(), "the token file is gone: {}", r.stderr);
        assert!(
            !r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN),
            "the token leaked"
        );
        r
    }
}

fn python_version() -> String {
    run(std::process::Command::new(venv_python())
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]))
    .stdout
    .trim()
    .to_owned()
}

fn platform() -> &'static str {
    match std::env::consts::ARCH {
        "aarch64" => "linux-aarch64",
        _ => "linux-64",
    }
}

/// A job whose fake GitHub serves a push build of `sha`, with `lead` (if any) first on PATH.
fn job<'a>(w: &'a World, sha: &str, lead: Option<&Path>) -> Job<'a> {
    w.publish_at(
        &format!("cupy-cuda13x-py{}-{}-{sha}", python_version(), platform()),
        500,
        sha,
    );
    let vouch_dir = Path::new(env!("CARGO_BIN_EXE_vouch")).parent().unwrap();
    let mut path = format!(
        "{}:{}:{}",
        venv_python().parent().unwrap().display(),
        vouch_dir.display(),
        std::env::var("PATH").unwrap()
    );
    if let Some(lead) = lead {
        path = format!("{}:{path}", lead.display());
    }
    Job {
        gh: FakeGithub::start(w.store.clone(), TOKEN),
        w,
        path,
    }
}

/// `fetch-wheel.sh` as a FlexCI job runs it, with vouch already on PATH: the PR from
/// PULL_REQUEST (what run.sh forwards into the container), the commit from
/// FLEXCI_REFERENCE_COMMIT_ID, the CUDA major from CUDA_VERSION, the token from its file.
/// Then a push job, the CUDA major from version.json. The artifact names the script builds are
/// the ones the fake API serves, so a wrong name fails the install.
#[test]
fn fetch_wheel_sh_installs_what_the_flexci_job_names() {
    let w = World::new();
    let (py, plat) = (python_version(), platform());
    let (pr_checkout, pr_head) = checkout(w.dir.path(), true);
    // The head, as check-checkout.sh leaves FlexCI's refs/pull/7/merge (issue 32).
    detach(&pr_checkout, &pr_head);
    let (push_checkout, push_sha) = checkout(w.dir.path(), false);
    // Only the push build is published: a PR build is signed by vouch-sign.yml, which
    // tests/it/prsign.rs covers end to end (with `--from-flexci`); here the PR job must look
    // for it there, and find none.
    let job = job(&w, &push_sha, None);

    let target = w.dir.path().join("site-pr");
    let r = job.run(
        "pr",
        &target,
        &[
            ("PULL_REQUEST", "7"),
            ("FLEXCI_REFERENCE_COMMIT_ID", &pr_head),
            ("CUDA_VERSION", "13.0.2"),
            ("VOUCH_CHECKOUT", pr_checkout.to_str().unwrap()),
        ],
    );
    assert!(
        r.stderr.contains(&format!(
            "/bin/vouch install --from-flexci --repo cupy/cupy --event pull_request --pr 7 --sha {pr_head} --dist cupy-cuda13x --python-version {py} --platform {plat} --python python3 --extras test --token-file "
        )),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains(&format!(
            "--github-attestations cupy/cupy --checkout {}",
            pr_checkout.display()
        )),
        "issue 32: vouch holds the checkout to the built commit: {}",
        r.stderr
    );
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("cupy-cuda13x-py{py}-{plat}-pr7-{pr_head}"))
            && r.stderr.contains("vouch-sign.yml"),
        "{}",
        r.stderr
    );
    assert!(!target.exists(), "nothing installed");

    // A push job: no PR, the commit from FLEXCI_COMMIT_ID, CUDA from version.json.
    let cuda = w.dir.path().join("cuda");
    std::fs::create_dir_all(&cuda).unwrap();
    std::fs::write(
        cuda.join("version.json"),
        r#"{"cuda": {"name": "CUDA SDK", "version": "13.0.2"}}"#,
    )
    .unwrap();
    let target = w.dir.path().join("site-push");
    let push = |token: &str, target: &Path, extra: &[(&str, &str)]| {
        let mut env = vec![
            ("FLEXCI_BRANCH", "refs/heads/main"),
            ("FLEXCI_COMMIT_ID", push_sha.as_str()),
            ("CUDA_HOME", cuda.to_str().unwrap()),
            ("VOUCH_CHECKOUT", push_checkout.to_str().unwrap()),
        ];
        env.extend_from_slice(extra);
        job.run(token, target, &env)
    };
    let r = push("push", &target, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "looking for cupy-cuda13x-py{py}-{plat}-{push_sha} from .github/workflows/vouch-build.yml (push of cupy/cupy)"
        )),
        "{}",
        r.stderr
    );
    assert_eq!(
        modules(&target),
        ["cupy_cuda13x", "dep_base", "dep_more", "dep_test"]
    );

    // No CUDA to name the wheel: refused before vouch runs, the token still removed.
    let r = job.run(
        "nocuda",
        &w.dir.path().join("site-none"),
        &[
            ("FLEXCI_COMMIT_ID", &push_sha),
            ("CUDA_HOME", "/nonexistent"),
            ("VOUCH_CHECKOUT", push_checkout.to_str().unwrap()),
        ],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "fetch-wheel.sh: error: cannot tell the CUDA version: CUDA_VERSION is unset and /nonexistent/version.json is absent"
        ),
        "{}",
        r.stderr
    );

    // A pinned preinstalled vouch: the pin that matches runs, any other is refused before use.
    let real =
        vouch_core::Sha256Digest::of(&std::fs::read(env!("CARGO_BIN_EXE_vouch")).unwrap()).hex();
    let r = push(
        "pinned",
        &w.dir.path().join("site-pinned"),
        &[("VOUCH_PREINSTALLED_SHA256", &real)],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let wrong = "0".repeat(64);
    let target = w.dir.path().join("site-wrong-pin");
    let r = push(
        "wrong-pin",
        &target,
        &[("VOUCH_PREINSTALLED_SHA256", &wrong)],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "has sha256 {real}, not the pinned VOUCH_PREINSTALLED_SHA256 {wrong}: refusing to verify with it"
        )),
        "{}",
        r.stderr
    );
    assert!(!r.stderr.contains("install --from-flexci") && !target.exists());
}

/// Issue 31 (4): the checkout must be the commit the job names, and the commit the dispatch
/// vouched for when FlexCI passes it on; otherwise nothing runs, vouch included.
#[test]
fn issue31_fetch_wheel_sh_refuses_a_checkout_of_another_commit() {
    let w = World::new();
    let (push_checkout, push_sha) = checkout(w.dir.path(), false);
    let (pr_checkout, pr_head) = checkout(w.dir.path(), true);
    let (merge_checkout, merge_head) = checkout(&w.dir.path().join("merge"), true);
    detach(&pr_checkout, &pr_head);
    let job = job(&w, &push_sha, None);
    let other = "2".repeat(40);
    let cases = [
        (
            "issue 32: FlexCI's refs/pull/7/merge, while the wheel is the head's",
            vec![
                ("FLEXCI_BRANCH", "refs/pull/7/merge".to_owned()),
                ("FLEXCI_REFERENCE_COMMIT_ID", merge_head.clone()),
                ("VOUCH_CHECKOUT", merge_checkout.display().to_string()),
            ],
            format!(
                ", a merge of the head {merge_head} into its base, but the wheel is built from the head itself: check the head out first (check-checkout.sh does), or the tests would be another commit's than the wheel's"
            ),
        ),
        (
            "the job names another commit than the checkout",
            vec![
                ("FLEXCI_COMMIT_ID", other.clone()),
                ("VOUCH_CHECKOUT", push_checkout.display().to_string()),
            ],
            format!(
                "is at {push_sha}, not at the commit the job names, {other}: the tests would not be the vouched code's"
            ),
        ),
        (
            "the pull request moved after the dispatch vouched for it",
            vec![
                ("FLEXCI_BRANCH", "refs/pull/7/merge".to_owned()),
                ("FLEXCI_REFERENCE_COMMIT_ID", pr_head.clone()),
                ("VOUCH_CHECKOUT", pr_checkout.display().to_string()),
                ("VOUCH_DISPATCHED_COMMIT", other.clone()),
            ],
            format!(
                "the checkout is at {pr_head}, but the dispatch vouched for {other}: the pull request moved after it was vouched for"
            ),
        ),
        (
            "no .git to check",
            vec![
                ("FLEXCI_COMMIT_ID", push_sha.clone()),
                (
                    "VOUCH_CHECKOUT",
                    w.dir.path().join("cuda-less").display().to_string(),
                ),
            ],
            "is not a git checkout, so it cannot be checked against".to_owned(),
        ),
    ];
    for (n, (what, env, want)) in cases.iter().enumerate() {
        let mut env: Vec<(&str, &str)> = env.iter().map(|(k, v)| (*k, v.as_str())).collect();
        env.push(("CUDA_VERSION", "13.0.2"));
        let target = w.dir.path().join(format!("site-{n}"));
        let r = job.run(&format!("moved-{n}"), &target, &env);
        assert_eq!(r.code, 1, "{what}: {}", r.stderr);
        assert!(r.stderr.contains(want.as_str()), "{what}: {}", r.stderr);
        assert!(
            !r.stderr.contains("install --from-flexci"),
            "{what}: vouch ran"
        );
        assert!(!target.exists(), "{what}");
    }
}

/// Issue 31 (5): a vouch binary in the cache every job shares (which any job's pull-request
/// code can write) is never run: the source route builds vouch for this job alone, into its
/// private directory, with a private CARGO_HOME. `cargo` here is a stand-in that records how it
/// was called and installs the real vouch where it was told to.
#[test]
fn issue31_fetch_wheel_sh_never_runs_a_vouch_left_in_a_shared_cache() {
    let w = World::new();
    let (push_checkout, push_sha) = checkout(w.dir.path(), false);
    let rev = std::fs::read_to_string(repo_root().join(SCRIPT))
        .unwrap()
        .lines()
        .find_map(|l| {
            l.strip_prefix("VOUCH_GIT_REV=\"")
                .map(|r| r.trim_end_matches('"').to_owned())
        })
        .unwrap();
    let cache = w.dir.path().join("xdg-cache");
    let trojan = cache.join(format!("vouch-bin/{rev}/bin/vouch"));
    let ran = w.dir.path().join("trojan-ran");
    std::fs::create_dir_all(trojan.parent().unwrap()).unwrap();
    std::fs::write(
        &trojan,
        format!(
            "#!/bin/sh\ntouch '{}'\necho 'vouch 0.0.0 (trojan)'\nexit 0\n",
            ran.display()
        ),
    )
    .unwrap();
    let tools = w.dir.path().join("tools");
    std::fs::create_dir_all(&tools).unwrap();
    let calls = w.dir.path().join("cargo-calls");
    std::fs::write(
        tools.join("cargo"),
        format!(
            r#"#!/bin/bash
set -eu
echo "CARGO_HOME=${{CARGO_HOME:-}} $*" >> '{calls}'
root=""
while (($#)); do
    if [[ "$1" == --root ]]; then root="$2"; fi
    shift
done
mkdir -p "$root/bin"
cp '{vouch}' "$root/bin/vouch"
"#,
            calls = calls.display(),
            vouch = env!("CARGO_BIN_EXE_vouch"),
        ),
    )
    .unwrap();
    for f in [&trojan, &tools.join("cargo")] {
        use std::os::unix::fs::PermissionsExt as _;
        std::fs::set_permissions(f, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    let job = job(&w, &push_sha, Some(&tools));
    let target = w.dir.path().join("site");
    let r = job.run(
        "source",
        &target,
        &[
            ("VOUCH_INSTALL", "source"),
            ("XDG_CACHE_HOME", cache.to_str().unwrap()),
            ("FLEXCI_COMMIT_ID", &push_sha),
            ("CUDA_VERSION", "13.0.2"),
            ("VOUCH_CHECKOUT", push_checkout.to_str().unwrap()),
        ],
    );
    assert!(!ran.exists(), "the cached binary ran: {}", r.stderr);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        modules(&target),
        ["cupy_cuda13x", "dep_base", "dep_more", "dep_test"]
    );
    let calls = std::fs::read_to_string(&calls).unwrap();
    assert_eq!(calls.lines().count(), 1, "{calls}");
    let cache = cache.display().to_string();
    assert!(
        calls.contains(&format!("--rev {rev} --root "))
            && calls.contains("--locked")
            && !calls.contains(&cache)
            && !calls.contains(".cache/vouch-bin"),
        "cargo installs into the job's private directory: {calls}"
    );
    let home = calls
        .strip_prefix("CARGO_HOME=")
        .and_then(|c| c.split(' ').next())
        .unwrap();
    assert!(
        home.ends_with("/cargo-home") && !home.contains(&cache),
        "{calls}"
    );
}

/// Issue 31 (4): `check-checkout.sh`, the entry script, runs the job's command only on a
/// checkout of the commit the job names and the dispatch vouched for.
#[test]
fn issue31_check_checkout_runs_the_command_only_on_the_vouched_commit() {
    let dir = tempdir();
    let (checkout, head) = checkout(dir.path(), true);
    let marker = dir.path().join("ran");
    let entry = |env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(repo_root().join("pyproject-templates/cupy/flexci/check-checkout.sh"))
            .args(["touch", marker.to_str().unwrap()])
            .current_dir(&checkout);
        for var in [
            "FLEXCI_BRANCH",
            "FLEXCI_REFERENCE_COMMIT_ID",
            "FLEXCI_COMMIT_ID",
            "VOUCH_CHECKOUT",
            "VOUCH_DISPATCHED_COMMIT",
            "VOUCH_REQUIRE_DISPATCHED_COMMIT",
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let _ = std::fs::remove_file(&marker);
        let r = run(&mut cmd);
        (r, marker.exists())
    };
    let other = "2".repeat(40);
    let pr = ("FLEXCI_BRANCH", "refs/pull/7/merge");
    for (what, env, want) in [
        (
            "moved after the dispatch",
            vec![
                pr,
                ("FLEXCI_REFERENCE_COMMIT_ID", head.as_str()),
                ("VOUCH_DISPATCHED_COMMIT", other.as_str()),
            ],
            "but the dispatch vouched for",
        ),
        (
            "the job names another commit",
            vec![pr, ("FLEXCI_REFERENCE_COMMIT_ID", other.as_str())],
            "not at the commit the job names",
        ),
        (
            "a push job of a merge commit is that commit, not its second parent",
            vec![("FLEXCI_COMMIT_ID", head.as_str())],
            "not at the commit the job names",
        ),
        (
            "the dispatched commit is required and missing",
            vec![
                pr,
                ("FLEXCI_REFERENCE_COMMIT_ID", head.as_str()),
                ("VOUCH_REQUIRE_DISPATCHED_COMMIT", "1"),
            ],
            "VOUCH_DISPATCHED_COMMIT is unset",
        ),
    ] {
        let (r, ran) = entry(&env);
        assert_eq!(r.code, 1, "{what}: {}", r.stderr);
        assert!(!ran, "{what}: the command ran");
        assert!(r.stderr.contains(want), "{what}: {}", r.stderr);
        let now = std::process::Command::new("git")
            .arg("-C")
            .arg(&checkout)
            .args(["rev-parse", "HEAD"])
            .output()
            .unwrap();
        assert_ne!(
            String::from_utf8_lossy(&now.stdout).trim(),
            head,
            "{what}: a refused job leaves FlexCI's checkout as it was"
        );
    }
    // Issue 32: the wheel is built from the vouched head, so the merge FlexCI checked out is
    // replaced by the head (its second parent) before the command runs.
    let (r, ran) = entry(&[
        pr,
        ("FLEXCI_REFERENCE_COMMIT_ID", &head),
        ("VOUCH_DISPATCHED_COMMIT", &head),
    ]);
    assert!(r.code == 0 && ran, "{}", r.stderr);
    let now = std::process::Command::new("git")
        .arg("-C")
        .arg(&checkout)
        .args(["rev-list", "--parents", "-n", "1", "HEAD"])
        .output()
        .unwrap();
    let now = String::from_utf8_lossy(&now.stdout);
    assert_eq!(
        now.split_whitespace().next(),
        Some(head.as_str()),
        "the command ran on the head, not on refs/pull/7/merge ({now})"
    );
}

/// The FlexCI scripts install the vouch the generated workflows pin (`[workflows.source] rev`
/// of CuPy's profile), so the test farm verifies with the vouch that built and signed: the
/// three pins are one commit, and the scripts look the evidence up by digest too.
#[test]
fn flexci_scripts_pin_the_profiles_vouch() {
    let root = repo_root();
    let profile =
        std::fs::read_to_string(root.join("pyproject-templates/cupy/vouch.toml")).unwrap();
    let rev = profile
        .lines()
        .find_map(|l| l.strip_prefix("rev = \""))
        .and_then(|l| l.strip_suffix('"'))
        .expect("[workflows.source] rev");
    assert_eq!(rev.len(), 40, "{rev}");
    for (file, pin) in [
        ("fetch-wheel.sh", format!("VOUCH_GIT_REV=\"{rev}\"")),
        ("fetch-wheel.ps1", format!("$VouchGitRev = \"{rev}\"")),
    ] {
        let text = std::fs::read_to_string(root.join("pyproject-templates/cupy/flexci").join(file))
            .unwrap();
        assert!(text.contains(&pin), "{file} does not pin {rev}");
        assert!(text.contains("--github-attestations"), "{file}");
    }
}
