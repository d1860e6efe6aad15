//! `vouch build` and `vouch demo` on the bundled sample: real CPython, pip, setuptools, gcc.

use std::path::Path;
use std::process::Command;

use crate::common::*;
use crate::vouch_snapshot;

/// `vouch build --source SOURCE --out OUT`, to add flags to.
fn vouch_build(source: impl AsRef<Path>, out: impl AsRef<Path>) -> Command {
    let mut cmd = vouch();
    cmd.arg("build")
        .arg("--source")
        .arg(source.as_ref())
        .arg("--out")
        .arg(out.as_ref());
    cmd
}

/// Builds with the work directory next to the source, so two sources mean two build paths.
fn build(source: &Path, out: &Path) -> serde_json::Value {
    let work = source.with_file_name(format!(
        "{}-work",
        source.file_name().unwrap().to_string_lossy()
    ));
    let r = run(vouch_build(source, out)
        .arg("--work-dir")
        .arg(work)
        .arg("--json"));
    assert_eq!(r.code, 0, "build failed:\n{}", r.stderr);
    r.json()
}

/// Issue 2 acceptance: two directory paths, two wall-clock times >= 2 s apart, one digest.
#[test]
fn sample_builds_byte_identical_from_two_paths_and_times() {
    let dir = tempdir();
    let a = dir.path().join("a/sample");
    let b = dir.path().join("some/much/deeper/other-checkout/sample");
    copy_sample(&a);
    copy_sample(&b);
    let first = build(&a, &dir.path().join("out-a"));
    std::thread::sleep(std::time::Duration::from_millis(2100));
    let second = build(&b, &dir.path().join("out-b"));
    assert_eq!(first["sha256"], second["sha256"]);
    assert_eq!(first["epoch_source"], "default", "copies are not in git");

    let wheel = Path::new(first["wheel"].as_str().unwrap());
    let bytes = std::fs::read(wheel).unwrap();
    for leaked in [a.to_str().unwrap(), dir.path().to_str().unwrap(), "/tmp/"] {
        assert!(
            !bytes.windows(leaked.len()).any(|w| w == leaked.as_bytes()),
            "{leaked} leaked into the wheel"
        );
    }
    // And inside the compressed .so, too.
    let mut z = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    let so_name = z
        .file_names()
        .map(|n| n.unwrap().into_owned())
        .find(|n| n.ends_with(".so"))
        .unwrap();
    let mut so = Vec::new();
    std::io::Read::read_to_end(&mut z.by_name(&so_name).unwrap(), &mut so).unwrap();
    assert!(
        !so.windows(5).any(|w| w == b"/tmp/"),
        "a temp path leaked into {so_name}"
    );
}

