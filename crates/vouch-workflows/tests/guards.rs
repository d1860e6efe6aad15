//! Issue 32, items 1, 7 and 8 in the generated workflows: the sdist's checkout carries the
//! submodules and refuses one without them; Windows' symlinks and long paths, free disk for
//! free-threaded cells and `twine check --strict` on every wheel and the sdist; vouch compiled
//! once per run and checked by sha256 wherever it is taken. Each test fails when its guard is
//! removed from the generator, and the shell guards are run here, not only read.

use std::path::Path;
use std::process::Command;

use vouch_profile::Profile;
use vouch_workflows::{GeneratedFile, Options, generate};
use yaml_rust2::{Yaml, YamlLoader};

fn template(name: &str) -> String {
    let path = Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("../../pyproject-templates")
        .join(name)
        .join("vouch.toml");
    std::fs::read_to_string(path).unwrap()
}

fn files_of(text: &str) -> Vec<GeneratedFile> {
    let profile = Profile::parse(text, "vouch.toml").expect("the profile loads");
    let opts = Options::from_profile(&profile, "vouch.toml").expect("options");
    generate(&profile, &opts).expect("generates")
}

fn cupy() -> Vec<GeneratedFile> {
    files_of(&template("cupy"))
}

fn doc(files: &[GeneratedFile], name: &str) -> Yaml {
    let f = files.iter().find(|f| f.name == name).expect("generated");
    YamlLoader::load_from_str(&f.contents).unwrap().remove(0)
}

fn jobs(doc: &Yaml) -> Vec<(String, Yaml)> {
    doc["jobs"]
        .as_hash()
        .unwrap()
        .iter()
        .map(|(k, v)| (k.as_str().unwrap().to_owned(), v.clone()))
        .collect()
}

fn steps(job: &Yaml) -> Vec<Yaml> {
    job["steps"].as_vec().cloned().unwrap_or_default()
}

fn name(step: &Yaml) -> &str {
    step["name"].as_str().unwrap_or("")
}

fn needs(job: &Yaml) -> Vec<String> {
    match &job["needs"] {
        Yaml::String(s) => vec![s.clone()],
        Yaml::Array(a) => a.iter().map(|y| y.as_str().unwrap().to_owned()).collect(),
        _ => Vec::new(),
    }
}

/// The `run:` script of the step of `job` named `step`.
fn script(doc: &Yaml, job: &str, step: &str) -> String {
    steps(&doc["jobs"][job])
        .iter()
        .find(|s| name(s) == step)
        .unwrap_or_else(|| panic!("{job} has no step {step:?}"))["run"]
        .as_str()
        .unwrap()
        .to_owned()
}

const CHECK_STEP: &str = "Check vouch's sha256 and put it on PATH";
/// A `vouch` command line in a script (not `vouch-…` names or paths).
fn runs_vouch(run: &str) -> bool {
    run.lines().any(|l| {
        let l = l.trim_start();
        l.starts_with("vouch ")
            || l.contains("$(vouch ")
            || l.contains("=$(vouch ")
            || l.starts_with("if ! vouch ")
    })
}

