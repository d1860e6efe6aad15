//! `vouch build` and `vouch demo` on the bundled sample: real CPython, pip, setuptools, gcc.

mod common;

use std::path::Path;
use std::process::Command;

use common::*;

/// Builds with the work directory next to the source, so two sources mean two build paths.
fn build(source: &Path, out: &Path) -> serde_json::Value {
    let work = source.with_file_name(format!(
        "{}-work",
        source.file_name().unwrap().to_string_lossy()
    ));
    let r = run(vouch()
        .arg("build")
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
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
    std::fs::write(src.join("csrc/checksum.c"), "this is not C;\n").unwrap();
    let out = dir.path().join("out");
    let r = run(vouch()
        .arg("build")
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(&out));
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
    let r = run(vouch().arg("demo").arg("--out").arg(dir.path()));
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
    let r = run(vouch()
        .arg("build")
        .arg("--source")
        .arg(&sdist)
        .arg("--out")
        .arg(&out));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(
        r.stderr.contains(
            "members \"vouch_sample-0.1.0/src/vouch_sample/Util.py\" and \"vouch_sample-0.1.0/src/vouch_sample/util.py\" collide: names that differ only in case"
        ),
        "{}",
        r.stderr
    );
    assert!(!out.exists(), "nothing built");
}
