//! Issue 8: auditing a release directory offline, policy files, and rebuilds.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::vouch_snapshot;

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/sigstore").join(name)
}

/// Signs `files` with `key` as a local build of `repo` (one bundle per file).
fn sign(key: &Path, repo: &str, files: &[&Path], epoch: u64) {
    for f in files {
        let r = run(
            attest_with_key(f, format!("{}.sigstore.json", f.display()), key).args([
                "--local",
                "--repo",
                repo,
                "--sha",
                SHA,
                "--runner",
                "github-hosted",
                "--source-date-epoch",
                &epoch.to_string(),
            ]),
        );
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
}

const POLICY: &str = r#"
[[project]]
name = "vouch-sample"
repository = "vouch-build/vouch-sample"

[[project]]
name = "demo"
repository = "vouch-build/vouch-sample"

[[project]]
name = "tampered"
repository = "vouch-build/vouch-sample"

[[project]]
name = "pypi-attestations"
repository = "trailofbits/pypi-attestations"
build_workflow = ".github/workflows/release.yml"
ref = "refs/tags/v*"

[[project]]
name = "signed-package"
repository = "cupy/cupy"
predicate_type = "https://schemas.conda.org/attestations-publish-1.schema.json"
"#;

fn build_sample(dir: &Path, out: &str) -> PathBuf {
    let src = dir.join("sample");
    if !src.exists() {
        copy_sample(&src);
    }
    let r = run(vouch()
        .arg("build")
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(dir.join(out))
        .arg("--work-dir")
        .arg(dir.join("work"))
        .args(["--source-date-epoch", "1700000000", "--json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    PathBuf::from(r.json()["wheel"].as_str().unwrap())
}

#[test]
fn audit_of_a_mixed_release_directory() {
    let dir = tempdir();
    let rel = dir.path().join("release");
    std::fs::create_dir_all(&rel).unwrap();
    let key = dir.path().join("k.pem");
    assert_eq!(run(vouch().arg("keygen").arg("--out").arg(&key)).code, 0);
    let pubkey = dir.path().join("k.pem.pub");

    // Correctly signed: the sample wheel and a second wheel.
    let built = build_sample(dir.path(), "wheels");
    let sample = rel.join(built.file_name().unwrap());
    std::fs::copy(&built, &sample).unwrap();
    let demo = rel.join("demo-1.0-py3-none-any.whl");
    std::fs::write(&demo, b"demo wheel bytes").unwrap();
    // Changed after signing.
    let tampered = rel.join("tampered-1.0-py3-none-any.whl");
    std::fs::write(&tampered, b"original bytes").unwrap();
    sign(
        &key,
        "vouch-build/vouch-sample",
        &[&sample, &demo, &tampered],
        1_700_000_000,
    );
    std::fs::write(&tampered, b"changed bytes").unwrap();
    // A real bundle, but from another repository than the policy names.
    std::fs::copy(
        fixture("signed-package-2.1.0-hb0f4dca_0.conda"),
        rel.join("signed-package-2.1.0-hb0f4dca_0.conda"),
    )
    .unwrap();
    std::fs::copy(
        fixture("conda-attestation.sigstore.json"),
        rel.join("signed-package-2.1.0-hb0f4dca_0.conda.sigstore.json"),
    )
    .unwrap();
    // No evidence at all.
    std::fs::write(rel.join("orphan-1.0.tar.gz"), b"no evidence").unwrap();
    // A real PEP 740 attestation from PyPI, next to the real sdist.
    for f in [
        "pypi_attestations-0.0.19.tar.gz",
        "pypi_attestations-0.0.19.tar.gz.publish.attestation",
    ] {
        std::fs::copy(fixture(f), rel.join(f)).unwrap();
    }
    let policy = dir.path().join("policy.toml");
    std::fs::write(&policy, POLICY).unwrap();

    let audit = |fmt: &str| {
        run(vouch()
            .arg("audit")
            .arg(&rel)
            .arg("--policy")
            .arg(&policy)
            .arg("--key")
            .arg(&pubkey)
            .arg(fmt))
    };
    let r = audit("--json");
    assert_eq!(r.code, 1, "any failure fails the audit: {}", r.stderr);
    let rows = r.json();
    let verdicts: Vec<(String, String, String)> = rows
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                Path::new(row["file"].as_str().unwrap())
                    .file_name()
                    .unwrap()
                    .to_string_lossy()
                    .into_owned(),
                row["verdict"].as_str().unwrap().to_owned(),
                row["kind"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect();
    let s = |a: &str, b: &str, c: &str| (a.to_owned(), b.to_owned(), c.to_owned());
    assert_eq!(
        verdicts,
        [
            s("demo-1.0-py3-none-any.whl", "verified", ""),
            s("orphan-1.0.tar.gz", "no-evidence", ""),
            s("pypi_attestations-0.0.19.tar.gz", "verified", ""),
            s("signed-package-2.1.0-hb0f4dca_0.conda", "failed", "policy"),
            s("tampered-1.0-py3-none-any.whl", "failed", "digest"),
            s(
                "vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl",
                "verified",
                ""
            ),
        ]
    );
    let pypi = &rows[2];
    assert_eq!(
        pypi["repository"],
        "https://github.com/trailofbits/pypi-attestations"
    );
    assert_eq!(pypi["commit"], "08802efe1f8e5fec4ad842d6b8ce97656092ee72");
    assert_eq!(
        pypi["predicate_type"],
        "https://docs.pypi.org/attestations/publish/v1"
    );

    let md = audit("--markdown");
    assert_eq!(md.code, 1);
    let md = filter(&md.stdout, &[]);
    insta::assert_snapshot!(md, @r#"
    | file | verdict | repository | workflow | ref | commit | run | predicate | reason |
    |---|---|---|---|---|---|---|---|---|
    | `demo-1.0-py3-none-any.whl` | verified | https://github.com/vouch-build/vouch-sample | https://github.com/vouch-build/vouch-sample/local@local | local | 0123456789abcdef0123456789abcdef01234567 |  | https://slsa.dev/provenance/v1 |  |
    | `orphan-1.0.tar.gz` | **no evidence** |  |  |  |  |  |  | no evidence next to it (looked for .sigstore.json, .intoto.jsonl, .publish.attestation, .provenance) |
    | `pypi_attestations-0.0.19.tar.gz` | verified | https://github.com/trailofbits/pypi-attestations | https://github.com/trailofbits/pypi-attestations/.github/workflows/release.yml@refs/tags/v0.0.19 | refs/tags/v0.0.19 | 08802efe1f8e5fec4ad842d6b8ce97656092ee72 | https://github.com/trailofbits/pypi-attestations/actions/runs/12169989787/attempts/1 | https://docs.pypi.org/attestations/publish/v1 |  |
    | `signed-package-2.1.0-hb0f4dca_0.conda` | **FAILED** |  |  |  |  |  |  | signed-package-2.1.0-hb0f4dca_0.conda.sigstore.json: policy check failed: source repository (OID .1.12): expected "https://github.com/cupy/cupy", found "https://github.com/prefix-dev/sigstore-example" |
    | `tampered-1.0-py3-none-any.whl` | **FAILED** |  |  |  |  |  |  | tampered-1.0-py3-none-any.whl.sigstore.json: digest check failed: sha256:[SHA256] is not among the statement's subjects (tampered-1.0-py3-none-any.whl sha256:[SHA256]) |
    | `vouch_sample-0.1.0-cp311-cp311-linux_x86_64.whl` | verified | https://github.com/vouch-build/vouch-sample | https://github.com/vouch-build/vouch-sample/local@local | local | 0123456789abcdef0123456789abcdef01234567 |  | https://slsa.dev/provenance/v1 |  |
    "#);

    // Only the good files: exit 0.
    let good = dir.path().join("good");
    std::fs::create_dir_all(&good).unwrap();
    for f in [
        "pypi_attestations-0.0.19.tar.gz",
        "pypi_attestations-0.0.19.tar.gz.publish.attestation",
    ] {
        std::fs::copy(rel.join(f), good.join(f)).unwrap();
    }
    let r = run(vouch().arg("audit").arg(&good).arg("--policy").arg(&policy));
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Flags on the command line win over the policy file.
    let r = run(vouch()
        .arg("audit")
        .arg(&good)
        .arg("--policy")
        .arg(&policy)
        .args(["--repo", "cupy/cupy", "--json"]));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(r.json()[0]["kind"], "policy");
}

#[test]
fn policy_file_errors_name_the_key() {
    let dir = tempdir();
    let policy = dir.path().join("p.toml");
    std::fs::write(&policy, "[[project]]\nname = \"x\"\nrepo = \"cupy/cupy\"\n").unwrap();
    vouch_snapshot!(vouch()
        .arg("audit")
        .arg(dir.path())
        .arg("--policy")
        .arg(&policy), @r#"
            success: false
            exit_code: 3
            ----- stdout -----

            ----- stderr -----
            error: policy file "[TEMP]/p.toml": unknown field `repo`
        "#);
}

#[test]
fn rebuild_reproduces_then_names_the_differing_members() {
    let dir = tempdir();
    let key = dir.path().join("k.pem");
    assert_eq!(run(vouch().arg("keygen").arg("--out").arg(&key)).code, 0);
    let wheel = build_sample(dir.path(), "wheels");
    sign(&key, "vouch-build/vouch-sample", &[&wheel], 1_700_000_000);
    let bundle = PathBuf::from(format!("{}.sigstore.json", wheel.display()));
    // The auditor's checkout, elsewhere.
    let checkout = dir.path().join("auditor/checkout");
    copy_sample(&checkout);
    let rebuild = || {
        run(vouch()
            .arg("rebuild")
            .arg(&wheel)
            .arg("--bundle")
            .arg(&bundle)
            .arg("--source")
            .arg(&checkout)
            .arg("--key")
            .arg(dir.path().join("k.pem.pub"))
            .args(["--repo", "vouch-build/vouch-sample", "--json"]))
    };
    let r = rebuild();
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["reproduced"], true);
    assert_eq!(r.json()["source_date_epoch"], 1_700_000_000);

    let c = checkout.join("csrc/checksum.c");
    std::fs::write(
        &c,
        std::fs::read_to_string(&c)
            .unwrap()
            .replacen("65521u", "65520u", 1),
    )
    .unwrap();
    let r = rebuild();
    assert_eq!(r.code, 1, "{}", r.stderr);
    let changed: Vec<String> = r.json()["diff"]["changed"]
        .as_array()
        .unwrap()
        .iter()
        .map(|c| c["name"].as_str().unwrap().to_owned())
        .collect();
    assert_eq!(
        changed,
        [
            "vouch_sample-0.1.0.dist-info/RECORD",
            "vouch_sample/_native.cpython-311-x86_64-linux-gnu.so"
        ]
    );
}

// ---------------------------------------------------------------- issue 12

const PYPI_SDIST: &str = "pypi_attestations-0.0.19.tar.gz";
const PYPI_RUN: &str = "12169989787";

/// A directory with PyPI's real sdist and its PEP 740 attestation.
fn pypi_release(dir: &Path) -> PathBuf {
    let rel = dir.join("release");
    std::fs::create_dir_all(&rel).unwrap();
    for f in [
        PYPI_SDIST.to_owned(),
        format!("{PYPI_SDIST}.publish.attestation"),
    ] {
        std::fs::copy(fixture(&f), rel.join(&f)).unwrap();
    }
    rel
}

fn audit_json(paths: &[&Path], flags: &[&str]) -> Run {
    let mut cmd = vouch();
    cmd.arg("audit").args(paths).args(flags).arg("--json");
    run_with_timeout(&mut cmd, std::time::Duration::from_secs(60))
}

/// `vouch verify --run-id 1` exits 16; `vouch audit --run-id 1` printed "verified" and exited 0.
/// Every policy flag audit accepts is now held against every file, as verify holds it.
#[test]
fn issue12_audit_enforces_run_id_pr_and_cell() {
    let dir = tempdir();
    let rel = pypi_release(dir.path());
    let repo = ["--repo", "trailofbits/pypi-attestations"];
    let ok = audit_json(&[&rel], &[&repo[..], &["--run-id", PYPI_RUN]].concat());
    assert_eq!(ok.code, 0, "the right run passes: {}", ok.stderr);
    assert_eq!(ok.json()[0]["verdict"], "verified");
    for (flags, expected) in [
        (vec!["--run-id", "1"], "run (OID .1.21): expected \"1\""),
        (
            vec!["--pr", "7"],
            "source ref for the pull request (OID .1.14): expected \"refs/pull/7/merge\"",
        ),
        (
            vec!["--cell", "nonsense"],
            "statement cell (internalParameters.vouch.cell): expected \"nonsense\"",
        ),
    ] {
        let r = audit_json(&[&rel], &[&repo[..], &flags].concat());
        assert_eq!(r.code, 1, "{flags:?} must be enforced: {}", r.stdout);
        let row = &r.json()[0];
        assert_eq!(row["verdict"], "failed", "{flags:?}");
        assert_eq!(row["kind"], "policy", "{flags:?}");
        let reason = row["reason"].as_str().unwrap();
        assert!(reason.contains(expected), "{flags:?}: {reason}");
    }
    // The same keys in a policy file, per project and as defaults.
    let policy = dir.path().join("p.toml");
    for (text, expected) in [
        (
            "[[project]]\nname = \"pypi-attestations\"\nrepository = \"trailofbits/pypi-attestations\"\nrun_id = 1\n",
            "run (OID .1.21)",
        ),
        (
            "pr = 7\n[[project]]\nname = \"pypi-attestations\"\nrepository = \"trailofbits/pypi-attestations\"\n",
            "refs/pull/7/merge",
        ),
        (
            "[[project]]\nname = \"pypi-attestations\"\nrepository = \"trailofbits/pypi-attestations\"\ncell = \"nonsense\"\n",
            "statement cell",
        ),
    ] {
        std::fs::write(&policy, text).unwrap();
        let r = audit_json(&[&rel], &["--policy", policy.to_str().unwrap()]);
        assert_eq!(r.code, 1, "{text}: {}", r.stdout);
        let reason = r.json()[0]["reason"].as_str().unwrap().to_owned();
        assert!(reason.contains(expected), "{text}: {reason}");
    }
    std::fs::write(
        &policy,
        format!("[[project]]\nname = \"pypi-attestations\"\nrepository = \"trailofbits/pypi-attestations\"\nrun_id = {PYPI_RUN}\n"),
    )
    .unwrap();
    let r = audit_json(&[&rel], &["--policy", policy.to_str().unwrap()]);
    assert_eq!(r.code, 0, "{}", r.stdout);
    // A short commit in a policy file could never match: refused when the file is read.
    std::fs::write(&policy, "sha = \"08802ef\"\n").unwrap();
    vouch_snapshot!(audit_json(&[&rel], &["--policy", policy.to_str().unwrap()]), @r#"
        success: false
        exit_code: 3
        ----- stdout -----

        ----- stderr -----
        error: policy file "[TEMP]/p.toml": sha = "08802ef" is not a full commit SHA (40 lowercase hex digits)
    "#);
}

/// Evidence that exists but is not a regular file fails the file, naming the path; nothing is
/// ever opened that could block (a FIFO), so the audit always finishes.
#[test]
fn issue12_audit_fails_closed_on_evidence_that_is_not_a_regular_file() {
    let dir = tempdir();
    let repo = ["--repo", "trailofbits/pypi-attestations"];
    type Make = Box<dyn Fn(&Path)>;
    let cases: Vec<(&str, Make, &str)> = vec![
        (
            "a directory",
            Box::new(|p: &Path| std::fs::create_dir(p).unwrap()),
            "is a directory, not a regular file",
        ),
        (
            "a FIFO",
            Box::new(|p: &Path| mkfifo(p)),
            "is a FIFO, not a regular file",
        ),
        (
            "a socket",
            Box::new(|p: &Path| {
                // Leaked on purpose: the socket file must stay while the audit runs.
                std::mem::forget(std::os::unix::net::UnixListener::bind(p).unwrap());
            }),
            "is a socket, not a regular file",
        ),
        (
            "a link to a directory",
            Box::new(|p: &Path| {
                let target = p.with_extension("target-dir");
                std::fs::create_dir(&target).unwrap();
                std::os::unix::fs::symlink(&target, p).unwrap();
            }),
            "is a directory, not a regular file",
        ),
        (
            "a dangling link",
            Box::new(|p: &Path| std::os::unix::fs::symlink("/nonexistent/vouch", p).unwrap()),
            "is a symbolic link that cannot be followed",
        ),
    ];
    for (i, (what, make, expected)) in cases.iter().enumerate() {
        let case = dir.path().join(format!("case{i}"));
        std::fs::create_dir_all(&case).unwrap();
        let rel = pypi_release(&case);
        // The genuine attestation would verify on its own; the odd evidence next to it must
        // not be skipped.
        let odd = rel.join(format!("{PYPI_SDIST}.sigstore.json"));
        make(&odd);
        let r = audit_json(&[&rel], &repo);
        assert_eq!(r.code, 1, "{what}: {}", r.stdout);
        let row = &r.json()[0];
        assert_eq!(row["verdict"], "failed", "{what}");
        let reason = row["reason"].as_str().unwrap();
        assert!(
            reason.contains(&odd.display().to_string()) && reason.contains(expected),
            "{what}: {reason}"
        );
    }
    // The distribution file itself a FIFO: given directly, and met while walking.
    let fifo_dir = dir.path().join("fifo");
    std::fs::create_dir_all(&fifo_dir).unwrap();
    let fifo = fifo_dir.join("demo-1.0-py3-none-any.whl");
    mkfifo(&fifo);
    for path in [&fifo, &fifo_dir] {
        let r = audit_json(&[path], &repo);
        assert_eq!(r.code, 1, "{path:?}: {}", r.stdout);
        let row = &r.json()[0];
        assert_eq!(row["verdict"], "failed");
        assert!(
            row["reason"].as_str().unwrap().contains("is a FIFO"),
            "{row}"
        );
    }
}

/// `rebuild --work-dir` was parsed, then replaced by a scratch directory. A work dir that cannot
/// be created (it would sit under a regular file) shows which one the rebuild used.
#[test]
fn issue12_rebuild_honours_work_dir() {
    let dir = tempdir();
    let (key, public) = keygen(dir.path(), "k.pem");
    let wheel = dir.path().join("vouch_sample-0.1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"wheel").unwrap();
    sign(&key, "vouch-build/vouch-sample", &[&wheel], 1_700_000_000);
    let checkout = dir.path().join("checkout");
    copy_sample(&checkout);
    let blocker = dir.path().join("a-file");
    std::fs::write(&blocker, b"").unwrap();
    let work = blocker.join("work");
    let r = run(vouch()
        .arg("rebuild")
        .arg(&wheel)
        .arg("--bundle")
        .arg(format!("{}.sigstore.json", wheel.display()))
        .arg("--source")
        .arg(&checkout)
        .arg("--key")
        .arg(&public)
        .arg("--work-dir")
        .arg(&work)
        .args(["--repo", "vouch-build/vouch-sample"]));
    assert_ne!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr.contains(&blocker.display().to_string()),
        "the rebuild used --work-dir: {}",
        r.stderr
    );
}

/// Issue 14: a downloaded CI artifact audits as it came. Its bundle is named after the
/// artifact (`<artifact>.sigstore.json`, as the generated workflows sign), not after the wheel;
/// the wheel's own `<wheel>.sigstore.json` still counts, and when both are there and differ
/// the audit says so instead of picking one.
#[test]
fn audit_finds_the_bundle_named_after_the_artifact() {
    let dir = tempdir();
    let (key, public) = keygen(dir.path(), "k.pem");
    let rel = dir.path().join("artifact");
    std::fs::create_dir_all(&rel).unwrap();
    let wheel = rel.join("cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    std::fs::write(&wheel, b"the cupy wheel").unwrap();
    // Another cell's wheel and its artifact's bundle, side by side (a merged download).
    let other = rel.join("cupy_cuda13x-14.2.0-cp313-cp313-manylinux_2_28_x86_64.whl");
    std::fs::write(&other, b"the other cell's wheel").unwrap();
    let bundle_of = |file: &Path, cell: &str| {
        let bundle = rel.join(format!(
            "cupy-cuda13x-{cell}-linux-64-pr7-{SHA}.sigstore.json"
        ));
        let r = run(attest_with_key(file, &bundle, &key).args([
            "--local",
            "--repo",
            "cupy/cupy",
            "--sha",
            SHA,
            "--runner",
            "github-hosted",
        ]));
        assert_eq!(r.code, 0, "{}", r.stderr);
        bundle
    };
    let artifact_bundle = bundle_of(&wheel, "py3.12");
    let other_bundle = bundle_of(&other, "py3.13");
    let flags = [
        "--key".to_owned(),
        public.display().to_string(),
        "--repo".to_owned(),
        "cupy/cupy".to_owned(),
    ];
    let flags: Vec<&str> = flags.iter().map(String::as_str).collect();
    let r = audit_json(&[&rel], &flags);
    assert_eq!(r.code, 0, "{}", r.stdout);
    let rows = r.json();
    for (i, (file, bundle)) in [(&wheel, &artifact_bundle), (&other, &other_bundle)]
        .into_iter()
        .enumerate()
    {
        assert_eq!(rows[i]["file"], file.display().to_string());
        assert_eq!(rows[i]["verdict"], "verified", "{}", rows[i]);
        assert_eq!(
            rows[i]["evidence"],
            serde_json::json!([bundle.display().to_string()])
        );
    }

    // The wheel's own bundle with the same bytes: one bundle, the wheel's own.
    let own = PathBuf::from(format!("{}.sigstore.json", wheel.display()));
    std::fs::copy(&artifact_bundle, &own).unwrap();
    let r = audit_json(&[&wheel], &flags);
    assert_eq!(r.code, 0, "{}", r.stdout);
    assert_eq!(
        r.json()[0]["evidence"],
        serde_json::json!([own.display().to_string()])
    );

    // A different one: the audit fails the wheel and names both.
    sign(&key, "cupy/cupy", &[&wheel], 1_700_000_000);
    let r = audit_json(&[&wheel], &flags);
    assert_eq!(r.code, 1, "{}", r.stdout);
    let row = &r.json()[0];
    assert_eq!(row["verdict"], "failed");
    assert_eq!(row["kind"], "bundle");
    assert_eq!(
        row["reason"],
        format!(
            "bundle check failed: {} and {} both name {} and differ; vouch does not choose between bundles: remove the one that does not belong",
            own.display(),
            artifact_bundle.display(),
            wheel.display()
        )
    );
}