/// Issue 2 acceptance: one changed byte of one C source changes the digest, and the diff
/// names exactly the extension module and RECORD.
#[test]
fn one_c_byte_changes_digest_and_diff_names_the_so() {
    let dir = tempdir();
    let a = dir.path().join("a");
    let b = dir.path().join("b");
    copy_sample(&a);
    copy_sample(&b);
    let c = b.join("csrc/checksum.c");
    let text = std::fs::read_to_string(&c).unwrap();
    assert!(text.contains("65521u"));
    std::fs::write(&c, text.replacen("65521u", "65520u", 1)).unwrap();
    let first = build(&a, &dir.path().join("out-a"));
    let second = build(&b, &dir.path().join("out-b"));
    assert_ne!(first["sha256"], second["sha256"]);

    let r = run(vouch()
        .arg("diff")
        .arg("--json")
        .arg(first["wheel"].as_str().unwrap())
        .arg(second["wheel"].as_str().unwrap()));
    assert_eq!(r.code, 1, "{}", r.stderr);
    let j = r.json();
    let changed: Vec<&str> = j["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap())
        .collect();
    assert_eq!(
        changed,
        [
            "vouch_sample-0.1.0.dist-info/RECORD",
            "vouch_sample/_native.cpython-311-x86_64-linux-gnu.so"
        ]
    );
    assert!(
        j["only_in_a"].as_array().unwrap().is_empty()
            && j["only_in_b"].as_array().unwrap().is_empty()
    );
}

fn pip(args: &[&str]) {
    let st = Command::new(venv_python())
        .args(["-m", "pip", "--disable-pip-version-check", "-q"])
        .args(args)
        .status()
        .unwrap();
    assert!(st.success(), "pip {args:?} failed");
}

/// Issue 2 acceptance: a plain `pip wheel` of the sample, normalized, installs and imports;
/// normalizing it again changes nothing.
#[test]
fn normalized_pip_wheel_installs_and_imports() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    let raw = dir.path().join("raw");
    pip(&[
        "wheel",
        "--no-deps",
        "-w",
        raw.to_str().unwrap(),
        src.to_str().unwrap(),
    ]);
    let wheel = std::fs::read_dir(&raw)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();

    let n1 = dir.path().join("n1");
    let r = run(vouch()
        .arg("normalize")
        .arg(&wheel)
        .arg("--out")
        .arg(&n1)
        .arg("--json"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()[0]["changed"], true);
    let normalized = n1.join(wheel.file_name().unwrap());

    let n2 = dir.path().join("n2");
    let r = run(vouch()
        .arg("normalize")
        .arg(&normalized)
        .arg("--out")
        .arg(&n2)
        .arg("--json"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()[0]["changed"], false);
    assert_eq!(
        sha256_file(&normalized),
        sha256_file(&n2.join(wheel.file_name().unwrap()))
    );

    let target = dir.path().join("site");
    pip(&[
        "install",
        "--no-deps",
        "--no-index",
        "--target",
        target.to_str().unwrap(),
        normalized.to_str().unwrap(),
    ]);
    let out = Command::new(venv_python())
        .env("PYTHONPATH", &target)
        .args(["-c", "import vouch_sample as v; print(v.greeting(), v.adler32(b'Wikipedia'), v.dot([1.0, 2.0], [3.0, 4.0]))"])
        .output()
        .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // Adler-32 of "Wikipedia" is 0x11E60398 = 300286872.
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from vouch-sample 300286872 11.0"
    );
}

#[test]
fn compiler_error_exits_4_with_the_compiler_output() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    // The compiler's and pip's own output vary by version: checked by `contains`, not snapshot.
    std::fs::write(src.join("csrc/checksum.c"), "this is not C;\n").unwrap();
    let out = dir.path().join("out");
    let r = run(&mut vouch_build(&src, &out));

    assert_eq!(r.code, 4, "{}", r.stderr);
    assert!(
        r.stderr.contains("the PEP 517 build failed"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("error:"),
        "compiler output missing:\n{}",
        r.stderr
    );
    assert!(
        !out.exists() || std::fs::read_dir(&out).unwrap().next().is_none(),
        "no partial output"
    );
}

#[test]
fn build_env_is_scrubbed_of_secrets() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    // A build backend that would leak any token it can see into the wheel.
    let setup = std::fs::read_to_string(src.join("setup.py")).unwrap();
    std::fs::write(
        src.join("setup.py"),
        format!(
            "import os, pathlib\npathlib.Path('src/vouch_sample/data/env.txt').write_text('\\n'.join(sorted(os.environ)) + '\\n' + os.environ.get('GITHUB_TOKEN', 'no-token'))\n{setup}"
        ),
    )
    .unwrap();
    let secret = "ghs_ThisIsATestSecretThatMustNotLeak0123";
    let out = dir.path().join("out");
    let r = run(vouch()
        .arg("build")
        .arg("-vv")
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out)
        .env("GITHUB_TOKEN", secret)
        .env("ACTIONS_ID_TOKEN_REQUEST_TOKEN", secret));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        !r.stderr.contains(secret) && !r.stdout.contains(secret),
        "secret in vouch's output"
    );
    let wheel = std::fs::read_dir(&out)
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let mut z = zip::ZipArchive::new(std::fs::File::open(wheel).unwrap()).unwrap();
    let mut env = String::new();
    std::io::Read::read_to_string(
        &mut z.by_name("vouch_sample/data/env.txt").unwrap(),
        &mut env,
    )
    .unwrap();
    assert!(env.ends_with("no-token"), "{env}");
    assert!(
        !env.contains("GITHUB_TOKEN") && !env.contains("ACTIONS_ID_TOKEN"),
        "{env}"
    );
    assert!(env.contains("SOURCE_DATE_EPOCH"));
}

