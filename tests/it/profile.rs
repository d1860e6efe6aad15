//! Issue 6 (part): the CuPy profile, the matrix, and the build-inputs digest.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::vouch_snapshot;

fn cupy_profile() -> PathBuf {
    repo_root().join("pyproject-templates/cupy/vouch.toml")
}

#[test]
fn cupy_matrix_for_github() {
    let r = run(vouch()
        .args(["plan", "--format", "github", "--profile"])
        .arg(cupy_profile()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let m: serde_json::Value = serde_json::from_str(&r.stdout).unwrap();
    let cells = m["include"].as_array().unwrap();
    // 2 flavors x 3 platforms x 6 Pythons, plus 2 source-only targets.
    assert_eq!(cells.len(), 38);
    let source: Vec<&str> = cells
        .iter()
        .filter(|c| c["route"] == "source")
        .map(|c| c["cell"].as_str().unwrap())
        .collect();
    assert_eq!(
        source,
        [
            "cuda13x-py3.12-linux-64-cuda-python",
            "cuda12x-py3.12-linux-64-cuda-python"
        ]
    );
    // Linux cells build in the digest-pinned manylinux_2_28 image of their machine, with its
    // interpreter; Windows cells on the runner, with actions/setup-python.
    for c in cells {
        let (platform, python) = (
            c["platform"].as_str().unwrap(),
            c["python"].as_str().unwrap(),
        );
        let (container, path) = (
            c["container"].as_str().unwrap(),
            c["python_path"].as_str().unwrap(),
        );
        match platform {
            "win-64" => assert_eq!((container, path), ("", ""), "{c}"),
            _ => {
                let arch = if platform == "linux-64" {
                    "x86_64"
                } else {
                    "aarch64"
                };
                let prefix = format!("quay.io/pypa/manylinux_2_28_{arch}@sha256:");
                assert!(
                    container.starts_with(&prefix) && container.len() == prefix.len() + 64,
                    "{c}"
                );
                let v: vouch_core::PythonVersion = python.parse().unwrap();
                let tag = format!(
                    "cp{}{}-cp{}{}{}",
                    v.major,
                    v.minor,
                    v.major,
                    v.minor,
                    if v.free_threaded { "t" } else { "" }
                );
                assert_eq!(path, format!("/opt/python/{tag}/bin/python"), "{c}");
            }
        }
    }
    let json = run(vouch()
        .args(["plan", "--format", "json", "--profile"])
        .arg(cupy_profile()))
    .json();
    let cuda_python = json
        .as_array()
        .unwrap()
        .iter()
        .find(|c| c["id"] == "cuda13x-py3.12-linux-64-cuda-python")
        .unwrap();
    assert_eq!(cuda_python["env"]["CUPY_USE_CUDA_PYTHON"], "1");
    assert!(
        json.as_array()
            .unwrap()
            .iter()
            .filter(|c| c["route"] == "wheel")
            .all(|c| c["env"].get("CUPY_USE_CUDA_PYTHON").is_none())
    );
    insta::assert_snapshot!(
        "cupy_plan_github",
        serde_json::to_string_pretty(&m).unwrap()
    );
}

#[test]
fn profile_errors_name_the_key() {
    let dir = tempdir();
    let p = dir.path().join("vouch.toml");
    let text = std::fs::read_to_string(cupy_profile())
        .unwrap()
        .replace("linux-aarch64 = \"ubuntu-24.04-arm\"", "");
    std::fs::write(&p, text).unwrap();
    vouch_snapshot!(vouch().args(["plan", "--profile"]).arg(&p), @r#"
        success: false
        exit_code: 3
        ----- stdout -----

        ----- stderr -----
        error: profile "[TEMP]/vouch.toml": runners: no runner label for platform "linux-aarch64"
    "#);
}

/// A tiny CuPy-shaped source tree.
fn cupy_shaped(dir: &Path) {
    for (rel, text) in [
        ("setup.py", "from setuptools import setup\nsetup()\n"),
        (
            "pyproject.toml",
            "[build-system]\nrequires = [\"setuptools\", \"Cython\"]\n",
        ),
        ("cupy/__init__.py", "from cupy._core import *\n"),
        ("cupy/_core/core.pyx", "cdef class ndarray:\n    pass\n"),
        ("cupy/cuda/cupy_cub.cu", "__global__ void k() {}\n"),
        (
            "cupy_backends/cuda/api/runtime.pyx",
            "cpdef int getDevice():\n    return 0\n",
        ),
        ("tests/test_core.py", "def test(): pass\n"),
        ("docs/index.rst", "CuPy\n"),
    ] {
        let p = dir.join(rel);
        std::fs::create_dir_all(p.parent().unwrap()).unwrap();
        std::fs::write(p, text).unwrap();
    }
}

fn digest(profile: &Path, cell: &str, source: &Path) -> serde_json::Value {
    let r = run(vouch()
        .args(["inputs", "--json", "--cell", cell, "--profile"])
        .arg(profile)
        .arg("--source")
        .arg(source));
    assert_eq!(r.code, 0, "{}", r.stderr);
    r.json()
}

#[test]
fn build_inputs_digest() {
    let dir = tempdir();
    let a = dir.path().join("a/cupy-14.2.0");
    let b = dir.path().join("elsewhere/checkout");
    cupy_shaped(&a);
    cupy_shaped(&b);
    let cell = "cuda13x-py3.12-linux-64";
    let da = digest(&cupy_profile(), cell, &a);
    assert_eq!(da["files"], 6, "tests/ and docs/ are not inputs: {da}");
    assert_eq!(
        digest(&cupy_profile(), cell, &b)["digest"],
        da["digest"],
        "another directory, same digest"
    );

    // Tests and docs do not change it.
    std::fs::write(b.join("tests/test_core.py"), "def test(): assert True\n").unwrap();
    assert_eq!(digest(&cupy_profile(), cell, &b)["digest"], da["digest"]);
    // One .pyx byte does.
    std::fs::write(
        b.join("cupy/_core/core.pyx"),
        "cdef class ndarray:\n    pass \n",
    )
    .unwrap();
    assert_ne!(digest(&cupy_profile(), cell, &b)["digest"], da["digest"]);

    // Another CUDA version, another toolkit pin, another CUPY_NVCC_GENERATE_CODE: other
    // digests. The profile is copied with the files it names (toolchain pins, templates).
    let variant = |name: &str, edit: &dyn Fn(&str) -> String| -> PathBuf {
        let root = dir.path().join(name);
        for e in walkdir::WalkDir::new(cupy_profile().parent().unwrap()) {
            let e = e.unwrap();
            let rel = e
                .path()
                .strip_prefix(cupy_profile().parent().unwrap())
                .unwrap();
            if e.file_type().is_dir() {
                std::fs::create_dir_all(root.join(rel)).unwrap();
            } else {
                std::fs::copy(e.path(), root.join(rel)).unwrap();
            }
        }
        let p = root.join("vouch.toml");
        std::fs::write(&p, edit(&std::fs::read_to_string(&p).unwrap())).unwrap();
        p
    };
    let same = variant("same", &|t| t.to_owned());
    assert_eq!(
        digest(&same, cell, &a)["digest"],
        da["digest"],
        "a copy of the profile"
    );
    // Another CUDA release: the flavor's `cuda` picks its pins (`{cuda}` in the toolchain path).
    let other_cuda = variant("cuda1321", &|t| {
        t.replace("cuda = \"13.3.1\"", "cuda = \"13.2.1\"")
    });
    assert_ne!(digest(&other_cuda, cell, &a)["digest"], da["digest"]);
    let other_pin = variant("pin", &|t| t.to_owned());
    let pins = other_pin
        .parent()
        .unwrap()
        .join("toolchains/cuda-13.3.1-linux-64.txt");
    let text = std::fs::read_to_string(&pins).unwrap();
    assert!(text.contains("nvidia-cuda-nvcc==13.3.73"), "{text}");
    std::fs::write(
        &pins,
        text.replace("nvidia-cuda-nvcc==13.3.73", "nvidia-cuda-nvcc==13.3.33"),
    )
    .unwrap();
    assert_ne!(
        digest(&other_pin, cell, &a)["digest"],
        da["digest"],
        "another nvcc pin"
    );
    // CuPy's builder picks the architectures; a profile that names its own is another build.
    let other_arch = variant("arch", &|t| {
        t.replace(
            "[flavors.cuda13x]\n",
            "[flavors.cuda13x]\nenv = { CUPY_NVCC_GENERATE_CODE = \"arch=compute_80,code=sm_80\" }\n",
        )
    });
    assert_ne!(digest(&other_arch, cell, &a)["digest"], da["digest"]);
    // `--set` overrides a cell variable, and the digest follows.
    let r = run(vouch()
        .args([
            "inputs",
            "--json",
            "--cell",
            cell,
            "--set",
            "CUPY_NVCC_GENERATE_CODE=arch=compute_75,code=sm_75",
            "--profile",
        ])
        .arg(cupy_profile())
        .arg("--source")
        .arg(&a));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_ne!(r.json()["digest"], da["digest"]);
    // And another cell of the same flavor differs (Python is an input).
    assert_ne!(
        digest(&cupy_profile(), "cuda13x-py3.13-linux-64", &a)["digest"],
        da["digest"]
    );
}

#[test]
fn plan_event_sets_each_cells_cache_mode_and_refuses_comment_events() {
    for (event, mode) in [("pull_request", "pr"), ("push", "trusted")] {
        let r = run(vouch()
            .args(["plan", "--format", "github", "--event", event, "--profile"])
            .arg(cupy_profile()));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let m = r.json();
        let include = m["include"].as_array().unwrap();
        assert_eq!(include.len(), 38);
        assert!(include.iter().all(|e| e["cache_mode"] == mode), "{m}");
    }
    let refused = ["issue_comment", "pull_request_target"].map(|event| {
        let r = run(vouch()
            .args(["plan", "--format", "github", "--event", event, "--profile"])
            .arg(cupy_profile()));
        (event, r)
    });
    insta::assert_snapshot!(snapshot_cases(refused, &[]), @r#"
        ===== "issue_comment"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: --event "issue_comment": expected push, pull_request, workflow_dispatch or schedule (issue_comment and pull_request_target runs never build)

        ===== "pull_request_target"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: --event "pull_request_target": expected push, pull_request, workflow_dispatch or schedule (issue_comment and pull_request_target runs never build)
    "#);
}

#[test]
fn workflows_generate_then_check_catches_a_one_line_edit() {
    let dir = tempdir();
    let out = dir.path().join(".github/workflows");
    // The profile path is what the workflows pass to vouch: relative to the repository root.
    let profile = "pyproject-templates/cupy/vouch.toml";
    vouch_snapshot!(vouch()
        .current_dir(repo_root())
        .args(["workflows", "generate", "--profile", profile])
        .arg("--out")
        .arg(&out), @r#"
            success: true
            exit_code: 0
            ----- stdout -----
            [TEMP]/.github/workflows/vouch-trigger.yml
            [TEMP]/.github/workflows/vouch-build.yml
            [TEMP]/.github/workflows/vouch-sign.yml

            ----- stderr -----
            the workflows read these repository variables and secrets:
              vars.VOUCH_APP_CLIENT_ID: the GitHub App (client id) that labels pull requests, posts the commit status vouch/pr-build and dispatches to a test-farm repository
              vars.VOUCH_CACHE_STORE: the compiler cache's Redis server as the trusted user (redis://user@host:port; cache store `redis`)
              vars.VOUCH_TEST_FARM_REPO: OWNER/NAME of the test farm's repository (dispatch mode `repository`)
              vars.VOUCH_EXTERNAL_TEST_REPO: OWNER/NAME of the repository that runs the targets FlexCI does not (`external_tags`, e.g. CuPy's ROCm CI cupy/self-hosted-ci): a `/test` of only such targets is sent there by repository_dispatch (dispatch mode `flexci`)
              secrets.VOUCH_APP_PRIVATE_KEY (environment vouch-trusted): the GitHub App's private key
              secrets.VOUCH_CACHE_PASSWORD (environment vouch-trusted): the Redis password for pushes (may write its own branch's scope; cache store `redis`)
              secrets.VOUCH_CACHE_ADMIN_PASSWORD (environment vouch-trusted): the Redis password `vouch cache grant` creates each pull request's own user with (cache store `redis`)
              secrets.VOUCH_SEAL_KEY (environment vouch-trusted): 32+ random bytes that authenticate the venvs and toolkits push builds reuse and sign every compiler-cache entry they write (a push build's cache needs it); its public half goes in [workflows.cache] public_key (`vouch cache public-key`)
              secrets.FLEXCI_WEBHOOK_SECRET (environment vouch-trusted): the FlexCI webhook secret (dispatch mode `flexci`)
            pull-request builds get no compiler cache until [workflows.cache] public_key is set: it is what `vouch cache public-key --seal-key-file <a file holding VOUCH_SEAL_KEY>` prints, and a pull request's build verifies every cache entry with it
            limit the environment vouch-trusted to these deployment refs: main, v[0-9]*, hotfix-*, tags: v[0-9]*; a deployment policy of ref patterns alone lets any writer create a matching branch (hotfix-x, v9-x) or tag (v9) with their own vouch-build.yml, whose push build then reads every secret of that environment (the GitHub App's key, which labels pull requests and posts vouch/pr-build; the seal key; the cache and test-farm secrets) and signs push-build provenance for that ref. Add a repository ruleset on refs/heads/main, refs/heads/v[0-9]*, refs/heads/hotfix-* and refs/tags/v[0-9]* that restricts creations, updates and deletions to a bypass list of release managers and blocks force pushes; then only they can reach the environment
            require the commit status `vouch/pr-build` (posted from the default branch); require it from the GitHub App whose client id is vars.VOUCH_APP_CLIENT_ID (a ruleset's required status check with that App as its source, or branch protection's expected source), never from any source: a pull request's own run can report a check of that name, and only the App's token, which the sign workflow posts the status with, cannot be had by a pull request
            create the label `ci:triggered`; maintainers ask for a build with `/test <targets> @<sha>` (at least 16 hex digits of the head they reviewed)
        "#);
    let check = || {
        run(vouch()
            .current_dir(repo_root())
            .args(["workflows", "check", "--profile", profile])
            .arg("--out")
            .arg(&out))
    };
    vouch_snapshot!(check(), @r#"
        success: true
        exit_code: 0
        ----- stdout -----

        ----- stderr -----
        3 workflows in [TEMP]/.github/workflows are up to date
    "#);

    // One line edited by hand: stale, with a diff naming the line, exit 1.
    let build = out.join("vouch-build.yml");
    let text = std::fs::read_to_string(&build).unwrap();
    std::fs::write(
        &build,
        text.replacen("timeout-minutes: 240", "timeout-minutes: 30", 1),
    )
    .unwrap();
    vouch_snapshot!(check(), @r#"
        success: false
        exit_code: 1
        ----- stdout -----
        --- a/vouch-build.yml
        +++ b/vouch-build.yml
        @@ -487,7 +487,7 @@
             # A Linux cell builds in the profile's manylinux image (pinned by digest), so its wheel
             # links against that image's glibc, not the runner's; an empty value runs on the runner.
             container: ${{ matrix.container }} # zizmor: ignore[unpinned-images] -- the profile refuses an image not pinned by @sha256
        -    timeout-minutes: 30
        +    timeout-minutes: 240
             # The seal key (and the Redis cache's push password) live in this environment (default
             # and push branches only), out of reach of a pull request's own workflow runs.
             environment: vouch-trusted


        ----- stderr -----
        error: [TEMP]/.github/workflows/vouch-build.yml: Changed; run `vouch workflows generate`
    "#);

    // In GitHub Actions the same finding is an annotation.
    vouch_snapshot!(vouch()
        .current_dir(repo_root())
        .args(["workflows", "check", "--profile", profile])
        .arg("--out")
        .arg(&out)
        .env("GITHUB_ACTIONS", "true"), @r#"
            success: false
            exit_code: 1
            ----- stdout -----
            --- a/vouch-build.yml
            +++ b/vouch-build.yml
            @@ -487,7 +487,7 @@
                 # A Linux cell builds in the profile's manylinux image (pinned by digest), so its wheel
                 # links against that image's glibc, not the runner's; an empty value runs on the runner.
                 container: ${{ matrix.container }} # zizmor: ignore[unpinned-images] -- the profile refuses an image not pinned by @sha256
            -    timeout-minutes: 30
            +    timeout-minutes: 240
                 # The seal key (and the Redis cache's push password) live in this environment (default
                 # and push branches only), out of reach of a pull request's own workflow runs.
                 environment: vouch-trusted


            ----- stderr -----
            ::error title=vouch::[TEMP]/.github/workflows/vouch-build.yml: Changed; run `vouch workflows generate`
        "#);

    // A hand edit that breaks a trust rule is named too, even with the generator's output.
    std::fs::write(
        &build,
        text.replacen("permissions: {}", "permissions: write-all", 1),
    )
    .unwrap();
    vouch_snapshot!(check(), @r#"
        success: false
        exit_code: 1
        ----- stdout -----
        --- a/vouch-build.yml
        +++ b/vouch-build.yml
        @@ -24,7 +24,7 @@
             branches: [main, 'v[0-9]*', 'hotfix-*']
             tags: ['v[0-9]*']

        -permissions: write-all
        +permissions: {}

         # A pull request's build shares its group with the trigger's hygiene job, which cancels it
         # when a new head arrives. Pushes are never cancelled. Any other label gets a group of its own.


        ----- stderr -----
        error: [TEMP]/.github/workflows/vouch-build.yml: Changed; run `vouch workflows generate`
        error: vouch-build.yml: [top-level-permissions] top-level `permissions` must be `{}`; grant each job what it needs
    "#);
}

#[test]
fn a_cell_build_appends_to_the_github_step_summary() {
    let dir = tempdir();
    let summary = dir.path().join("summary.md");
    std::fs::write(&summary, "").unwrap();
    let src = dir.path().join("sample");
    copy_sample(&src);
    let py = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .unwrap();
    let cell = format!(
        "cpu-py{}-linux-64",
        String::from_utf8_lossy(&py.stdout).trim()
    );
    let r = run(vouch()
        .args(["build", "--cell", &cell, "--profile"])
        .arg(repo_root().join("pyproject-templates/sample/vouch.toml"))
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(dir.path().join("out"))
        .args(["--sha", "2222222222222222222222222222222222222222"])
        .env("GITHUB_STEP_SUMMARY", &summary)
        .env("GITHUB_ACTIONS", "true"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let md = std::fs::read_to_string(&summary).unwrap();
    assert!(
        md.contains(&format!("| `{cell}` | `vouch_sample-0.1.0-")),
        "{md}"
    );
    assert!(md.contains("| `sha256:"), "{md}");
}

/// `workflows explain` from the command line: an unrelated label builds nothing and reports
/// under a name that is not the required check; `--json` gives the same as data.
#[test]
fn workflows_explain_an_unrelated_label() {
    let explain = |args: &[&str]| {
        run(vouch()
            .current_dir(repo_root())
            .args(["workflows", "explain", "--profile"])
            .arg("pyproject-templates/cupy/vouch.toml")
            .args(args))
    };
    let out = explain(&[
        "--event",
        "pull_request",
        "--label",
        "to-be-backported",
        "--json",
    ]);
    assert_eq!(out.code, 0, "{}", out.stderr);
    let x = out.json();
    let mut ran = Vec::new();
    for r in x["runs"].as_array().unwrap() {
        for j in r["jobs"].as_array().unwrap() {
            if j["runs"] == true {
                ran.push(format!("{}:{} {}", r["workflow"], j["id"], j["name"]));
            }
        }
    }
    assert_eq!(
        ran,
        [
            r#""vouch-build.yml":"vouch-build-ok" "vouch-build (nothing to build)""#,
            r#""vouch-sign.yml":"vouch" "build vouch (tool jobs)""#,
            r#""vouch-sign.yml":"pin" "pin the build run""#,
        ]
    );
    let text = explain(&["--event", "push", "--ref", "refs/heads/feature/x"]);
    assert!(text.stdout.contains("nothing runs"), "{}", text.stdout);
}

/// The `_wheel.json` the CuPy profile puts in each cell's tree is what CuPy 14.2.0's own
/// generator prints (run here from the sha256-pinned sdist that scripts/test.sh fetches), for
/// the libraries CuPy's `wheel_configs.py` lists per platform.
#[test]
fn issue16_cupy_wheel_metadata_is_what_cupys_own_generator_writes() {
    let sdist = repo_root().join("target/test-tools/cupy-14.2.0/cupy-14.2.0.tar.gz");
    assert!(
        sdist.is_file(),
        "{} is missing: run `python3 scripts/fetch-cupy-compiler-cache.py` (scripts/test.sh does)",
        sdist.display()
    );
    assert_eq!(
        sha256_file(&sdist),
        "cfed725e612178cfbdbf62f4a3a598b60edecbbca718c0d4580c21a16ae4a62c"
    );
    let dir = tempdir();
    let tools = dir.path().join("cupy-14.2.0/cupyx/tools");
    let unpack = run(std::process::Command::new("tar")
        .arg("-xzf")
        .arg(&sdist)
        .arg("-C")
        .arg(dir.path())
        .args([
            "cupy-14.2.0/cupyx/tools/_generate_wheel_metadata.py",
            "cupy-14.2.0/cupyx/tools/install_library.py",
        ]));
    assert_eq!(unpack.code, 0, "{}", unpack.stderr);
    let profile_dir = cupy_profile().parent().unwrap().to_owned();
    let mut checked = 0;
    for (platform, target, libraries) in [
        ("linux-64", "Linux:x86_64", &["cutensor", "nccl"][..]),
        ("linux-aarch64", "Linux:aarch64", &["nccl"][..]),
        ("win-64", "Windows:x86_64", &["cutensor"][..]),
    ] {
        for flavor in ["cuda12x", "cuda13x"] {
            let cuda = format!("{}.x", &flavor[4..6]);
            let mut cmd = std::process::Command::new("python3");
            cmd.arg(tools.join("_generate_wheel_metadata.py"))
                .args(["--cuda", &cuda, "--target", target]);
            for l in libraries {
                cmd.args(["--library", l]);
            }
            let generated = run(&mut cmd);
            assert_eq!(generated.code, 0, "{}", generated.stderr);
            let ours = std::fs::read_to_string(
                profile_dir.join(format!("templates/wheel-metadata/{flavor}-{platform}.json")),
            )
            .unwrap();
            assert_eq!(ours, generated.stdout, "{flavor} {platform}");
            checked += 1;
        }
    }
    assert_eq!(checked, 6);

    // The profile hands each cell its own platform's file.
    let profile = vouch_profile::Profile::load(&cupy_profile()).unwrap();
    let cell = profile.find_cell("cuda13x-py3.12-win-64").unwrap();
    let files = profile.template_files(&cell);
    let (_, from) = files.iter().find(|(d, _)| d == "_wheel.json").unwrap();
    assert!(
        from.ends_with("templates/wheel-metadata/cuda13x-win-64.json"),
        "{from:?}"
    );
    assert!(from.is_file());
}
