//! Issue 3: signing and verification. Real production bundles made by others, tampered one
//! claim at a time; keyless round trips against the local Sigstore instance; key round trips.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::vouch_snapshot;
use base64::Engine as _;
use base64::engine::general_purpose::STANDARD;
use serde_json::Value;
use vouch_testsig::{GithubClaims, LocalSigstore};

fn fixture(name: &str) -> PathBuf {
    repo_root().join("tests/fixtures/sigstore").join(name)
}

/// cli/cli's `attest-build-provenance` bundle for gh 2.50.0 windows arm64 (GitHub REST API
/// description, attestation example).
const CLI_BUNDLE: &str = "cli-gh-2.50.0-windows-arm64.sigstore.json";
const CLI_DIGEST: &str = "sha256:8aad120b416386b4269ef62c8fdebcad31a70847297817a149daf927edc85548";
const CLI_POLICY: &[&str] = &[
    "--repo",
    "cli/cli",
    "--signer-workflow",
    ".github/workflows/deployment.yml",
    "--ref",
    "refs/heads/trunk",
];

/// `vouch verify --digest CLI_DIGEST --bundle BUNDLE`, for the caller to add the policy.
fn verify_cli_digest(bundle: &Path) -> std::process::Command {
    let mut cmd = vouch();
    cmd.args(["verify", "--digest", CLI_DIGEST, "--bundle"])
        .arg(bundle);
    cmd
}

/// Verifies `bundle` (a path) for `digest` with the cli/cli policy plus `extra` flags.
fn verify_cli(bundle: &Path, extra: &[&str]) -> Run {
    run(verify_cli_digest(bundle)
        .args(CLI_POLICY)
        .args(extra)
        .arg("--json"))
}

fn kind_of(r: &Run) -> String {
    r.json()["kind"].as_str().unwrap_or_default().to_owned()
}

/// Asserts that `r` failed with exit `code` and JSON kind `kind` (`context` leads the failure
/// text); returns the JSON message.
#[track_caller]
fn assert_failure(r: &Run, code: i32, kind: &str, context: &str) -> String {
    assert_eq!(
        (r.code, kind_of(r).as_str()),
        (code, kind),
        "{context}{}",
        r.stderr
    );
    r.json()["message"].as_str().unwrap_or_default().to_owned()
}

/// Writes a modified copy of a fixture bundle and returns its path.
fn tampered(dir: &Path, name: &str, edit: impl FnOnce(&mut Value)) -> PathBuf {
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(fixture(name)).unwrap()).unwrap();
    edit(&mut v);
    let out = dir.join(format!("tampered-{name}"));
    std::fs::write(&out, serde_json::to_string_pretty(&v).unwrap()).unwrap();
    out
}

fn flip_b64(s: &str, at: usize) -> String {
    let mut raw = STANDARD.decode(s).unwrap();
    let i = at.min(raw.len() - 1);
    raw[i] ^= 0x01;
    STANDARD.encode(raw)
}

