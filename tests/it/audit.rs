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
    {
      "causes": [],
      "exit_code": 3,
      "message": "policy file \"[TEMP]/p.toml\": sha = \"08802ef\" is not a full commit SHA (40 lowercase hex digits)",
      "ok": false,
      "status": "invalid-input"
    }

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

// ---------------------------------------------------------------- issue 18: audit --pypi

use vouch_testgh::pypi::{FakePypi, PypiFile, provenance_object};

const PYPI_WHEEL: &str = "pypi_attestations-0.0.19-py3-none-any.whl";
const PYPI_REPO: [&str; 2] = ["--repo", "trailofbits/pypi-attestations"];

/// The real attestation of the real sdist, wrapped as PyPI's integrity API serves it.
fn pypi_provenance() -> serde_json::Value {
    let attestation =
        std::fs::read_to_string(fixture(&format!("{PYPI_SDIST}.publish.attestation"))).unwrap();
    provenance_object(
        serde_json::from_str(&attestation).unwrap(),
        "trailofbits/pypi-attestations",
        "release.yml",
    )
}

/// The real sdist with its provenance.
fn good_sdist() -> PypiFile {
    PypiFile::new(
        PYPI_SDIST,
        "0.0.19",
        std::fs::read(fixture(PYPI_SDIST)).unwrap(),
    )
    .with_provenance(pypi_provenance())
}

/// `vouch audit --pypi spec` against `index`, with a temp dir of its own that it must leave
/// empty: the scratch directory of downloads is removed whatever the verdicts.
fn audit_pypi(index: &FakePypi, spec: &str, flags: &[&str]) -> Run {
    let tmp = tempdir();
    let mut cmd = vouch();
    cmd.args(["audit", "--pypi", spec, "--index-url", &index.index_url()])
        .args(flags)
        .env("TMPDIR", tmp.path());
    let r = run_with_timeout(&mut cmd, std::time::Duration::from_secs(60));
    let left: Vec<_> = std::fs::read_dir(tmp.path()).unwrap().collect();
    assert!(left.is_empty(), "left behind: {left:?}");
    r
}

/// (file, verdict, kind) of each row, and no row names a scratch path.
fn pypi_rows(r: &Run) -> Vec<(String, String, String)> {
    r.json()
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            (
                row["file"].as_str().unwrap().to_owned(),
                row["verdict"].as_str().unwrap().to_owned(),
                row["kind"].as_str().unwrap_or("").to_owned(),
            )
        })
        .collect()
}

fn no_scratch_path(r: &Run) {
    for text in [&r.stdout, &r.stderr] {
        assert!(
            !text.contains("vouch-pypi-"),
            "a scratch path leaked:\n{text}"
        );
    }
}

fn row(file: &str, verdict: &str, kind: &str) -> (String, String, String) {
    (file.to_owned(), verdict.to_owned(), kind.to_owned())
}