/// Item 8: in the build and sign workflows only the builder jobs compile vouch; every other job
/// that runs vouch downloads this run's binary (never another run's) and checks it against the
/// sha256 its builder reported as a job output, before any step runs it.
#[test]
fn every_job_takes_this_runs_vouch_checked_by_the_builders_sha256() {
    let files = cupy();
    for file in ["vouch-build.yml", "vouch-sign.yml"] {
        let d = doc(&files, file);
        let all = jobs(&d);
        let builders: Vec<&str> = all
            .iter()
            .filter(|(_, j)| !j["outputs"]["sha256"].is_badvalue())
            .map(|(id, _)| id.as_str())
            .collect();
        assert!(!builders.is_empty(), "{file}: no builder");
        let mut consumers = 0;
        for (id, job) in &all {
            let st = steps(job);
            let compiles = st.iter().any(|s| {
                s["run"]
                    .as_str()
                    .is_some_and(|r| r.contains("cargo install"))
            });
            if builders.contains(&id.as_str()) {
                assert!(compiles, "{file}:{id} builds vouch");
                continue;
            }
            assert!(!compiles, "{file}:{id} compiles vouch itself");
            let Some(first_use) = st
                .iter()
                .position(|s| s["run"].as_str().is_some_and(runs_vouch))
            else {
                continue;
            };
            consumers += 1;
            let check = st
                .iter()
                .position(|s| name(s) == CHECK_STEP)
                .unwrap_or_else(|| panic!("{file}:{id} runs vouch without the sha256 check"));
            assert!(check < first_use, "{file}:{id}: the check comes too late");
            let download = &st[check - 1];
            assert!(
                download["uses"]
                    .as_str()
                    .unwrap()
                    .starts_with("actions/download-artifact@"),
                "{file}:{id}"
            );
            // This run's artifact: no run-id, repository or token reaching into another run.
            for key in ["run-id", "repository", "github-token"] {
                assert!(download["with"][key].is_badvalue(), "{file}:{id}: {key}");
            }
            let sha = st[check]["env"]["VOUCH_SHA256"].as_str().unwrap();
            let named: Vec<&&str> = builders
                .iter()
                .filter(|b| sha.contains(&format!("needs.{b}.outputs.sha256")))
                .collect();
            assert!(!named.is_empty(), "{file}:{id}: {sha}");
            for b in named {
                assert!(
                    needs(job).contains(&(*b).to_owned()),
                    "{file}:{id} needs {b}"
                );
            }
        }
        assert!(consumers >= 3, "{file}: {consumers} consumers");
    }
    // The sign workflow (workflow_run, default branch) compiles its own: a pull request's run
    // could have replaced any artifact of that run.
    let sign = doc(&files, "vouch-sign.yml");
    assert_eq!(sign["jobs"]["vouch"]["if"], sign["jobs"]["pin"]["if"]);
    assert!(!sign["jobs"]["vouch"]["if"].is_badvalue());
}

/// Runs `script` with bash in `dir` with `env`; (status, stdout + stderr).
fn bash(dir: &Path, script: &str, env: &[(&str, &str)]) -> (bool, String) {
    let out = Command::new("bash")
        .arg("-eo")
        .arg("pipefail")
        .arg("-c")
        .arg(script)
        .current_dir(dir)
        .envs(env.iter().copied())
        .output()
        .unwrap();
    (
        out.status.success(),
        format!(
            "{}{}",
            String::from_utf8_lossy(&out.stdout),
            String::from_utf8_lossy(&out.stderr)
        ),
    )
}

fn sha256(path: &Path) -> String {
    let out = Command::new("sha256sum").arg(path).output().unwrap();
    String::from_utf8(out.stdout).unwrap()[..64].to_owned()
}

