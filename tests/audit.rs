//! Issue 8: auditing a release directory offline, policy files, and rebuilds.

mod common;

use std::path::{Path, PathBuf};

use common::*;

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/sigstore").join(name)
}

/// Signs `files` with `key` as a local build of `repo` (one bundle per file).
fn sign(key: &Path, repo: &str, files: &[&Path], epoch: u64) {
    for f in files {
        let r = run(vouch()
            .arg("attest")
            .arg(f)
            .arg("--out")
            .arg(format!("{}.sigstore.json", f.display()))
            .arg("--signer")
            .arg(format!("key:{}", key.display()))
            .args([
                "--local",
                "--repo",
                repo,
                "--sha",
                SHA,
                "--runner",
                "github-hosted",
                "--source-date-epoch",
                &epoch.to_string(),
            ]));
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
    let r = run(vouch()
        .arg("audit")
        .arg(dir.path())
        .arg("--policy")
        .arg(&policy));
    assert_eq!(r.code, 3, "{}", r.stderr);
    assert!(r.stderr.contains("unknown field `repo`"), "{}", r.stderr);
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
