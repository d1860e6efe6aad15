//! Issue 31 (3, 7c): the sign workflow's required status, run as the generated file has it
//! (bash, jq, and a `gh` that forwards to the project's GitHub double). It is posted with the
//! GitHub App's token, and says success only when every planned cell was signed.

use std::path::Path;

use serde_json::{Value, json};
use vouch_profile::Profile;
use vouch_testgh::FakeGithub;
use vouch_workflows::{REQUIRED_STATUS, SIGN_FILE, generate};

const TOKEN: &str = "ghs_DoubleApiToken";
const APP_TOKEN: &str = "ghs_AppInstallationToken";
const HEAD: &str = "1111111111111111111111111111111111111111";

/// The sign workflow's job `job` as generated for CuPy.
fn sign_job(job: &str) -> yaml_rust2::Yaml {
    let path =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("../../pyproject-templates/cupy/vouch.toml");
    let profile = Profile::load(&path).unwrap();
    let opts = vouch_workflows::Options::from_profile(&profile, "vouch.toml").unwrap();
    let files = generate(&profile, &opts).unwrap();
    let sign = files.iter().find(|f| f.name == SIGN_FILE).unwrap();
    yaml_rust2::YamlLoader::load_from_str(&sign.contents).unwrap()[0]["jobs"][job].clone()
}

fn step<'a>(job: &'a yaml_rust2::Yaml, name_starts: &str) -> &'a yaml_rust2::Yaml {
    job["steps"]
        .as_vec()
        .unwrap()
        .iter()
        .find(|s| {
            s["name"]
                .as_str()
                .is_some_and(|n| n.starts_with(name_starts))
        })
        .expect("the step")
}

fn bash(script: &str, dir: &Path, env: &[(&str, &str)]) -> std::process::Output {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let shim = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/support/gh-shim.sh");
    let _ = std::os::unix::fs::symlink(shim, bin.join("gh"));
    let mut cmd = std::process::Command::new("bash");
    cmd.args(["--noprofile", "--norc", "-eo", "pipefail", "-c", script])
        .current_dir(dir)
        .env_clear()
        .env(
            "PATH",
            format!(
                "{}:{}",
                bin.display(),
                std::env::var("PATH").unwrap_or_default()
            ),
        );
    for (k, v) in env {
        cmd.env(k, v);
    }
    cmd.output().unwrap()
}

/// The status step posts with the App token the job minted, whatever the result.
#[test]
fn issue_31_the_required_status_is_posted_with_the_app_token() {
    let status = sign_job("status");
    assert_eq!(status["environment"].as_str(), Some("vouch-trusted"));
    let token = step(&status, "GitHub App token");
    assert!(
        token["uses"]
            .as_str()
            .unwrap()
            .starts_with("actions/create-github-app-token@")
    );
    assert_eq!(token["with"]["permission-statuses"].as_str(), Some("write"));
    let post = step(&status, "Commit status");
    assert_eq!(
        post["env"]["GH_TOKEN"].as_str(),
        Some("${{ steps.token.outputs.token }}"),
        "posted with GITHUB_TOKEN, the status is indistinguishable from a fork's own check"
    );
    let script = post["run"].as_str().unwrap();

    let dir = tempfile::tempdir().unwrap();
    let gh = FakeGithub::start(dir.path().join("store"), TOKEN);
    let cases = [
        (
            "success",
            "true",
            "success",
            "every planned cell built and signed",
        ),
        (
            "success",
            "false",
            "failure",
            "some built cells were not signed (see the pin job)",
        ),
        (
            "failure",
            "true",
            "failure",
            "signing did not succeed (failure)",
        ),
        (
            "cancelled",
            "",
            "failure",
            "signing did not succeed (cancelled)",
        ),
    ];
    for (result, complete, _, _) in cases {
        let out = bash(
            script,
            dir.path(),
            &[
                ("GH_SHIM_API", &gh.url),
                ("GH_TOKEN", APP_TOKEN),
                ("REPO", "cupy/cupy"),
                ("HEAD_SHA", HEAD),
                ("RESULT", result),
                ("COMPLETE", complete),
                ("RUN_URL", "https://github.com/cupy/cupy/actions/runs/900"),
                ("CONTEXT", REQUIRED_STATUS),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
    }
    let posted = gh.statuses();
    assert_eq!(posted.len(), cases.len());
    for (s, (result, complete, state, description)) in posted.iter().zip(cases) {
        assert_eq!((s.repo.as_str(), s.sha.as_str()), ("cupy/cupy", HEAD));
        assert_eq!(s.token, APP_TOKEN);
        assert_eq!(
            s.fields,
            json!({ "state": state, "context": REQUIRED_STATUS, "description": description,
                    "target_url": "https://github.com/cupy/cupy/actions/runs/900" }),
            "{result}, complete {complete:?}"
        );
    }
}

/// The pin job's `complete` output: true only when pin skipped none of the run's unsigned
/// artifacts (each is a planned cell: the build workflow is the default branch's).
#[test]
fn issue_31_complete_means_no_cell_was_skipped() {
    let pin = sign_job("pin");
    let script = step(&pin, "Pin the run")["run"].as_str().unwrap();
    let line = script
        .lines()
        .find(|l| l.trim_start().starts_with("echo \"complete="))
        .expect("the complete output")
        .trim();
    let dir = tempfile::tempdir().unwrap();
    let reports: [(Value, &str); 3] = [
        (json!({ "signable": true, "skipped": [] }), "true"),
        (
            json!({ "signable": true,
                    "skipped": [{ "artifact": "x", "reason": "run 699 built it first" }] }),
            "false",
        ),
        (json!({ "signable": false, "run": 700 }), "true"),
    ];
    for (report, want) in reports {
        std::fs::write(dir.path().join("pin.json"), report.to_string()).unwrap();
        let output = dir.path().join("out");
        std::fs::write(&output, "").unwrap();
        let out = bash(
            line,
            dir.path(),
            &[
                ("RUNNER_TEMP", dir.path().to_str().unwrap()),
                ("GITHUB_OUTPUT", output.to_str().unwrap()),
            ],
        );
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert_eq!(
            std::fs::read_to_string(&output).unwrap(),
            format!("complete={want}\n"),
            "{report}"
        );
    }
}