/// Item 8: the generated check itself, run: the builder's digest passes, any other (or none)
/// refuses the binary before it runs and before it reaches PATH.
#[test]
fn the_sha256_check_refuses_a_binary_its_builder_did_not_report() {
    let d = doc(&cupy(), "vouch-build.yml");
    let check = script(&d, "attest", CHECK_STEP);
    let tmp = tempfile::tempdir().unwrap();
    let fake = "#!/bin/sh\necho vouch 0.0.0-test\n";
    let reference = tmp.path().join("reference");
    std::fs::write(&reference, fake).unwrap();
    let good = sha256(&reference);
    for (sha, ok) in [
        (good.as_str(), true),
        (&"0".repeat(64), false),
        ("", false),
        ("not-a-digest", false),
    ] {
        let work = tempfile::tempdir().unwrap();
        let temp = tempfile::tempdir().unwrap();
        std::fs::create_dir(work.path().join("vouch-download")).unwrap();
        std::fs::write(work.path().join("vouch-download/vouch"), fake).unwrap();
        let path_file = temp.path().join("github-path");
        let (passed, out) = bash(
            work.path(),
            &check,
            &[
                ("VOUCH_SHA256", sha),
                ("RUNNER_TEMP", temp.path().to_str().unwrap()),
                ("GITHUB_PATH", path_file.to_str().unwrap()),
            ],
        );
        assert_eq!(passed, ok, "{sha:?}: {out}");
        let on_path = std::fs::read_to_string(&path_file).unwrap_or_default();
        if ok {
            assert!(out.contains("vouch 0.0.0-test"), "{out}");
            assert_eq!(
                on_path.trim(),
                temp.path().join("vouch-bin").to_str().unwrap()
            );
        } else {
            assert!(out.contains("::error::"), "{out}");
            let why = if sha.len() == 64 {
                "the job that built it reported"
            } else {
                "reported no sha256"
            };
            assert!(out.contains(why), "{sha:?}: {out}");
            assert!(!out.contains("vouch 0.0.0-test"), "ran it: {out}");
            assert_eq!(on_path, "", "put on PATH");
        }
    }
}

fn git(dir: &Path, args: &[&str]) {
    let out = Command::new("git")
        .args([
            "-c",
            "protocol.file.allow=always",
            "-c",
            "init.defaultBranch=main",
        ])
        .args([
            "-c",
            "user.name=t",
            "-c",
            "user.email=t@t",
            "-c",
            "commit.gpgsign=false",
        ])
        .args(args)
        .current_dir(dir)
        .output()
        .unwrap();
    assert!(out.status.success(), "git {args:?}: {out:?}");
}

/// Item 1: the CuPy profile's sdist checkout fetches every submodule; the sample's fetches
/// none; and the sdist job's check, run on real checkouts, refuses one without them.
#[test]
fn the_sdist_job_fetches_submodules_and_refuses_a_checkout_without_them() {
    let checkout = |files: &[GeneratedFile]| {
        let d = doc(files, "vouch-build.yml");
        let st = steps(&d["jobs"]["sdist"]);
        let c = st.iter().find(|s| name(s) == "Check out").unwrap().clone();
        assert_eq!(c["with"]["persist-credentials"].as_bool(), Some(false));
        c["with"]["submodules"].as_str().map(str::to_owned)
    };
    assert_eq!(checkout(&cupy()).as_deref(), Some("recursive"));
    // The sample declares no [workflows]: only the install route it needs, and the default.
    let sample = files_of(&format!(
        "{}\n[workflows.source]\nrev = \"{}\"\n",
        template("sample"),
        "a".repeat(40)
    ));
    assert_eq!(checkout(&sample), None);
    // Nothing else checks out submodules: the cells build from the sdist, and the jobs that
    // sign or run in the default branch's context check out nothing.
    for f in &cupy() {
        let n = f.contents.matches("submodules: recursive").count();
        assert_eq!(n, usize::from(f.name == "vouch-build.yml"), "{}", f.name);
    }

    let d = doc(&cupy(), "vouch-build.yml");
    let check = script(&d, "sdist", "Every declared submodule is checked out");
    let tmp = tempfile::tempdir().unwrap();
    let (sub, main) = (tmp.path().join("sub"), tmp.path().join("main"));
    for dir in [&sub, &main] {
        std::fs::create_dir(dir).unwrap();
        git(dir, &["init", "-q"]);
    }
    std::fs::write(sub.join("header.h"), "#pragma once\n").unwrap();
    git(&sub, &["add", "."]);
    git(&sub, &["commit", "-qm", "sub"]);
    std::fs::write(main.join("setup.py"), "").unwrap();
    git(&main, &["add", "."]);
    git(&main, &["commit", "-qm", "main"]);
    // Without a .gitmodules there is nothing to check.
    let (ok, out) = bash(&main, &check, &[]);
    assert!(ok, "{out}");
    git(
        &main,
        &[
            "submodule",
            "add",
            "-q",
            sub.to_str().unwrap(),
            "third_party/sub",
        ],
    );
    git(&main, &["commit", "-qm", "add the submodule"]);

    let bare = tmp.path().join("bare");
    git(
        tmp.path(),
        &[
            "clone",
            "-q",
            main.to_str().unwrap(),
            bare.to_str().unwrap(),
        ],
    );
    let (ok, out) = bash(&bare, &check, &[]);
    assert!(!ok, "a checkout without its submodules passed: {out}");
    assert!(
        out.contains("::error::") && out.contains("third_party/sub"),
        "{out}"
    );
    assert!(out.contains("submodules = \"recursive\""), "{out}");

    git(
        &bare,
        &["submodule", "update", "--init", "--recursive", "-q"],
    );
    let (ok, out) = bash(&bare, &check, &[]);
    assert!(ok, "{out}");
    assert!(out.contains("third_party/sub"), "{out}");

    // A path .gitmodules declares that git does not track as a submodule (so `git submodule
    // status` is silent about it), left empty: refused by the directory check alone.
    let gitmodules = std::fs::read_to_string(bare.join(".gitmodules")).unwrap();
    std::fs::write(
        bare.join(".gitmodules"),
        format!(
            "{gitmodules}[submodule \"ghost\"]\n\tpath = third_party/ghost\n\turl = ../ghost\n"
        ),
    )
    .unwrap();
    let (ok, out) = bash(&bare, &check, &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("empty: third_party/ghost"), "{out}");
    std::fs::write(bare.join(".gitmodules"), gitmodules).unwrap();

    // A submodule at another commit than the tree records is refused too.
    std::fs::write(bare.join("third_party/sub/header.h"), "#pragma twice\n").unwrap();
    git(&bare.join("third_party/sub"), &["commit", "-qam", "moved"]);
    let (ok, out) = bash(&bare, &check, &[]);
    assert!(!ok, "{out}");
    assert!(out.contains("status: +"), "{out}");
}

