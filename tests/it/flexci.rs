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
        let wheel = self.cupy_wheel();
        let bundle = PathBuf::from(format!("{}.sigstore.json", wheel.display()));
        let mut c = GithubClaims::push(REPO, HEAD);
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
            head_sha: HEAD.into(),
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

/// `fetch-wheel.sh` as a FlexCI job runs it, with vouch already on PATH: the PR from
/// PULL_REQUEST (what run.sh forwards into the container), the commit from
/// FLEXCI_REFERENCE_COMMIT_ID, the CUDA major from CUDA_VERSION, the token from its file.
/// Then a push job, the CUDA major from version.json. The artifact names the script builds are
/// the ones the fake API serves, so a wrong name fails the install.
#[test]
fn fetch_wheel_sh_installs_what_the_flexci_job_names() {
    let w = World::new();
    let py = run(std::process::Command::new(venv_python())
        .args(["-c", "import sys; print('%d.%d' % sys.version_info[:2])"]))
    .stdout
    .trim()
    .to_owned();
    let plat = match std::env::consts::ARCH {
        "aarch64" => "linux-aarch64",
        _ => "linux-64",
    };
    // Only the push build is published: a PR build is signed by vouch-sign.yml, which
    // tests/it/prsign.rs covers end to end (with `--from-flexci`); here the PR job must look
    // for it there, and find none.
    w.publish(&format!("cupy-cuda13x-py{py}-{plat}-{HEAD}"), 500);
    let gh = FakeGithub::start(w.store.clone(), TOKEN);
    let vouch_dir = Path::new(env!("CARGO_BIN_EXE_vouch")).parent().unwrap();
    let path = format!(
        "{}:{}:{}",
        venv_python().parent().unwrap().display(),
        vouch_dir.display(),
        std::env::var("PATH").unwrap()
    );
    let script = |token: &Path, target: &Path, env: &[(&str, &str)]| {
        let mut cmd = std::process::Command::new("bash");
        cmd.arg(repo_root().join(SCRIPT))
            .args(["--api-url", &gh.url])
            .arg("--trust-root")
            .arg(&w.root)
            .arg("--")
            .args(w.pip_args(target))
            .env("PATH", &path)
            .env("VOUCH_INSTALL", "preinstalled")
            .env("CUPY_CI_GITHUB_TOKEN_FILE", token)
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
        ] {
            cmd.env_remove(var);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let r = run(&mut cmd);
        assert!(!token.exists(), "the token file is gone: {}", r.stderr);
        assert!(
            !r.stdout.contains(TOKEN) && !r.stderr.contains(TOKEN),
            "the token leaked"
        );
        r
    };
    let token = |n: &str| {
        let t = w.dir.path().join(format!("token-{n}"));
        std::fs::write(&t, TOKEN).unwrap();
        t
    };

    let target = w.dir.path().join("site-pr");
    let r = script(
        &token("pr"),
        &target,
        &[
            ("PULL_REQUEST", "7"),
            ("FLEXCI_REFERENCE_COMMIT_ID", HEAD),
            ("CUDA_VERSION", "13.0.2"),
        ],
    );
    assert!(
        r.stderr.contains(&format!(
            "+ vouch install --from-flexci --repo cupy/cupy --event pull_request --pr 7 --dist cupy-cuda13x --python-version {py} --platform {plat} --python python3 --extras test --token-file "
        )),
        "{}",
        r.stderr
    );
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert!(
        r.stderr
            .contains(&format!("cupy-cuda13x-py{py}-{plat}-pr7-{HEAD}"))
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
    let r = script(
        &token("push"),
        &target,
        &[
            ("FLEXCI_BRANCH", "refs/heads/main"),
            ("FLEXCI_COMMIT_ID", HEAD),
            ("CUDA_HOME", cuda.to_str().unwrap()),
        ],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stderr.contains(&format!(
            "looking for cupy-cuda13x-py{py}-{plat}-{HEAD} from .github/workflows/vouch-build.yml (push of cupy/cupy)"
        )),
        "{}",
        r.stderr
    );
    assert_eq!(
        modules(&target),
        ["cupy_cuda13x", "dep_base", "dep_more", "dep_test"]
    );

    // No CUDA to name the wheel: refused before vouch runs, the token still removed.
    let r = script(
        &token("nocuda"),
        &w.dir.path().join("site-none"),
        &[("FLEXCI_COMMIT_ID", HEAD), ("CUDA_HOME", "/nonexistent")],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "fetch-wheel.sh: error: cannot tell the CUDA version: CUDA_VERSION is unset and /nonexistent/version.json is absent"
        ),
        "{}",
        r.stderr
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