/// The acceptance case: the real sdist verifies, a wheel PyPI has no provenance for is "no
/// evidence" (not even downloaded) and fails the audit; the text report names files, not paths.
#[test]
fn issue18_audit_pypi_verifies_what_has_provenance_and_reports_what_has_none() {
    let index = FakePypi::builder("pypi-attestations")
        .file(good_sdist())
        .file(PypiFile::new(PYPI_WHEEL, "0.0.19", b"wheel bytes".to_vec()))
        .start();
    let r = audit_pypi(
        &index,
        "pypi_attestations==0.0.19",
        &[&PYPI_REPO[..], &["--json"]].concat(),
    );
    assert_eq!(r.code, 1, "no evidence fails the audit: {}", r.stderr);
    no_scratch_path(&r);
    assert_eq!(
        pypi_rows(&r),
        [
            row(PYPI_WHEEL, "no-evidence", ""),
            row(PYPI_SDIST, "verified", ""),
        ]
    );
    let rows = r.json();
    let sdist = &rows[1];
    assert_eq!(
        sdist["repository"],
        "https://github.com/trailofbits/pypi-attestations"
    );
    assert_eq!(sdist["commit"], "08802efe1f8e5fec4ad842d6b8ce97656092ee72");
    assert_eq!(
        sdist["predicate_type"],
        "https://docs.pypi.org/attestations/publish/v1"
    );
    assert_eq!(
        sdist["sha256"],
        "sha256:9bb1add04b1b4e182be6b0b80931593f7a291eb49d69b4fd728a5d4cbcdc4bd3"
    );
    assert_eq!(sdist["url"], format!("{}/files/{PYPI_SDIST}", index.url));
    assert_eq!(
        sdist["evidence"][0],
        format!(
            "{}/integrity/pypi-attestations/0.0.19/{PYPI_SDIST}/provenance",
            index.url
        )
    );
    // The index was asked for its JSON page, then for each file's provenance before the
    // file; the file without provenance was never downloaded.
    let seen: Vec<(String, u16)> = index
        .requests()
        .iter()
        .map(|q| (q.target.clone(), q.status))
        .collect();
    assert_eq!(
        seen,
        [
            ("/simple/pypi-attestations/".to_owned(), 200),
            (
                format!("/integrity/pypi-attestations/0.0.19/{PYPI_WHEEL}/provenance"),
                404
            ),
            (
                format!("/integrity/pypi-attestations/0.0.19/{PYPI_SDIST}/provenance"),
                200
            ),
            (format!("/files/{PYPI_SDIST}"), 200),
        ]
    );
    assert_eq!(
        index.requests()[0].accept.as_deref(),
        Some("application/vnd.pypi.simple.v1+json")
    );

    let text = audit_pypi(&index, "pypi-attestations==0.0.19", &PYPI_REPO);
    no_scratch_path(&text);
    vouch_snapshot!(text, @r"
    success: false
    exit_code: 1
    ----- stdout -----
    NO EVIDENCE  pypi_attestations-0.0.19-py3-none-any.whl  no provenance: the index lists no provenance for it, and http://127.0.0.1:[PORT]/integrity/pypi-attestations/0.0.19/pypi_attestations-0.0.19-py3-none-any.whl/provenance answered 404; not downloaded
    verified     pypi_attestations-0.0.19.tar.gz  https://github.com/trailofbits/pypi-attestations refs/tags/v0.0.19 08802efe1f8e5fec4ad842d6b8ce97656092ee72 https://github.com/trailofbits/pypi-attestations/actions/runs/12169989787/attempts/1 (https://docs.pypi.org/attestations/publish/v1)

    ----- stderr -----
    note: index page http://127.0.0.1:[PORT]/simple/pypi-attestations/: simple API 1.3
    1 of 2 files verified
    ");

    // Only the file with provenance: exit 0, and the policy is held as for a directory.
    let good = FakePypi::builder("pypi-attestations")
        .file(good_sdist())
        .start();
    let r = audit_pypi(&good, "pypi-attestations==0.0.19", &PYPI_REPO);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = audit_pypi(
        &good,
        "pypi-attestations==0.0.19",
        &["--repo", "cupy/cupy", "--json"],
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_eq!(pypi_rows(&r), [row(PYPI_SDIST, "failed", "policy")]);
}

/// Bytes that differ from the sha256 the index publishes are refused, whatever provenance
/// says, and never reach the verifier; the other files are still audited.
#[test]
fn issue18_audit_pypi_refuses_a_tampered_file() {
    let mut bytes = std::fs::read(fixture(PYPI_SDIST)).unwrap();
    let last = bytes.len() - 1;
    bytes[last] ^= 1;
    let index = FakePypi::builder("pypi-attestations")
        .file(good_sdist().tampered(bytes))
        .file(PypiFile::new(PYPI_WHEEL, "0.0.19", b"wheel bytes".to_vec()))
        .start();
    let r = audit_pypi(
        &index,
        "pypi-attestations==0.0.19",
        &[&PYPI_REPO[..], &["--json"]].concat(),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    no_scratch_path(&r);
    assert_eq!(
        pypi_rows(&r),
        [
            row(PYPI_WHEEL, "no-evidence", ""),
            row(PYPI_SDIST, "failed", "digest"),
        ]
    );
    let reason = r.json()[1]["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.starts_with("digest check failed: the bytes from http://127.0.0.1:")
            && reason.ends_with(
                "but the index publishes sha256:9bb1add04b1b4e182be6b0b80931593f7a291eb49d69b4fd728a5d4cbcdc4bd3"
            ),
        "{reason}"
    );
}

/// A real provenance served for another file fails: its subject is the sdist, not this file.
#[test]
fn issue18_audit_pypi_fails_provenance_of_another_file() {
    let index = FakePypi::builder("pypi-attestations")
        .file(
            PypiFile::new(PYPI_WHEEL, "0.0.19", b"wheel bytes".to_vec())
                .with_provenance(pypi_provenance()),
        )
        .start();
    let r = audit_pypi(
        &index,
        "pypi-attestations==0.0.19",
        &[&PYPI_REPO[..], &["--json"]].concat(),
    );
    assert_eq!(r.code, 1, "{}", r.stderr);
    no_scratch_path(&r);
    assert_eq!(pypi_rows(&r), [row(PYPI_WHEEL, "failed", "digest")]);
    let reason = r.json()[0]["reason"].as_str().unwrap().to_owned();
    assert!(
        reason.starts_with(&format!("{PYPI_WHEEL}.provenance: digest check failed:"))
            && reason.contains("does not match any subject"),
        "{reason}"
    );
}

/// A mirror on the simple API 1.1 without the integrity API: every file is "no evidence", and
/// the row and a note say why.
#[test]
fn issue18_audit_pypi_explains_an_index_without_provenance() {
    let index = FakePypi::builder("pypi-attestations")
        .api_version("1.1")
        .without_integrity_api()
        .file(good_sdist())
        .start();
    vouch_snapshot!(audit_pypi(&index, "pypi-attestations==0.0.19", &PYPI_REPO), @r"
    success: false
    exit_code: 1
    ----- stdout -----
    NO EVIDENCE  pypi_attestations-0.0.19.tar.gz  no provenance: the index (API 1.1) publishes no provenance, and http://127.0.0.1:[PORT]/integrity/pypi-attestations/0.0.19/pypi_attestations-0.0.19.tar.gz/provenance answered 404; not downloaded

    ----- stderr -----
    note: index page http://127.0.0.1:[PORT]/simple/pypi-attestations/: simple API 1.1
    note: the index (API 1.1) lists no provenance URLs (API 1.3 added them): asking http://127.0.0.1:[PORT]/integrity/pypi-attestations/0.0.19/FILE/provenance for each file
    0 of 1 files verified
    ");
    assert!(
        index
            .requests()
            .iter()
            .all(|q| !q.target.starts_with("/files/"))
    );
}

/// Wrong requests are usage errors (exit 2) that say what was wrong, before any download.
#[test]
fn issue18_audit_pypi_usage_errors() {
    let index = FakePypi::builder("pypi-attestations")
        .file(good_sdist())
        .start();
    let cases = [
        (
            "unknown version",
            audit_pypi(&index, "pypi-attestations==9.9.9", &[]),
        ),
        (
            "unknown project",
            audit_pypi(&index, "no-such-project==1.0", &[]),
        ),
        (
            "not NAME==VERSION",
            audit_pypi(&index, "pypi-attestations>=0.0.19", &[]),
        ),
        (
            "plain http off loopback",
            run(vouch().args([
                "audit",
                "--pypi",
                "pypi-attestations==0.0.19",
                "--index-url",
                "http://pypi.example/simple/",
            ])),
        ),
        (
            "with paths",
            run(vouch().args(["audit", "--pypi", "pypi-attestations==0.0.19", "."])),
        ),
        (
            "--index-url alone",
            run(vouch().args(["audit", "--index-url", "https://pypi.org/simple/"])),
        ),
    ];
    for (label, r) in &cases {
        assert_eq!(r.code, 2, "{label}: {}", r.stderr);
    }
    insta::assert_snapshot!(snapshot_cases(cases, &[]), @r#"
    ===== "unknown version"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: pypi-attestations 9.9.9: the index page http://127.0.0.1:[PORT]/simple/pypi-attestations/ lists no wheel or sdist of that version; its versions: 0.0.19

    ===== "unknown project"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: no-such-project is not on the index (GET http://127.0.0.1:[PORT]/simple/no-such-project/ answered 404)

    ===== "not NAME==VERSION"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: invalid value 'pypi-attestations>=0.0.19' for '--pypi <NAME==VERSION>': "pypi-attestations>=0.0.19" is not NAME==VERSION (for example cupy-cuda13x==14.2.0)

    For more information, try '--help'.

    ===== "plain http off loopback"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: index URL "http://pypi.example/simple/": plain http is refused off loopback: the file list and digests must come over https

    ===== "with paths"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: the argument '--pypi <NAME==VERSION>' cannot be used with '[PATHS]...'

    Usage: vouch audit --pypi <NAME==VERSION> [PATHS]...

    For more information, try '--help'.

    ===== "--index-url alone"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: the following required arguments were not provided:
      --pypi <NAME==VERSION>
      <PATHS>...

    Usage: vouch audit --pypi <NAME==VERSION> --index-url <URL> <PATHS>...

    For more information, try '--help'.
    "#);
}