/// Item 7: `twine check` on the sdist (in its job, before any cell builds from it) and
/// `twine check --strict` on every wheel (before anything is signed), with twine installed by
/// hash alone. The sdist is not `--strict`: CuPy's own sdist has no long description.
#[test]
fn twine_checks_the_sdist_and_every_wheel_before_signing() {
    let d = doc(&cupy(), "vouch-build.yml");
    let twine_step = |job: &str, what: &str| {
        let st = steps(&d["jobs"][job]);
        let flag = if what == "the sdist" { "" } else { " --strict" };
        let i = st
            .iter()
            .position(|s| name(s) == format!("twine check{flag} ({what})"))
            .unwrap_or_else(|| panic!("{job}: no twine check"));
        let run = st[i]["run"].as_str().unwrap().to_owned();
        assert!(
            run.contains("--no-deps --only-binary :all: --require-hashes"),
            "{run}"
        );
        assert!(run.contains(&format!("twine\" check{flag} \"")), "{run}");
        let reqs = st[i]["env"]["TWINE_REQUIREMENTS"]
            .as_str()
            .unwrap()
            .to_owned();
        let lines: Vec<&str> = reqs.lines().collect();
        assert_eq!(lines.len(), vouch_workflows::pins::TWINE.len());
        for ((req, sha), line) in vouch_workflows::pins::TWINE.iter().zip(&lines) {
            assert_eq!(*line, format!("{req} --hash=sha256:{sha}"));
        }
        (st, i)
    };
    let (st, i) = twine_step("sdist", "the sdist");
    let built = st
        .iter()
        .position(|s| name(s) == "Build the sdist once")
        .unwrap();
    assert!(built < i);
    assert!(
        st[i]["run"]
            .as_str()
            .unwrap()
            .contains("files=(sdist/*.tar.gz)")
    );

    let (st, i) = twine_step("twine-check", "every wheel");
    assert!(
        st[i]["run"]
            .as_str()
            .unwrap()
            .contains("files=(dist/*.whl)")
    );
    let download = &st[i - 1];
    assert_eq!(download["with"]["pattern"].as_str(), Some("unsigned-*"));
    let job = &d["jobs"]["twine-check"];
    assert_eq!(needs(job), ["build-push", "build-pr"]);
    // It reads wheels only: no token, no checkout, no vouch.
    assert!(job["permissions"].as_hash().unwrap().is_empty());
    assert!(!st.iter().any(|s| {
        s["uses"]
            .as_str()
            .is_some_and(|u| u.starts_with("actions/checkout@"))
    }));
    // Nothing is signed before the check passed, and the run's summary counts it.
    assert!(needs(&d["jobs"]["attest"]).contains(&"twine-check".to_owned()));
    assert!(needs(&d["jobs"]["vouch-build-ok"]).contains(&"twine-check".to_owned()));
    let results = d["jobs"]["vouch-build-ok"]["steps"][0]["env"]["RESULTS"]
        .as_str()
        .unwrap();
    assert!(results.contains("needs.twine-check.result"), "{results}");
}