#[test]
fn demo_builds_twice_and_reports_identical() {
    let dir = tempdir();
    // The demo's own work directories (next to its sources), not two inside the suite's
    // shared one, which another test's build empties when it takes it.
    let r = run(vouch()
        .env_remove("VOUCH_WORK_DIR")
        .arg("demo")
        .arg("--out")
        .arg(dir.path()));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let lines: Vec<&str> = r.stdout.lines().collect();
    assert_eq!(lines.len(), 6, "{}", r.stdout);
    assert!(
        lines[5].ends_with("import says \"hello from vouch-sample\""),
        "{}",
        r.stdout
    );
    let d1 = lines[0].strip_prefix("build 1: ").unwrap();
    let d2 = lines[1].strip_prefix("build 2: ").unwrap();
    assert_eq!(d1, d2);
    assert_eq!(lines[2], "identical: yes");
    assert!(
        lines[3].starts_with("signed build 1 (local key): "),
        "{}",
        r.stdout
    );
    assert!(lines[4].starts_with("verified build 2"), "{}", r.stdout);
    let bundle = std::path::PathBuf::from(lines[3].split(": ").nth(1).unwrap());
    // The bundle verifies with the CLI too, and not for other bytes.
    let w2 = std::fs::read_dir(dir.path().join("build-2"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    let verify = |file: &Path| {
        run(vouch()
            .arg("verify")
            .arg(file)
            .arg("--bundle")
            .arg(&bundle)
            .arg("--key")
            .arg(dir.path().join("demo-key.pub"))
            .args(["--runner", "local", "--repo", "vouch-build/vouch-sample"]))
    };
    assert_eq!(verify(&w2).code, 0);
    assert_eq!(
        verify(&bundle).code,
        15,
        "a different file is not among the subjects"
    );
    let w1 = std::fs::read_dir(dir.path().join("build-1"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path();
    assert_eq!(format!("sha256:{}", sha256_file(&w1)), d1);
}

#[test]
fn epoch_comes_from_the_last_commit_touching_the_source() {
    let dir = tempdir();
    let src = dir.path().join("repo/pkg");
    copy_sample(&src);
    let git = |args: &[&str], date: &str| {
        let st = Command::new("git")
            .arg("-C")
            .arg(dir.path().join("repo"))
            .args(["-c", "user.name=t", "-c", "user.email=t@example.com"])
            .args(args)
            .env("GIT_COMMITTER_DATE", date)
            .env("GIT_AUTHOR_DATE", date)
            .status()
            .unwrap();
        assert!(st.success());
    };
    git(&["init", "-q"], "2024-01-01T00:00:00Z");
    git(&["add", "."], "2024-01-01T00:00:00Z");
    git(&["commit", "-qm", "pkg"], "2024-01-01T00:00:00Z");
    std::fs::write(dir.path().join("repo/unrelated.txt"), "x").unwrap();
    git(&["add", "."], "2025-06-01T00:00:00Z");
    git(&["commit", "-qm", "elsewhere"], "2025-06-01T00:00:00Z");
    let j = build(&src, &dir.path().join("out"));
    assert_eq!(j["epoch_source"], "git-commit");
    assert_eq!(
        j["source_date_epoch"], 1_704_067_200,
        "the unrelated later commit must not count"
    );
}

/// Issue 12, item 2: an untrusted project's `setup.py` drops a `.pth` file into the build
/// venv's site-packages. The next build (of another, trusted project with the same build
/// requirements, so the same venv key) must not run it.
#[test]
fn issue12_a_pth_planted_by_one_build_never_runs_in_the_next() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let marker = dir.path().join("pwned");
    let evil = dir.path().join("evil");
    copy_sample(&evil);
    let setup = evil.join("setup.py");
    let text = std::fs::read_to_string(&setup).unwrap();
    std::fs::write(
        &setup,
        format!(
            "import sysconfig, pathlib\n\
             pathlib.Path(sysconfig.get_paths()['purelib'], 'zz_vouch_evil.pth').write_text(\n\
             \"import pathlib; pathlib.Path(r'{}').write_text('ran')\\n\")\n{text}",
            marker.display()
        ),
    )
    .unwrap();
    let build_with = |source: &Path, out: &str| {
        run(vouch_build(source, dir.path().join(out))
            .arg("--json")
            .env("VOUCH_CACHE_DIR", &cache))
    };
    let r = build_with(&evil, "out-evil");
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The planted file did run inside the evil build's own venv copy...
    assert!(marker.exists(), "the attack must have had its chance");
    std::fs::remove_file(&marker).unwrap();

    let clean = dir.path().join("clean");
    copy_sample(&clean);
    let r = build_with(&clean, "out-clean");
    assert_eq!(r.code, 0, "{}", r.stderr);
    // ...but never in the next build, which runs its own verified copy of the sealed venv.
    assert!(!marker.exists(), "a later build ran the planted .pth");
    let planted: Vec<_> = walkdir::WalkDir::new(&cache)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "zz_vouch_evil.pth")
        .collect();
    assert!(planted.is_empty(), "left in the cache: {planted:?}");
}

/// Issue 12, item 4: `--work-dir` equal to the source (or holding it) is refused before
/// anything is deleted; a relative `--work-dir` and `VOUCH_CACHE_DIR` work.
#[test]
fn issue12_work_dir_never_wipes_the_source_and_relative_paths_work() {
    let dir = tempdir();
    let src = dir.path().join("checkout");
    copy_sample(&src);
    std::fs::write(src.join("uncommitted.txt"), b"precious").unwrap();
    let mut refused = Vec::new();
    for (label, wd) in [
        ("the checkout", src.clone()),
        ("its parent", dir.path().to_owned()),
    ] {
        let r = run(vouch_build(&src, dir.path().join("out"))
            .arg("--work-dir")
            .arg(&wd));
        assert!(
            src.join("uncommitted.txt").is_file(),
            "the checkout survived"
        );
        refused.push((label, r));
    }
    insta::assert_snapshot!(snapshot_cases(refused, &[]), @r#"
        ===== "the checkout"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        building [TEMP]/checkout
        error: building a wheel from "[TEMP]/checkout"
          caused by: work directory "[TEMP]/checkout": holds "[TEMP]/checkout", which the build reads or writes; emptying it would lose it

        ===== "its parent"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        building [TEMP]/checkout
        error: building a wheel from "[TEMP]/checkout"
          caused by: work directory "[TEMP]": holds "[TEMP]/checkout", which the build reads or writes; emptying it would lose it
    "#);
    // A directory vouch did not make, with someone's files in it, is left alone.
    let foreign = dir.path().join("foreign");
    std::fs::create_dir_all(&foreign).unwrap();
    std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
    vouch_snapshot!(vouch_build(&src, dir.path().join("out"))
        .arg("--work-dir")
        .arg(&foreign), @r#"
            success: false
            exit_code: 2
            ----- stdout -----

            ----- stderr -----
            building [TEMP]/checkout
            error: building a wheel from "[TEMP]/checkout"
              caused by: work directory "[TEMP]/foreign": is not empty and was not made by vouch (no .vouch-workdir file); vouch empties only its own work directories
        "#);
    assert!(foreign.join("notes.txt").is_file());

    // Relative paths, from another current directory.
    let r = run(vouch()
        .current_dir(dir.path())
        .args([
            "build",
            "--source",
            "checkout",
            "--out",
            "out",
            "--work-dir",
            "w",
            "--json",
        ])
        .env(
            "VOUCH_CACHE_DIR",
            cache_dir()
                .strip_prefix("/")
                .map(|p| {
                    // `cache_dir()` is absolute; spell it relative to `dir` through `..`s.
                    let ups = dir.path().components().count() - 1;
                    let mut rel = std::path::PathBuf::new();
                    for _ in 0..ups {
                        rel.push("..");
                    }
                    rel.join(p)
                })
                .unwrap(),
        ));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(dir.path().join("out").read_dir().unwrap().count() > 0);
}

/// Issue 12, item 12: `-vv` never prints an environment or a URL's userinfo. Index URLs and
/// proxies carry credentials that way, and tokens sit in the caller's environment.
#[test]
fn issue12_debug_logs_carry_no_secrets_and_no_colour() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    let cache = dir.path().join("cache");
    let build = |extra: &[(&str, &str)], verbose: &str| {
        let mut cmd = vouch_build(&src, dir.path().join("out"));
        cmd.arg(verbose).env("VOUCH_CACHE_DIR", &cache);
        for (k, v) in extra {
            cmd.env(k, v);
        }
        run(&mut cmd)
    };
    // The venv first, with the machine's own pip settings.
    let r = build(&[], "-q");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let secrets = [
        (
            "PIP_INDEX_URL",
            "https://vouchuser:pipS3cretTok@127.0.0.1:9/simple",
        ),
        (
            "PIP_EXTRA_INDEX_URL",
            "https://x:extraS3cretTok@127.0.0.1:9/simple",
        ),
        ("HTTPS_PROXY", "http://proxyuser:proxyS3cretPw@127.0.0.1:9"),
        ("GITHUB_TOKEN", "ghp_debugLogS3cret0123456789"),
        ("VOUCH_CACHE_PASSWORD", "cacheS3cretPw"),
    ];
    for verbose in ["-vv", "-vvv"] {
        let r = build(&secrets, verbose);
        assert_eq!(r.code, 0, "{}", r.stderr);
        assert!(
            r.stderr.contains("running the PEP 517 build"),
            "debug logging is on: {}",
            r.stderr
        );
        for out in [&r.stdout, &r.stderr] {
            for needle in ["S3cret", "PIP_INDEX_URL=", "proxyuser"] {
                assert!(
                    !out.contains(needle),
                    "{needle} leaked with {verbose}:\n{out}"
                );
            }
            // stderr is a pipe here, not a terminal: no colour codes.
            assert!(
                !out.contains('\u{1b}'),
                "ANSI escape with {verbose}:\n{out}"
            );
        }
    }
}

/// Issue 12, item 1 (every command): a flag vouch would parse and then drop is refused.
#[test]
fn issue12_build_refuses_flags_it_would_ignore() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    let out = dir.path().join("out");
    for (extra, says) in [
        (vec!["--sha", &"a".repeat(40)], "--sha"),
        (
            vec!["--profile", "vouch.toml"],
            "--profile applies only with --cell",
        ),
        (
            vec!["--cache-store", "/tmp/x"],
            "--cache-store applies only with --cache",
        ),
        (vec!["--event", "push"], "--event applies only with --cache"),
        (vec!["--pr", "7"], "--pr applies only with --cache"),
    ] {
        let r = run(vouch_build(&src, &out).args(&extra));
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert!(r.stderr.contains(says), "{extra:?}: {}", r.stderr);
        assert!(!out.exists(), "nothing built");
    }
    // `toolchain install` builds nothing, so it takes no work directory.
    let r = run(vouch().args([
        "toolchain",
        "install",
        "--cell",
        "x",
        "--work-dir",
        "/tmp/w",
    ]));
    assert_eq!(r.code, 2, "{}", r.stderr);
}

/// Issue 12, item 2, the same-user attack: a pull request's build (same OS user, same
/// `VOUCH_CACHE_DIR`) plants a `.pth` in the *trusted* root's sealed venv and rewrites that
/// venv's seal record to match. A push build holding the seal key refuses the forged record,
/// makes the venv again and never runs the planted file.
#[test]
fn issue12_a_pr_build_cannot_forge_the_trusted_venv_seal() {
    let dir = tempdir();
    let cache = dir.path().join("cache");
    let marker = dir.path().join("pwned");
    let key = dir.path().join("seal.key");
    std::fs::write(&key, "k".repeat(48)).unwrap();
    let good = dir.path().join("good");
    copy_sample(&good);
    let evil = dir.path().join("evil");
    copy_sample(&evil);
    let setup = evil.join("setup.py");
    let forge = format!(
        r#"import glob, hashlib, json, os, pathlib, stat
for seal in glob.glob(r'{cache}/trusted/venvs/*.seal.json'):
    root = seal[: -len('.seal.json')]
    for site in glob.glob(root + '/lib/python*/site-packages'):
        os.chmod(site, 0o755)
        data = b"import pathlib; pathlib.Path(r'{marker}').write_text('ran')\n"
        pathlib.Path(site, 'zz_evil.pth').write_bytes(data)
        rec = json.load(open(seal))
        rel = os.path.relpath(site, root) + '/zz_evil.pth'
        rec['entries'][rel] = {{'kind': 'file', 'size': len(data),
            'sha256': hashlib.sha256(data).hexdigest(), 'executable': False}}
        os.chmod(seal, 0o644)
        json.dump(rec, open(seal, 'w'))
"#,
        cache = cache.display(),
        marker = marker.display()
    );
    let text = std::fs::read_to_string(&setup).unwrap();
    std::fs::write(&setup, format!("{forge}\n{text}")).unwrap();
    let build = |source: &Path, event: &str, keyed: bool, out: &str| {
        let mut cmd = vouch_build(source, dir.path().join(out));
        cmd.env("VOUCH_CACHE_DIR", &cache)
            .env("GITHUB_ACTIONS", "true")
            .env("GITHUB_EVENT_NAME", event)
            .env_remove("GITHUB_STEP_SUMMARY");
        if keyed {
            cmd.arg("--seal-key-file").arg(&key);
        }
        run(&mut cmd)
    };
    let r = build(&good, "push", true, "o1");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = build(&evil, "pull_request", false, "o2");
    assert_eq!(r.code, 0, "{}", r.stderr);
    let planted: Vec<_> = walkdir::WalkDir::new(cache.join("trusted"))
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_name() == "zz_evil.pth")
        .collect();
    assert_eq!(planted.len(), 1, "the attack reached the trusted venv");

    let r = build(&good, "push", true, "o3");
    assert_eq!(r.code, 0, "{}", r.stderr);
    // The build's stderr carries pip's output: `contains`, not a snapshot.
    assert!(r.stderr.contains("not authenticated"), "{}", r.stderr);
    assert!(!marker.exists(), "the push build ran the planted .pth");
}

/// Issue 12, item 10: an sdist whose names collide on a case-insensitive file system is
/// refused before anything is built (it would build another tree on Windows or macOS than the
/// one digested here). The rest of the sdist is the sample, which builds.
#[test]
fn issue12_sdist_with_case_colliding_names_is_refused() {
    let dir = tempdir();
    let src = dir.path().join("vouch_sample-0.1.0");
    copy_sample(&src);
    std::fs::write(src.join("src/vouch_sample/Util.py"), "A = 1\n").unwrap();
    std::fs::write(src.join("src/vouch_sample/util.py"), "A = 2\n").unwrap();
    let sdist = dir.path().join("vouch_sample-0.1.0.tar.gz");
    let st = Command::new("python3")
        .arg("-c")
        .arg("import sys, tarfile\nwith tarfile.open(sys.argv[1], 'w:gz') as t: t.add(sys.argv[2], arcname='vouch_sample-0.1.0')")
        .arg(&sdist)
        .arg(&src)
        .status()
        .unwrap();
    assert!(st.success());
    let out = dir.path().join("out");
    vouch_snapshot!(vouch_build(&sdist, &out), @r#"
        success: false
        exit_code: 3
        ----- stdout -----

        ----- stderr -----
        building [TEMP]/vouch_sample-0.1.0.tar.gz
        error: building a wheel from "[TEMP]/vouch_sample-0.1.0.tar.gz"
          caused by: sdist "[TEMP]/vouch_sample-0.1.0.tar.gz": members "vouch_sample-0.1.0/src/vouch_sample/Util.py" and "vouch_sample-0.1.0/src/vouch_sample/util.py" collide: names that differ only in case, one path on Windows and macOS
    "#);
    assert!(!out.exists(), "nothing built");
}