#[test]
fn github_attest_build_provenance_bundle_verifies_offline() {
    let r = verify_cli(
        &fixture(CLI_BUNDLE),
        &[
            "--offline",
            "--event",
            "workflow_dispatch",
            "--sha",
            "faef2ddd81b0736748413a7c646cd0bfc26c00a0",
            "--run-id",
            "9289075752",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v = &r.json()["results"][0];
    assert_eq!(v["checks"]["certificate_chain"], true);
    assert_eq!(v["checks"]["sct"], true);
    assert_eq!(v["checks"]["transparency_log"], true);
    assert_eq!(
        v["signer"]["run"],
        "https://github.com/cli/cli/actions/runs/9289075752/attempts/1"
    );
    assert_eq!(v["integrated_time"], 1716998992);
}

#[test]
fn pep740_attestation_from_pypi_verifies_offline() {
    // pypi-attestations 0.0.19's sdist, as published on PyPI by its release workflow.
    let r = run(vouch()
        .args([
            "verify",
            "--digest",
            "sha256:9bb1add04b1b4e182be6b0b80931593f7a291eb49d69b4fd728a5d4cbcdc4bd3",
            "--attestation",
        ])
        .arg(fixture(
            "pypi_attestations-0.0.19.tar.gz.publish.attestation",
        ))
        .args([
            "--repo",
            "trailofbits/pypi-attestations",
            "--signer-workflow",
            ".github/workflows/release.yml",
            "--ref",
            "refs/tags/v*",
            "--predicate-type",
            "pep740",
            "--json",
        ]));
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(r.json()["results"][0]["format"], "pep740-attestation");
    // `--attestation` implies PyPI's predicate type (issue 18); asked to be SLSA provenance,
    // the same attestation must not pass.
    let verify = |extra: &[&str]| {
        run(vouch()
            .args([
                "verify",
                "--digest",
                "sha256:9bb1add04b1b4e182be6b0b80931593f7a291eb49d69b4fd728a5d4cbcdc4bd3",
                "--attestation",
            ])
            .arg(fixture(
                "pypi_attestations-0.0.19.tar.gz.publish.attestation",
            ))
            .args(["--repo", "trailofbits/pypi-attestations", "--json"])
            .args(extra))
    };
    let r = verify(&[]);
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert_eq!(
        r.json()["results"][0]["statement"]["predicate_type"],
        "https://docs.pypi.org/attestations/publish/v1"
    );
    assert_failure(&verify(&["--predicate-type", "slsa"]), 14, "statement", "");
}

#[test]
fn pypi_provenance_object_verifies() {
    let dir = tempdir();
    let att: Value = serde_json::from_str(
        &std::fs::read_to_string(fixture(
            "pypi_attestations-0.0.19.tar.gz.publish.attestation",
        ))
        .unwrap(),
    )
    .unwrap();
    let provenance = serde_json::json!({
        "version": 1,
        "attestation_bundles": [{
            "publisher": {"kind": "GitHub", "repository": "trailofbits/pypi-attestations", "workflow": "release.yml", "environment": null},
            "attestations": [att]
        }]
    });
    let p = dir.path().join("provenance.json");
    std::fs::write(&p, provenance.to_string()).unwrap();
    let r = run(vouch()
        .args([
            "verify",
            "--digest",
            "sha256:9bb1add04b1b4e182be6b0b80931593f7a291eb49d69b4fd728a5d4cbcdc4bd3",
            "--provenance",
        ])
        .arg(&p)
        .args([
            "--repo",
            "trailofbits/pypi-attestations",
            "--predicate-type",
            "pep740",
            "--json",
        ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["results"][0]["format"], "pypi-provenance");
}

#[test]
fn conda_attestation_verifies_a_real_file() {
    vouch_snapshot!(vouch()
        .arg("verify")
        .arg(fixture("signed-package-2.1.0-hb0f4dca_0.conda"))
        .arg("--bundle")
        .arg(fixture("conda-attestation.sigstore.json"))
        .args([
            "--repo",
            "prefix-dev/sigstore-example",
            "--predicate-type",
            "https://schemas.conda.org/attestations-publish-1.schema.json",
        ]), @r#"
            success: true
            exit_code: 0
            ----- stdout -----
            verified: [REPO]/tests/fixtures/sigstore/signed-package-2.1.0-hb0f4dca_0.conda (sha256:[SHA256])
              signer:     https://github.com/prefix-dev/sigstore-example/.github/workflows/action.yaml@refs/heads/main
              issuer:     https://token.actions.githubusercontent.com
              repository: https://github.com/prefix-dev/sigstore-example  ref: refs/heads/main  commit: 193b5bd7d3985809503963ae400594ea16df31cf
              workflow:   https://github.com/prefix-dev/sigstore-example/.github/workflows/action.yaml@refs/heads/main  event: push  runner: github-hosted
              run:        https://github.com/prefix-dev/sigstore-example/actions/runs/17377272645/attempts/1
              predicate:  https://schemas.conda.org/attestations-publish-1.schema.json
              checks:     certificate chain ok, SCT ok, transparency log ok, signature ok, statement ok, digest ok, identity policy ok

            ----- stderr -----
        "#);
}

/// One way to break the cli/cli bundle, or to ask the wrong question about it, and the one
/// failure `verify --json` must report for it.
struct Tamper {
    name: &'static str,
    edit: fn(&mut Value),
    digest: &'static str,
    /// The policy flags; the cli/cli policy unless the case is about the policy.
    flags: &'static [&'static str],
    code: i32,
    kind: &'static str,
    message: &'static str,
}

impl Tamper {
    const fn new(name: &'static str, edit: fn(&mut Value)) -> Self {
        Tamper {
            name,
            edit,
            digest: CLI_DIGEST,
            flags: CLI_POLICY,
            code: 0,
            kind: "",
            message: "",
        }
    }

    const fn digest(self, digest: &'static str) -> Self {
        Tamper { digest, ..self }
    }

    const fn flags(self, flags: &'static [&'static str]) -> Self {
        Tamper { flags, ..self }
    }

    const fn fails(self, code: i32, kind: &'static str, message: &'static str) -> Self {
        Tamper {
            code,
            kind,
            message,
            ..self
        }
    }
}

fn untouched(_: &mut Value) {}

/// One byte inside the statement JSON, keeping it valid JSON ("trunk" -> "trunl").
fn payload_byte(v: &mut Value) {
    let p = v["dsseEnvelope"]["payload"].as_str().unwrap().to_owned();
    let mut raw = STANDARD.decode(p).unwrap();
    let text = String::from_utf8(raw.clone()).unwrap();
    let at = text.find("refs/heads/trunk").unwrap() + "refs/heads/trun".len();
    raw[at] = b'l';
    v["dsseEnvelope"]["payload"] = STANDARD.encode(raw).into();
}

fn signature_bit(v: &mut Value) {
    let sig = &mut v["dsseEnvelope"]["signatures"][0]["sig"];
    *sig = flip_b64(sig.as_str().unwrap(), 40).into();
}

fn inclusion_proof_hash(v: &mut Value) {
    let h = &mut v["verificationMaterial"]["tlogEntries"][0]["inclusionProof"]["hashes"][0];
    *h = flip_b64(h.as_str().unwrap(), 5).into();
}

fn signed_entry_timestamp(v: &mut Value) {
    let s = &mut v["verificationMaterial"]["tlogEntries"][0]["inclusionPromise"]["signedEntryTimestamp"];
    *s = flip_b64(s.as_str().unwrap(), 20).into();
}

fn log_index(v: &mut Value) {
    let i = &mut v["verificationMaterial"]["tlogEntries"][0]["logIndex"];
    let n: u64 = i.as_str().unwrap().parse().unwrap();
    *i = (n + 1).to_string().into();
}

fn integrated_time(v: &mut Value) {
    let t = &mut v["verificationMaterial"]["tlogEntries"][0]["integratedTime"];
    let n: i64 = t.as_str().unwrap().parse().unwrap();
    *t = (n - 60).to_string().into();
}

fn unknown_media_type(v: &mut Value) {
    v["mediaType"] = "application/vnd.dev.sigstore.bundle.v0.9+json".into();
}

fn not_a_bundle(v: &mut Value) {
    *v = serde_json::json!({"hello": 1});
}

const TAMPERS: &[Tamper] = &[
    Tamper::new("changed payload byte", payload_byte).fails(13, "signature", r#"invalid signature: DSSE signature verification failed: Verification error: ECDSA_P256_SHA256 signature invalid"#),
    Tamper::new("changed signature", signature_bit).fails(13, "signature", r#"invalid signature: DSSE signature verification failed: Verification error: ECDSA_P256_SHA256 signature invalid"#),
    Tamper::new("another artifact's digest", untouched)
        .digest("sha256:abababababababababababababababababababababababababababababababab")
        .fails(15, "digest", r#"artifact mismatch: artifact hash does not match any subject in attestation"#),
    Tamper::new("corrupted inclusion proof", inclusion_proof_hash).fails(
        12,
        "transparency-log",
        r#"invalid inclusion proof: inclusion proof verification failed: root hash mismatch: expected [SHA256], computed [SHA256]"#,
    ),
    Tamper::new("corrupted signed entry timestamp", signed_entry_timestamp).fails(
        12,
        "transparency-log",
        r#"invalid inclusion promise: SET verification failed: Verification error: ECDSA_P256_SHA256 signature invalid"#,
    ),
    Tamper::new("changed log index", log_index).fails(12, "transparency-log", r#"invalid inclusion promise: SET verification failed: Verification error: ECDSA_P256_SHA256 signature invalid"#),
    Tamper::new("changed integrated time", integrated_time).fails(12, "transparency-log", r#"invalid inclusion promise: SET verification failed: Verification error: ECDSA_P256_SHA256 signature invalid"#),
    Tamper::new("staging root for a production bundle", untouched)
        .flags(&[
            "--repo",
            "cli/cli",
            "--signer-workflow",
            ".github/workflows/deployment.yml",
            "--ref",
            "refs/heads/trunk",
            "--staging",
        ])
        .fails(12, "transparency-log", r#"invalid inclusion promise: No log key valid at integrated time 2024-05-29T16:09:52Z for log ID wNI9atQGlz+VWfO6LRygH4QUfY/8W4RFwiT5i5WRgB0="#),
    Tamper::new("unknown bundle media type", unknown_media_type).fails(10, "bundle", r#"[DIR0]/tampered-8.json is not a valid Sigstore bundle"#),
    Tamper::new("JSON that is no bundle", not_a_bundle).fails(10, "bundle", r#"[DIR0]/tampered-9.json is neither a Sigstore bundle (mediaType), a PEP 740 attestation (envelope + verification_material) nor a PyPI provenance object (attestation_bundles)"#),
    Tamper::new("wrong repository", untouched)
        .flags(&["--repo", "cupy/cupy"])
        .fails(
            16,
            "policy",
            r#"source repository (OID .1.12): expected "https://github.com/cupy/cupy", found "https://github.com/cli/cli""#,
        ),
    Tamper::new("wrong build workflow", untouched)
        .flags(&[
            "--repo",
            "cli/cli",
            "--signer-workflow",
            ".github/workflows/deployment.yml",
            "--ref",
            "refs/heads/trunk",
            "--build-workflow",
            ".github/workflows/ci.yml",
        ])
        .fails(
            16,
            "policy",
            r#"build config workflow (OID .1.18): expected "https://github.com/cli/cli/.github/workflows/ci.yml", found "https://github.com/cli/cli/.github/workflows/deployment.yml@refs/heads/trunk""#,
        ),
    Tamper::new("ref pattern that does not match", untouched)
        .flags(&["--repo", "cli/cli", "--ref", "refs/tags/v*"])
        .fails(
            16,
            "policy",
            r#"source ref (OID .1.14): expected "refs/tags/v*", found "refs/heads/trunk""#,
        ),
    // Issue 12: an exact `--ref` (no `*`) must equal the certificate's ref: not another ref,
    // not a prefix.
    Tamper::new("exact ref of another branch", untouched)
        .flags(&["--repo", "cli/cli", "--ref", "refs/heads/main"])
        .fails(
            16,
            "policy",
            r#"source ref (OID .1.14): expected "refs/heads/main", found "refs/heads/trunk""#,
        ),
    Tamper::new("exact ref that is a prefix", untouched)
        .flags(&["--repo", "cli/cli", "--ref", "refs/heads/trun"])
        .fails(
            16,
            "policy",
            r#"source ref (OID .1.14): expected "refs/heads/trun", found "refs/heads/trunk""#,
        ),
];

/// Every case in `TAMPERS` runs, and the failure names each case that went wrong.
#[test]
fn tampered_bundles_and_wrong_policies_are_rejected() {
    let dir = tempdir();
    let mut wrong = Vec::new();
    for (i, case) in TAMPERS.iter().enumerate() {
        let bundle = tampered(dir.path(), CLI_BUNDLE, case.edit);
        let bundle = bundle.with_file_name(format!("tampered-{i}.json"));
        std::fs::rename(dir.path().join(format!("tampered-{CLI_BUNDLE}")), &bundle).unwrap();
        let r = run(vouch()
            .args(["verify", "--digest", case.digest, "--bundle"])
            .arg(&bundle)
            .args(case.flags)
            .arg("--json"));
        let message = r.json()["message"].as_str().unwrap_or_default().to_owned();
        let message = filter(&message, &[dir.path()]);
        let got = (r.code, kind_of(&r), message);
        let expected = (case.code, case.kind.to_owned(), case.message.to_owned());
        if got != expected {
            wrong.push(format!(
                "{}: expected {expected:?}\n  got {got:?}\n  stderr: {}",
                case.name, r.stderr
            ));
        }
    }
    assert!(
        wrong.is_empty(),
        "{} of {} cases went wrong:\n{}",
        wrong.len(),
        TAMPERS.len(),
        wrong.join("\n")
    );
}

/// sigstore-conformance's beacon bundle: its certificate is real (the beacon workflow), but the
/// SLSA statement inside claims another repository. Every cryptographic check passes, and the
/// claim check still refuses it.
#[test]
fn real_bundle_whose_statement_disagrees_with_its_certificate() {
    let verify = |workflow_ref: &str| {
        run(vouch()
            .args(["verify", "--digest", "sha256:a0cfc71271d6e278e57cd332ff957c3f7043fdda354c4cbb190a30d56efa01bf", "--bundle"])
            .arg(fixture("gh-happy-path.sigstore.json"))
            .args(["--repo", "sigstore-conformance/extremely-dangerous-public-oidc-beacon"])
            .arg("--signer-workflow")
            .arg(format!("sigstore-conformance/extremely-dangerous-public-oidc-beacon/.github/workflows/extremely-dangerous-oidc-beacon.yml@{workflow_ref}"))
            .arg("--json"))
    };
    let r = verify("refs/heads/main");
    assert_failure(&r, 14, "statement", "");
    insta::assert_snapshot!(r.json()["message"].as_str().unwrap(), @r#"statement claim externalParameters.workflow.repository = "https://github.com/loosebazooka/aa-test" disagrees with the certificate's "https://github.com/sigstore-conformance/extremely-dangerous-public-oidc-beacon""#);
}

#[test]
fn keyless_verification_requires_an_identity() {
    vouch_snapshot!(&mut verify_cli_digest(&fixture(CLI_BUNDLE)), @"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: keyless verification needs an identity: give --repo OWNER/NAME (or `repository` in a --policy file), or at least --owner OWNER
    ");
    // A signer workflow alone is not enough: with a reusable workflow it names another repository.
    vouch_snapshot!(verify_cli_digest(&fixture(CLI_BUNDLE)).args([
        "--signer-workflow",
        "cli/cli/.github/workflows/deployment.yml",
    ]), @"
    success: false
    exit_code: 2
    ----- stdout -----

    ----- stderr -----
    error: keyless verification needs an identity: give --repo OWNER/NAME (or `repository` in a --policy file), or at least --owner OWNER
    ");
}

// ---------------------------------------------------------------- signing round trips

struct Signed {
    _dir: tempfile::TempDir,
    wheel: PathBuf,
    bundle: PathBuf,
    root: PathBuf,
}

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// Signs a small file keyless against the local instance, as a GitHub Actions `pull_request`
/// run of `cupy/cupy` would, with the matching `GITHUB_*` environment.
fn sign_keyless(sigstore: &LocalSigstore, claims: &GithubClaims, extra: &[&str]) -> (Signed, Run) {
    let dir = tempdir();
    let wheel = dir
        .path()
        .join("cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    std::fs::write(&wheel, b"not really a wheel, but bytes to sign").unwrap();
    let bundle = dir.path().join("wheel.sigstore.json");
    let root = dir.path().join("trusted_root.json");
    std::fs::write(&root, sigstore.trusted_root().to_string()).unwrap();
    let event = r#"{"number": 7, "pull_request": {"number": 7, "head": {"sha": "1111111111111111111111111111111111111111"}}}"#;
    let r = attest_keyless(sigstore, claims, &wheel, &bundle, Some(event), &[], extra);
    (
        Signed {
            _dir: dir,
            wheel,
            bundle,
            root,
        },
        r,
    )
}

fn pr_claims() -> GithubClaims {
    let mut c = GithubClaims::push("cupy/cupy", SHA);
    c.event_name = "pull_request".into();
    c.git_ref = "refs/pull/7/merge".into();
    c.workflow_ref = "cupy/cupy/.github/workflows/ci.yml@refs/pull/7/merge".into();
    c.job_workflow_ref = c.workflow_ref.clone();
    c
}

fn verify_signed(s: &Signed, extra: &[&str]) -> Run {
    run(vouch()
        .arg("verify")
        .arg(&s.wheel)
        .arg("--bundle")
        .arg(&s.bundle)
        .arg("--trust-root")
        .arg(&s.root)
        .args(["--repo", "cupy/cupy", "--json"])
        .args(extra))
}

#[test]
fn keyless_round_trip_against_local_sigstore() {
    let sigstore = LocalSigstore::start();
    let claims = pr_claims();
    let (signed, r) = sign_keyless(&sigstore, &claims, &["--cell", "cuda13x-py3.12-linux-64"]);
    assert_eq!(r.code, 0, "attest failed: {}", r.stderr);
    assert_eq!(
        (sigstore.issued_certificates(), sigstore.log_size()),
        (1, 1)
    );

    let r = verify_signed(
        &signed,
        &[
            "--event",
            "pull_request",
            "--pr",
            "7",
            "--cell",
            "cuda13x-py3.12-linux-64",
            "--sha",
            SHA,
            "--run-id",
            "6",
            "--build-workflow",
            ".github/workflows/ci.yml",
        ],
    );
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    let v = &r.json()["results"][0];
    assert_eq!(v["checks"]["certificate_chain"], true);
    assert_eq!(v["checks"]["transparency_log"], true);
    assert_eq!(
        v["checks"]["sct"], false,
        "the local instance has no CT log"
    );
    assert!(v["notes"][0].as_str().unwrap().contains("SCT not checked"));
    assert_eq!(
        v["statement"]["vouch"]["pr_head_sha"],
        "1111111111111111111111111111111111111111"
    );

    // Production root: the local CA and log are unknown there.
    let r = run(vouch()
        .arg("verify")
        .arg(&signed.wheel)
        .arg("--bundle")
        .arg(&signed.bundle)
        .args(["--repo", "cupy/cupy", "--json"]));
    assert_ne!(r.code, 0);
    // Policy: the statement says PR 7.
    let r = verify_signed(&signed, &["--pr", "8"]);
    assert_failure(&r, 16, "policy", "");
    // Tampered wheel.
    std::fs::write(&signed.wheel, b"not really a wheel, but other bytes").unwrap();
    let r = verify_signed(&signed, &[]);
    assert_failure(&r, 15, "digest", "");
}

#[test]
fn keyless_tampered_bundle_is_rejected() {
    let sigstore = LocalSigstore::start();
    let (signed, r) = sign_keyless(&sigstore, &pr_claims(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let mut v: Value =
        serde_json::from_str(&std::fs::read_to_string(&signed.bundle).unwrap()).unwrap();
    let s = v["dsseEnvelope"]["signatures"][0]["sig"]
        .as_str()
        .unwrap()
        .to_owned();
    v["dsseEnvelope"]["signatures"][0]["sig"] = flip_b64(&s, 30).into();
    std::fs::write(&signed.bundle, v.to_string()).unwrap();
    let r = verify_signed(&signed, &[]);
    assert_failure(&r, 13, "signature", "");
}

/// A statement whose claims disagree with the certificate: the build says run 5, Fulcio's
/// certificate (from the token) says run 6.
#[test]
fn statement_claims_must_agree_with_certificate() {
    let sigstore = LocalSigstore::start();
    let mut claims = pr_claims();
    claims.run_id = "6".into();
    let dir = tempdir();
    // Sign with an environment that lies about the run (5); the token says 6.
    let wheel = dir.path().join("w.whl");
    std::fs::write(&wheel, b"bytes").unwrap();
    let bundle = dir.path().join("b.json");
    let root = dir.path().join("root.json");
    std::fs::write(&root, sigstore.trusted_root().to_string()).unwrap();
    let r = attest_keyless(
        &sigstore,
        &claims,
        &wheel,
        &bundle,
        None,
        &[("GITHUB_RUN_ID", "5")],
        &[],
    );
    let signed = Signed {
        _dir: tempdir(),
        wheel,
        bundle,
        root,
    };
    assert_eq!(r.code, 0, "{}", r.stderr);
    let r = verify_signed(&signed, &[]);
    assert_failure(&r, 14, "statement", "");
    insta::assert_snapshot!(r.json()["message"].as_str().unwrap(), @r#"statement claim runDetails.metadata.invocationId = "https://github.com/cupy/cupy/actions/runs/5/attempts/1" disagrees with the certificate's "https://github.com/cupy/cupy/actions/runs/6/attempts/1""#);
}

#[test]
fn local_fulcio_refuses_bad_tokens() {
    let sigstore = LocalSigstore::start();
    let mut expired = pr_claims();
    expired.expires_in = -10;
    let (_, r) = sign_keyless(&sigstore, &expired, &[]);
    assert_ne!(r.code, 0);
    // attest runs at -vvv here: the trace varies, so `contains`.
    assert!(r.stderr.contains("token expired"), "{}", r.stderr);
    let mut wrong_aud = pr_claims();
    wrong_aud.audience = "not-sigstore".into();
    let (_, r) = sign_keyless(&sigstore, &wrong_aud, &[]);
    assert!(r.stderr.contains("audience"), "{}", r.stderr);
    assert_eq!(sigstore.issued_certificates(), 0);
}

#[test]
fn key_round_trip_and_tamper() {
    let dir = tempdir();
    let (key, pubkey) = keygen(dir.path(), "signing.pem");
    let file = dir.path().join("pkg-1.0-py3-none-any.whl");
    std::fs::write(&file, b"wheel bytes").unwrap();
    let bundle = dir.path().join("b.sigstore.json");
    let r = run(attest_with_key(&file, &bundle, &key)
        .args(["--repo", "me/pkg", "--sha", SHA, "--runner", "self-hosted"])
        .env_remove("GITHUB_ACTIONS"));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let verify = |extra: &[&str]| verify_key(&file, &bundle, &pubkey, extra);
    let r = verify(&["--repo", "me/pkg"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["results"][0]["signed_with"], "public-key");
    assert!(
        r.json()["results"][0]["notes"][0]
            .as_str()
            .unwrap()
            .contains("identity comes only from the statement")
    );

    // Another key.
    let (_, other) = keygen(dir.path(), "other.pem");
    let r = verify_key(&file, &bundle, &other, &[]);
    assert_failure(&r, 13, "signature", "");
    // Tampered payload.
    let mut v: Value = serde_json::from_str(&std::fs::read_to_string(&bundle).unwrap()).unwrap();
    let p = v["dsseEnvelope"]["payload"].as_str().unwrap().to_owned();
    v["dsseEnvelope"]["payload"] = flip_b64(&p, 50).into();
    std::fs::write(&bundle, v.to_string()).unwrap();
    let r = verify(&[]);
    assert_failure(&r, 13, "signature", "");
}

/// A push build's bundle must not pass as a pull request's, whatever the statement claims: the
/// certificate's ref has to be `refs/pull/<N>/merge`.
#[test]
fn pr_policy_requires_the_certificate_ref() {
    let sigstore = LocalSigstore::start();
    let (signed, r) = sign_keyless(&sigstore, &GithubClaims::push("cupy/cupy", SHA), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    vouch_snapshot!(verify_signed(&signed, &["--pr", "7"]), @r#"
    success: false
    exit_code: 16
    ----- stdout -----
    {
      "verified": false,
      "ok": false,
      "exit_code": 16,
      "status": "policy",
      "results": [],
      "checks": {
        "certificate_chain": null,
        "digest": null,
        "identity_policy": false,
        "sct": null,
        "signature": null,
        "statement": null,
        "transparency_log": null
      },
      "kind": "policy",
      "message": "source ref for the pull request (OID .1.14): expected \"refs/pull/7/merge\", found \"refs/heads/main\"",
      "causes": []
    }

    ----- stderr -----
    error: verification of [TEMP]/wheel.sigstore.json failed
      caused by: policy check failed: source ref for the pull request (OID .1.14): expected "refs/pull/7/merge", found "refs/heads/main"
    "#);
}

// ---------------------------------------------------------------- issue 12

/// `verify --run-id` with another run than the certificate's.
#[test]
fn issue12_run_id_must_be_the_certificates_run() {
    let sigstore = LocalSigstore::start();
    let (signed, r) = sign_keyless(&sigstore, &pr_claims(), &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(verify_signed(&signed, &["--run-id", "6"]).code, 0);
    let r = verify_signed(&signed, &["--run-id", "7"]);
    assert_failure(&r, 16, "policy", "");
    insta::assert_snapshot!(r.json()["message"].as_str().unwrap(), @r#"run (OID .1.21): expected "7", found "https://github.com/cupy/cupy/actions/runs/6/attempts/1""#);
}

/// A key-signed bundle and a key, for the key-path tests: (dir, file, bundle, public key).
fn key_signed(extra: &[&str]) -> (tempfile::TempDir, PathBuf, PathBuf, PathBuf) {
    let dir = tempdir();
    let (key, public) = keygen(dir.path(), "signing.pem");
    let file = dir.path().join("pkg-1.0-py3-none-any.whl");
    std::fs::write(&file, b"wheel bytes").unwrap();
    let bundle = dir.path().join("b.sigstore.json");
    let r = run(attest_with_key(&file, &bundle, &key)
        .args([
            "--local",
            "--repo",
            "me/pkg",
            "--sha",
            SHA,
            "--runner",
            "self-hosted",
        ])
        .args(extra));
    assert_eq!(r.code, 0, "{}", r.stderr);
    (dir, file, bundle, public)
}

fn verify_key(file: &Path, bundle: &Path, key: &Path, extra: &[&str]) -> Run {
    run(vouch()
        .arg("verify")
        .arg(file)
        .arg("--bundle")
        .arg(bundle)
        .arg("--key")
        .arg(key)
        .args(["--runner", "self-hosted", "--json"])
        .args(extra))
}

/// On the key-signed path (no log entry, so sigstore never sees the artifact), the statement's
/// subject is the only thing that ties the bundle to the file.
#[test]
fn issue12_key_signed_bundle_for_another_file_is_a_digest_failure() {
    let (dir, file, bundle, key) = key_signed(&[]);
    assert_eq!(verify_key(&file, &bundle, &key, &[]).code, 0);
    let other = dir.path().join("pkg-1.0-py3-none-any-other.whl");
    std::fs::write(&other, b"other wheel bytes").unwrap();
    vouch_snapshot!(verify_key(&other, &bundle, &key, &[]), @r#"
    success: false
    exit_code: 15
    ----- stdout -----
    {
      "verified": false,
      "ok": false,
      "exit_code": 15,
      "status": "digest",
      "results": [],
      "checks": {
        "certificate_chain": null,
        "digest": false,
        "identity_policy": null,
        "sct": null,
        "signature": null,
        "statement": null,
        "transparency_log": null
      },
      "kind": "digest",
      "message": "sha256:[SHA256] is not among the statement's subjects (pkg-1.0-py3-none-any.whl sha256:[SHA256])",
      "causes": []
    }

    ----- stderr -----
    error: verification of [TEMP]/b.sigstore.json failed
      caused by: digest check failed: sha256:[SHA256] is not among the statement's subjects (pkg-1.0-py3-none-any.whl sha256:[SHA256])
    "#);
}

/// The bundle spec: a key-signed envelope's `keyid` equals `verificationMaterial.publicKey.hint`.
#[test]
fn issue12_key_signed_keyid_must_equal_the_hint() {
    let (_dir, file, bundle, key) = key_signed(&[]);
    let v: Value = serde_json::from_str(&std::fs::read_to_string(&bundle).unwrap()).unwrap();
    let hint = v["verificationMaterial"]["publicKey"]["hint"].clone();
    assert_eq!(
        v["dsseEnvelope"]["signatures"][0]["keyid"], hint,
        "vouch writes both, equal"
    );
    for keyid in [Some("another-key"), None] {
        let mut t = v.clone();
        match keyid {
            Some(k) => t["dsseEnvelope"]["signatures"][0]["keyid"] = k.into(),
            None => {
                t["dsseEnvelope"]["signatures"][0]
                    .as_object_mut()
                    .unwrap()
                    .remove("keyid");
            }
        }
        std::fs::write(&bundle, t.to_string()).unwrap();
        let r = verify_key(&file, &bundle, &key, &[]);
        let message = assert_failure(&r, 10, "bundle", &format!("{keyid:?}: "));
        assert!(
            message.contains("is not verificationMaterial.publicKey.hint"),
            "{message}"
        );
    }
}

/// An empty `x509CertificateChain` is a broken bundle, not a key-signed one.
#[test]
fn issue12_empty_certificate_chain_is_not_called_key_signed() {
    let dir = tempdir();
    let b = tampered(dir.path(), CLI_BUNDLE, |v| {
        let vm = v["verificationMaterial"].as_object_mut().unwrap();
        vm.remove("certificate");
        vm.insert(
            "x509CertificateChain".into(),
            serde_json::json!({ "certificates": [] }),
        );
    });
    let key = keygen(dir.path(), "k.pem").1;
    for extra in [&[][..], &["--key", key.to_str().unwrap()][..]] {
        let r = verify_cli(&b, extra);
        let message = assert_failure(&r, 10, "bundle", &format!("{extra:?}: "));
        assert!(
            message.contains("x509CertificateChain holds no certificate")
                && !message.contains("key-signed;")
                && !message.contains("with --key"),
            "{extra:?}: {message}"
        );
    }
}

/// `--json` failures carry what lies under the message, not only "is not a valid Sigstore
/// bundle".
#[test]
fn issue12_json_failure_carries_the_cause_chain() {
    let dir = tempdir();
    let b = tampered(dir.path(), CLI_BUNDLE, |v| {
        v["dsseEnvelope"]["signatures"] = serde_json::json!([]);
    });
    // The parser's reason is among the causes.
    vouch_snapshot!(verify_cli(&b, &[]), @r#"
    success: false
    exit_code: 10
    ----- stdout -----
    {
      "verified": false,
      "ok": false,
      "exit_code": 10,
      "status": "bundle",
      "results": [],
      "checks": {
        "certificate_chain": null,
        "digest": null,
        "identity_policy": null,
        "sct": null,
        "signature": null,
        "statement": null,
        "transparency_log": null
      },
      "kind": "bundle",
      "message": "[TEMP]/tampered-cli-gh-2.50.0-windows-arm64.sigstore.json is not a valid Sigstore bundle",
      "causes": [
        "JSON error: DSSE envelope must contain exactly one signature, found 0 at line 54 column 1"
      ]
    }

    ----- stderr -----
    error: verification of [TEMP]/tampered-cli-gh-2.50.0-windows-arm64.sigstore.json failed
      caused by: bundle check failed: [TEMP]/tampered-cli-gh-2.50.0-windows-arm64.sigstore.json is not a valid Sigstore bundle
      caused by: JSON error: DSSE envelope must contain exactly one signature, found 0 at line 54 column 1
      caused by: DSSE envelope must contain exactly one signature, found 0 at line 54 column 1
    "#);
}

/// Identity claims of a key-signed bundle come from the statement: a mismatch names the
/// statement's field, never a certificate OID it does not have.
#[test]
fn issue12_key_signed_policy_failures_cite_the_statement_not_oids() {
    let (_dir, file, bundle, key) = key_signed(&[]);
    for (flags, field) in [
        (
            vec!["--repo", "other/pkg"],
            "source repository (statement claim externalParameters.workflow.repository)",
        ),
        (
            vec!["--ref", "refs/heads/main"],
            "source ref (statement claim externalParameters.workflow.ref)",
        ),
        (
            vec!["--sha", "1111111111111111111111111111111111111111"],
            "source commit (statement claim resolvedDependencies[0].digest.gitCommit)",
        ),
        (
            vec!["--event", "push"],
            "build trigger (statement claim internalParameters.github.event_name)",
        ),
        (
            vec!["--run-id", "5"],
            "run (statement claim runDetails.metadata.invocationId)",
        ),
    ] {
        let r = verify_key(&file, &bundle, &key, &flags);
        let message = assert_failure(&r, 16, "policy", &format!("{flags:?}: "));
        assert!(
            message.starts_with(field) && !message.contains("OID"),
            "{flags:?}: {message}"
        );
    }
}

#[test]
fn issue12_bad_inputs_are_refused_before_verifying() {
    let (dir, file, bundle, key) = key_signed(&[]);
    // A private key, or not a key at all, as --key.
    let private = dir.path().join("signing.pem");
    vouch_snapshot!(verify_key(&file, &bundle, &private, &[]), @r#"
    success: false
    exit_code: 17
    ----- stdout -----
    {
      "causes": [
        "trust-root check failed: the file holds a private key; give the public key (`vouch keygen` writes it to <key>.pub)"
      ],
      "exit_code": 17,
      "message": "--key \"[TEMP]/signing.pem\"",
      "ok": false,
      "status": "trust-root"
    }

    ----- stderr -----
    error: --key "[TEMP]/signing.pem"
      caused by: trust-root check failed: the file holds a private key; give the public key (`vouch keygen` writes it to <key>.pub)
    "#);
    let junk = dir.path().join("junk.pem");
    std::fs::write(&junk, "not a key").unwrap();
    vouch_snapshot!(verify_key(&file, &bundle, &junk, &[]), @r#"
    success: false
    exit_code: 17
    ----- stdout -----
    {
      "causes": [
        "trust-root check failed: the file is not a PEM public key (`-----BEGIN PUBLIC KEY-----`)",
        "Invalid encoding: failed to parse PEM: malformedframing"
      ],
      "exit_code": 17,
      "message": "--key \"[TEMP]/junk.pem\"",
      "ok": false,
      "status": "trust-root"
    }

    ----- stderr -----
    error: --key "[TEMP]/junk.pem"
      caused by: trust-root check failed: the file is not a PEM public key (`-----BEGIN PUBLIC KEY-----`)
      caused by: Invalid encoding: failed to parse PEM: malformedframing
    "#);
    // A short commit or a malformed event could never match: usage errors.
    for flags in [
        ["--sha", "0123456"],
        ["--event", "Pull Request"],
        ["--run-id", "six"],
    ] {
        let r = verify_key(&file, &bundle, &key, &flags);
        assert_eq!(r.code, 2, "{flags:?}: {}", r.stderr);
    }
    // --issuer with --key: a key-signed bundle has no issuer to hold it against.
    vouch_snapshot!(verify_key(
        &file,
        &bundle,
        &key,
        &["--issuer", "https://token.actions.githubusercontent.com"],
    ), @r#"
    success: false
    exit_code: 2
    ----- stdout -----
    {
      "causes": [],
      "exit_code": 2,
      "message": "--issuer applies to certificates; a bundle verified with --key has none",
      "ok": false,
      "status": "usage"
    }

    ----- stderr -----
    error: --issuer applies to certificates; a bundle verified with --key has none
    "#);
    // Evidence that is a FIFO is refused, not waited on.
    let fifo = dir.path().join("fifo.sigstore.json");
    mkfifo(&fifo);
    let mut cmd = vouch();
    cmd.arg("verify")
        .arg(&file)
        .arg("--bundle")
        .arg(&fifo)
        .arg("--key")
        .arg(&key);
    vouch_snapshot!(run_with_timeout(&mut cmd, std::time::Duration::from_secs(30)), @r#"
        success: false
        exit_code: 6
        ----- stdout -----

        ----- stderr -----
        error: opening "[TEMP]/fifo.sigstore.json"
          caused by: it is a FIFO, not a regular file
    "#);
}

/// `attest` refuses flags it would otherwise ignore: context flags inside GitHub Actions (the
/// context comes from GITHUB_*), keyless-only flags with a key signer.
#[test]
fn issue12_attest_refuses_flags_it_would_ignore() {
    let dir = tempdir();
    let (key, _) = keygen(dir.path(), "k.pem");
    let file = dir.path().join("f.whl");
    std::fs::write(&file, b"x").unwrap();
    let attest = |extra: &[&str], actions: bool| {
        let mut cmd = attest_with_key(&file, dir.path().join("b.json"), &key);
        cmd.args(extra);
        if actions {
            cmd.env("GITHUB_ACTIONS", "true")
                .env("GITHUB_REPOSITORY", "cupy/cupy")
                .env(
                    "GITHUB_WORKFLOW_REF",
                    "cupy/cupy/.github/workflows/ci.yml@refs/heads/main",
                )
                .env("GITHUB_REF", "refs/heads/main")
                .env("GITHUB_SHA", SHA)
                .env("GITHUB_EVENT_NAME", "push");
        } else {
            cmd.env_remove("GITHUB_ACTIONS");
        }
        run(&mut cmd)
    };
    assert_eq!(attest(&[], true).code, 0, "the context from GITHUB_*");
    vouch_snapshot!(attest(&["--repo", "other/repo", "--event", "release"], true), @r#"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: in GitHub Actions the run context comes from GITHUB_* and the event payload, so --repo, --event would be ignored; drop it, or give --local to describe the run with flags only
        ::error title=vouch::in GitHub Actions the run context comes from GITHUB_* and the event payload, so --repo, --event would be ignored; drop it, or give --local to describe the run with flags only
    "#);
    // The event payload says which PR (none, for a push): a flag must not override it.
    vouch_snapshot!(attest(&["--pr", "7"], true), @r#"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: in GitHub Actions the run context comes from GITHUB_* and the event payload, so --pr would be ignored; drop it, or give --local to describe the run with flags only
        ::error title=vouch::in GitHub Actions the run context comes from GITHUB_* and the event payload, so --pr would be ignored; drop it, or give --local to describe the run with flags only
    "#);
    let r = attest(&["--local", "--repo", "other/repo", "--sha", SHA], true);
    assert_eq!(
        r.code, 0,
        "--local: the flags are the context: {}",
        r.stderr
    );
    vouch_snapshot!(attest(
        &["--repo", "a/b", "--sha", SHA, "--fulcio-url", "https://f"],
        false,
    ), @r#"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: --fulcio-url only apply to keyless signing (--signer sigstore), not to --signer key:[TEMP]/k.pem
    "#);
}

/// The OIDC token file is consumed before anything else can fail.
#[test]
fn issue12_oidc_token_file_is_deleted_even_on_a_usage_error() {
    let dir = tempdir();
    let token = dir.path().join("token.jwt");
    for extra in [
        &["--signer", "bogus"][..],
        &["--signer", "key:/nonexistent"][..],
    ] {
        std::fs::write(&token, "a.b.c").unwrap();
        let r = run(vouch()
            .arg("attest")
            .arg(dir.path().join("missing.whl"))
            .arg("--out")
            .arg(dir.path().join("b.json"))
            .arg("--oidc-token-file")
            .arg(&token)
            .args(extra)
            .env_remove("GITHUB_ACTIONS"));
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert!(!token.exists(), "{extra:?}: the token file is gone");
    }
    // Even a clap-level error (a missing --out) comes after the token file was consumed.
    std::fs::write(&token, "a.b.c").unwrap();
    let r = run(vouch()
        .arg("attest")
        .arg(dir.path().join("f.whl"))
        .arg("--oidc-token-file")
        .arg(&token));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!token.exists(), "the token file is gone");
}

/// `attest --pr --pr-head-sha --merge-sha` signs PR provenance with a key outside Actions, and
/// the flags are checked.
#[test]
fn issue12_attest_signs_pr_provenance_with_a_key_outside_actions() {
    const HEAD: &str = "1111111111111111111111111111111111111111";
    // PR 7 with head commit HEAD, then `rest`.
    let pr7 = |rest: &[&'static str]| [&["--pr", "7", "--pr-head-sha", HEAD][..], rest].concat();
    let (_dir, file, bundle, key) =
        key_signed(&pr7(&["--merge-sha", SHA, "--ref", "refs/pull/7/merge"]));
    let r = verify_key(
        &file,
        &bundle,
        &key,
        &["--pr", "7", "--event", "pull_request"],
    );
    assert_eq!(r.code, 0, "{}", r.stderr);
    let vouch_claims = &r.json()["results"][0]["statement"]["vouch"];
    assert_eq!(vouch_claims["pr_number"], 7);
    assert_eq!(vouch_claims["pr_head_sha"], HEAD);
    assert_eq!(vouch_claims["merge_sha"], SHA);
    let r = verify_key(&file, &bundle, &key, &["--pr", "8"]);
    assert_eq!((r.code, kind_of(&r).as_str()), (16, "policy"));

    let dir = tempdir();
    let (k, _) = keygen(dir.path(), "k.pem");
    let f = dir.path().join("f.whl");
    std::fs::write(&f, b"x").unwrap();
    let attest = |extra: &[&str]| {
        run(attest_with_key(&f, dir.path().join("b.json"), &k)
            .args(["--repo", "me/pkg"])
            .args(extra)
            .env_remove("GITHUB_ACTIONS"))
    };
    for (extra, expected) in [
        (
            vec!["--pr", "7", "--pr-head-sha", "abc", "--sha", SHA],
            "--pr-head-sha \"abc\" is not a full commit SHA",
        ),
        (pr7(&["--merge-sha", HEAD, "--sha", SHA]), "differ"),
        (vec!["--pr", "7", "--sha", SHA], "--pr-head-sha"),
        (
            pr7(&["--sha", SHA, "--event", "push"]),
            "claims a pull request build",
        ),
        (
            pr7(&["--sha", SHA, "--ref", "refs/pull/8/merge"]),
            "another pull request's ref",
        ),
        (vec!["--pr-head-sha", HEAD, "--sha", SHA], "--pr"),
        (
            vec!["--sha", "0123"],
            "--sha \"0123\" is not a full commit SHA",
        ),
    ] {
        let r = attest(&extra);
        assert_eq!(r.code, 2, "{extra:?}: {}", r.stderr);
        assert!(r.stderr.contains(expected), "{extra:?}: {}", r.stderr);
    }
    // --merge-sha alone gives the commit.
    let r = attest(&pr7(&["--merge-sha", SHA]));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// `verify --digest --policy FILE`: `[[project]]` entries are chosen by file name, and a digest
/// has none, so they would be read and ignored.
#[test]
fn issue12_digest_with_project_policy_is_refused() {
    let dir = tempdir();
    let policy = dir.path().join("p.toml");
    std::fs::write(
        &policy,
        "[[project]]\nname = \"gh\"\nrepository = \"cli/cli\"\nref = \"refs/heads/main\"\n",
    )
    .unwrap();
    vouch_snapshot!(verify_cli_digest(&fixture(CLI_BUNDLE))
        .args(["--repo", "cli/cli", "--policy"])
        .arg(&policy), @r#"
            success: false
            exit_code: 2
            ----- stdout -----

            ----- stderr -----
            error: --policy "[TEMP]/p.toml" has [[project]] entries, but --digest gives no file name to choose one by; verify the file itself, or give the identity as flags
        "#);
    // Defaults only: they apply to a digest as to a file.
    std::fs::write(
        &policy,
        "repository = \"cli/cli\"\nref = \"refs/heads/trunk\"\n",
    )
    .unwrap();
    let r = run(verify_cli_digest(&fixture(CLI_BUNDLE))
        .arg("--policy")
        .arg(&policy));
    assert_eq!(r.code, 0, "{}", r.stderr);
}

/// Issue 12, item 14: the errors that used to fall through to 1 ("different"/"not verified")
/// each exit with a documented code of their own.
#[test]
fn issue12_errors_once_unclassified_exit_with_their_own_codes() {
    let dir = tempdir();
    let file = dir.path().join("f.txt");
    std::fs::write(&file, b"x").unwrap();
    let json_key = dir.path().join("key.json");
    std::fs::write(&json_key, b"{\"kty\": \"EC\"}").unwrap();
    let sha = "a".repeat(40);
    let attest = |signer: &str| {
        run(vouch()
            .args([
                "attest", "--signer", signer, "--repo", "me/pkg", "--sha", &sha, "--out",
            ])
            .arg(dir.path().join("b.json"))
            .arg(&file)
            .env_remove("GITHUB_ACTIONS")
            .env_remove("ACTIONS_ID_TOKEN_REQUEST_URL")
            .env_remove("ACTIONS_ID_TOKEN_REQUEST_TOKEN"))
    };
    let key = attest(&format!("key:{}", json_key.display()));
    assert_eq!(key.code, 3, "a JSON file is not a PEM key: {}", key.stderr);
    assert!(key.stderr.contains("PKCS#8"), "{}", key.stderr);
    let keyless = attest("sigstore");
    assert_eq!(
        keyless.code, 40,
        "no OIDC token is a signing failure: {}",
        keyless.stderr
    );
    for (args, code) in [
        (vec!["cache", "stats", "--url", "junk"], 2),
        (
            vec![
                "cache",
                "check",
                "--store",
                "ftp://cache.example/x",
                "--event",
                "push",
                "--ref",
                "refs/heads/main",
            ],
            2,
        ),
    ] {
        let r = run(vouch().args(&args));
        assert_eq!(r.code, code, "{args:?}: {}", r.stderr);
    }
    assert!(
        !dir.path().join("b.json").exists(),
        "nothing written on failure"
    );
}