/// Item 7: Windows' symlinks and long paths before a build job's checkout; free disk for a
/// free-threaded cell on a hosted Linux runner, before the build.
#[test]
fn build_jobs_guard_windows_and_free_threaded_cells() {
    let d = doc(&cupy(), "vouch-build.yml");
    for job in ["build-push", "build-pr"] {
        let st = steps(&d["jobs"][job]);
        let at = |n: &str| {
            st.iter()
                .position(|s| name(s) == n)
                .unwrap_or_else(|| panic!("{job}: no step {n:?}"))
        };
        let checkout = at("Check out");
        let symlinks = at("Symlinks as symlinks (Windows; before the checkout)");
        let long = at("Long paths are enabled (Windows)");
        assert!(symlinks < checkout && long < checkout, "{job}");
        assert_eq!(
            st[symlinks]["run"].as_str(),
            Some("git config --global core.symlinks true")
        );
        assert!(
            st[long]["run"]
                .as_str()
                .unwrap()
                .contains("LongPathsEnabled")
        );
        for i in [symlinks, long] {
            assert_eq!(st[i]["if"].as_str(), Some("runner.os == 'Windows'"));
        }
        let free = at("Free disk space (hosted Linux runner, free-threaded Python)");
        assert!(free < at("Build ${{ matrix.cell }}"), "{job}");
        let when = st[free]["if"].as_str().unwrap();
        for term in [
            "runner.os == 'Linux'",
            "runner.environment == 'github-hosted'",
            "endsWith(matrix.python, 't')",
        ] {
            assert!(when.contains(term), "{job}: {when}");
        }
    }
}

/// The free-disk step never fails a build: without a Docker socket it warns and goes on.
#[test]
fn freeing_disk_is_best_effort() {
    let d = doc(&cupy(), "vouch-build.yml");
    let free = script(
        &d,
        "build-pr",
        "Free disk space (hosted Linux runner, free-threaded Python)",
    );
    let tmp = tempfile::tempdir().unwrap();
    // In an image, with no Docker socket reachable (curl fails): a warning, success.
    let fake_bin = tmp.path().join("bin");
    std::fs::create_dir(&fake_bin).unwrap();
    for tool in ["curl", "sudo"] {
        let p = fake_bin.join(tool);
        std::fs::write(&p, "#!/bin/sh\nexit 7\n").unwrap();
        Command::new("chmod").arg("755").arg(&p).status().unwrap();
    }
    let path = format!("{}:/usr/bin:/bin", fake_bin.display());
    for image in ["quay.io/pypa/manylinux_2_28_x86_64@sha256:00", ""] {
        let (ok, out) = bash(tmp.path(), &free, &[("IMAGE", image), ("PATH", &path)]);
        assert!(ok, "{image:?}: {out}");
        assert!(out.contains("::warning::"), "{image:?}: {out}");
    }
}
