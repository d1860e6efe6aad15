//! Issue 18: GitHub's attestation store. `attest --record-github` records in the project's fake
//! GitHub; the consumer (`install`, `fetch`, `verify`) finds evidence by digest there, with no
//! name involved, and verifies every stored attestation, reporting the ones it ignores. The
//! client is also driven directly against both API versions (inline `bundle`, and
//! `bundle_url` only).

use std::path::{Path, PathBuf};

use serde_json::Value;
use vouch_testgh::FakeGithub;

use crate::common::*;
use crate::fetch::{HEAD, REPO, TOKEN, World, claims, rand_suffix};

/// A token file holding [`TOKEN`], consumed by the command it is given to.
fn token_file(w: &World) -> PathBuf {
    let p = w.dir.path().join(format!("gh-token-{}", rand_suffix()));
    std::fs::write(&p, TOKEN).unwrap();
    p
}

fn assert_no_secret(r: &Run) {
    for text in [&r.stdout, &r.stderr] {
        assert!(!text.contains(TOKEN), "the GitHub token leaked:\n{text}");
        assert!(
            !text.contains("blob-signature-secret"),
            "a blob URL's signature leaked:\n{text}"
        );
    }
}

/// `attest FILE --record-github` as the push build's run of vouch-build.yml (run 500), plus
/// `env` overrides; the recorded store is `gh`'s.
fn attest_recording(
    w: &World,
    gh: &FakeGithub,
    file: &Path,
    bundle: &Path,
    env: &[(&str, &str)],
) -> Run {
    let token = token_file(w);
    let token_arg = token.to_str().unwrap().to_owned();
    let r = attest_keyless(
        &w.sigstore,
        &claims("push", "vouch-build.yml", 500),
        file,
        bundle,
        None,
        env,
        &[
            "--record-github",
            "--api-url",
            &gh.url,
            "--token-file",
            &token_arg,
            "--json",
        ],
    );
    assert!(!token.exists(), "the token file is consumed");
    assert_no_secret(&r);
    r
}

fn sha256_of(path: &Path) -> String {
    format!(
        "sha256:{}",
        vouch_core::Sha256Digest::of(&std::fs::read(path).unwrap()).hex()
    )
}

#[test]
fn attest_records_the_bundle_and_refuses_what_github_would_file_wrongly() {
    let w = World::new();
    let gh = w.github();
    let wheel = w.dir.path().join("w-1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"wheel bytes").unwrap();
    let bundle = w.dir.path().join("w.sigstore.json");
    let r = attest_recording(&w, &gh, &wheel, &bundle, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let recorded = gh.attestations();
    assert_eq!(recorded.len(), 1);
    assert_eq!(recorded[0].repo, REPO);
    assert_eq!(recorded[0].digests, vec![sha256_of(&wheel)]);
    // The body is the bundle as written, member for member.
    let on_disk: Value = serde_json::from_str(&std::fs::read_to_string(&bundle).unwrap()).unwrap();
    assert_eq!(recorded[0].bundle, on_disk);
    let doc = r.json();
    assert_eq!(doc["github_attestation"]["id"], 1);
    assert_eq!(
        doc["github_attestation"]["gh_verify"],
        "gh attestation verify w-1.0-py3-none-any.whl --repo cupy/cupy --signer-workflow github.com/cupy/cupy/.github/workflows/vouch-build.yml"
    );

    // The run says it is another repository's than the certificate: GitHub would file the
    // evidence under the wrong repository. Refused before anything is written or sent.
    let other = w.dir.path().join("other.sigstore.json");
    let r = attest_recording(
        &w,
        &gh,
        &wheel,
        &other,
        &[
            ("GITHUB_REPOSITORY", "cupy/other"),
            (
                "GITHUB_WORKFLOW_REF",
                "cupy/other/.github/workflows/vouch-build.yml@refs/heads/main",
            ),
        ],
    );
    assert_eq!(r.code, 16, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("certificate source repository (OID .1.12) of the bundle to record"),
        "{}",
        r.stderr
    );
    assert!(!other.exists(), "no bundle written");
    assert_eq!(gh.attestations().len(), 1, "nothing recorded");

    // A key-signed bundle, or no token: usage errors, before any signing.
    let key = w.dir.path().join("k.pem");
    let r = run(vouch().arg("keygen").arg("--out").arg(&key));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let token = token_file(&w);
    let r = run(vouch()
        .arg("attest")
        .arg(&wheel)
        .arg("--out")
        .arg(w.dir.path().join("k.sigstore.json"))
        .arg(format!("--signer=key:{}", key.display()))
        .args([
            "--repo",
            REPO,
            "--sha",
            HEAD,
            "--record-github",
            "--api-url",
            &gh.url,
        ])
        .arg("--token-file")
        .arg(&token));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("take certificates, not keys"),
        "{}",
        r.stderr
    );
    let r = run(vouch()
        .arg("attest")
        .arg(&wheel)
        .arg("--out")
        .arg(w.dir.path().join("k.sigstore.json"))
        .arg(format!("--signer=key:{}", key.display()))
        .args(["--repo", REPO, "--sha", HEAD, "--record-github"])
        .env_remove("GH_TOKEN_FILE"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert_eq!(gh.attestations().len(), 1);
    assert_eq!(gh.unauthorized(), 0, "every call carried the token");
}

/// `verify FILE --github-attestations cupy/cupy` against the store at `api_url`, JSON out.
fn verify_by_digest(w: &World, wheel: &Path, api_url: &str) -> Run {
    let token = token_file(w);
    run(vouch()
        .arg("verify")
        .arg(wheel)
        .args(["--github-attestations", REPO, "--api-url", api_url])
        .arg("--token-file")
        .arg(&token)
        .arg("--trust-root")
        .arg(&w.root)
        .args(["--repo", REPO, "--json"]))
}

/// The push build's claims, but of another repository: a decoy's signer.
fn evil_claims() -> vouch_testsig::GithubClaims {
    let mut evil = claims("push", "vouch-build.yml", 500);
    evil.repository = "evil/cupy".into();
    evil.workflow_ref = "evil/cupy/.github/workflows/vouch-build.yml@refs/heads/main".into();
    evil.job_workflow_ref = evil.workflow_ref.clone();
    evil
}

/// Signs `wheel` as `claims` describe and records the bundle in `cupy/cupy`'s store directly,
/// as anyone with write access to the repository could.
fn record_decoy(w: &World, gh: &FakeGithub, wheel: &Path, c: &vouch_testsig::GithubClaims) {
    let bundle = w
        .dir
        .path()
        .join(format!("decoy-{}.sigstore.json", rand_suffix()));
    let r = attest_keyless(&w.sigstore, c, wheel, &bundle, None, &[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let json: Value = serde_json::from_str(&std::fs::read_to_string(&bundle).unwrap()).unwrap();
    gh.record_attestation(REPO, json);
}

#[test]
fn install_finds_evidence_by_digest_without_the_bundle_or_the_name() {
    let w = World::new();
    let gh = w.github();
    let wheel = w.sample_wheel();
    // Two decoys first in the store's answer: the same wheel signed for another repository,
    // and by another workflow of this one.
    let evil = evil_claims();
    record_decoy(&w, &gh, &wheel, &evil);
    record_decoy(&w, &gh, &wheel, &claims("push", "release.yml", 500));
    // The build's own attestation, recorded by the build.
    let bundle = w.dir.path().join("build.sigstore.json");
    let r = attest_recording(&w, &gh, &wheel, &bundle, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(gh.attestations().len(), 3);

    // The artifact holds the wheel alone, under a name nobody asks for.
    let art = format!("vouch-sample-py3.11-linux-64-{HEAD}");
    w.publish("renamed-by-someone", 500, std::slice::from_ref(&wheel));
    let target = w.dir.path().join("site");
    let install = |extra: &[&str]| {
        let token = token_file(&w);
        let r = run(vouch()
            .arg("install")
            .args(["--repo", REPO, "--event", "push", "--sha", HEAD])
            .args([
                "--artifact-name",
                &art,
                "--api-url",
                &gh.url,
                "--wait-for-run",
                "0",
            ])
            .arg("--token-file")
            .arg(&token)
            .arg("--trust-root")
            .arg(&w.root)
            .arg("--python")
            .arg(venv_python())
            .args(extra)
            .arg("--json")
            .arg("--")
            .arg("--target")
            .arg(&target)
            .arg("-q"));
        assert_no_secret(&r);
        assert!(!gh.blob_saw_auth());
        r
    };
    // Without the store, the name is all there is: nothing found, nothing installed.
    let r = install(&[]);
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert!(!target.exists());

    let r = install(&["--github-attestations", REPO]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    let store = doc["fetch"]["attestation_store"].as_array().unwrap();
    let verdicts: Vec<(bool, &str)> = store
        .iter()
        .map(|a| (a["accepted"] == true, a["kind"].as_str().unwrap_or("")))
        .collect();
    assert_eq!(
        verdicts,
        vec![(false, "policy"), (false, "policy"), (true, "")],
        "{store:#?}"
    );
    let reasons: Vec<&str> = store.iter().filter_map(|a| a["reason"].as_str()).collect();
    assert!(reasons[0].contains("evil/cupy"), "{reasons:?}");
    assert!(reasons[1].contains("release.yml"), "{reasons:?}");
    let out = std::process::Command::new(venv_python())
        .env("PYTHONPATH", &target)
        .args(["-c", "import vouch_sample; print(vouch_sample.greeting())"])
        .output()
        .unwrap();
    assert_eq!(
        String::from_utf8_lossy(&out.stdout).trim(),
        "hello from vouch-sample"
    );

    // Under its own name but without its bundle: the store alone supplies the evidence.
    let named = w.dir.path().join("named");
    w.publish(&art, 500, std::slice::from_ref(&wheel));
    let token = token_file(&w);
    let r = run(vouch()
        .arg("fetch")
        .args(["--repo", REPO, "--event", "push", "--sha", HEAD])
        .args(["--artifact-name", &art, "--api-url", &gh.url])
        .args([
            "--github-attestations",
            REPO,
            "--wait-for-run",
            "0",
            "--json",
        ])
        .arg("--token-file")
        .arg(&token)
        .arg("--trust-root")
        .arg(&w.root)
        .arg("--out")
        .arg(&named));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["artifact_name"], art.as_str());
    assert!(named.join(wheel.file_name().unwrap()).is_file());
    assert!(
        named
            .join(format!(
                "{}.sigstore.json",
                wheel.file_name().unwrap().to_str().unwrap()
            ))
            .is_file(),
        "the evidence used is written next to the wheel"
    );

    // Found by run, an artifact of another distribution is not the one asked for, whatever the
    // store says about its wheel.
    let target2 = w.dir.path().join("site2");
    let token = token_file(&w);
    let r = run(vouch()
        .arg("fetch")
        .args(["--repo", REPO, "--event", "push", "--sha", HEAD])
        .args([
            "--artifact-name",
            &format!("other-dist-py3.11-linux-64-{HEAD}"),
            "--api-url",
            &gh.url,
            "--github-attestations",
            REPO,
            "--wait-for-run",
            "0",
        ])
        .arg("--token-file")
        .arg(&token)
        .arg("--trust-root")
        .arg(&w.root)
        .arg("--out")
        .arg(&target2));
    assert_eq!(r.code, 30, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("is not a wheel of other-dist-py3.11-linux-64"),
        "{}",
        r.stderr
    );
    crate::fetch::assert_nothing_written(&target2);

    // `verify` looks the same digest up and reports the same verdicts.
    let r = verify_by_digest(&w, &wheel, &gh.url);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["verified"], true);
    assert_eq!(doc["attestation_store"].as_array().unwrap().len(), 3);
    // Only decoys left: the first failure's kind decides, every reason is given.
    let decoys_only = FakeGithub::start(w.store.clone(), TOKEN);
    record_decoy(&w, &decoys_only, &wheel, &evil);
    let r = verify_by_digest(&w, &wheel, &decoys_only.url);
    assert_eq!(r.code, 16, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["verified"], false);
    // The success report's checks: the one that failed is false, the rest not established.
    assert_eq!(doc["checks"]["identity_policy"], false, "{doc}");
    assert_eq!(doc["checks"]["signature"], Value::Null, "{doc}");
    assert!(
        doc["message"]
            .as_str()
            .unwrap()
            .starts_with("none of the 1 attestation(s) for sha256:"),
        "{doc}"
    );
    // Nothing recorded for a digest: no evidence.
    let empty = FakeGithub::start(w.store.clone(), TOKEN);
    let r = verify_by_digest(&w, &wheel, &empty.url);
    assert_eq!(r.code, 10, "{}", r.stderr);
    assert!(
        r.json()["message"]
            .as_str()
            .unwrap()
            .starts_with("no evidence"),
        "{}",
        r.stdout
    );
}

#[test]
fn the_client_reads_both_api_versions_pages_and_bulk_listings() {
    let w = World::new();
    let gh = w.github();
    let wheel = w.dir.path().join("w-1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"wheel bytes").unwrap();
    let bundle = w.dir.path().join("w.sigstore.json");
    for _ in 0..3 {
        std::fs::remove_file(&bundle).ok();
        let r = attest_recording(&w, &gh, &wheel, &bundle, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let digest = sha256_of(&wheel);
    gh.faults
        .page_size
        .store(2, std::sync::atomic::Ordering::Relaxed);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let client = |version: &'static str| {
        vouch_github::GithubClient::new(&gh.url, Some(TOKEN.to_owned().into()))
            .unwrap()
            .with_api_version(version)
    };
    let recorded: Vec<Value> = gh.attestations().into_iter().map(|a| a.bundle).collect();
    for (version, origin) in [
        (
            vouch_github::API_VERSION,
            vouch_github::BundleOrigin::Inline,
        ),
        (
            vouch_github::API_VERSION_NO_INLINE_BUNDLE,
            vouch_github::BundleOrigin::BundleUrl,
        ),
    ] {
        let got = rt
            .block_on(client(version).attestations(REPO, &digest, None))
            .unwrap();
        // Three entries over two pages, each bundle exactly the one recorded.
        assert_eq!(got.len(), 3, "{version}");
        for (a, want) in got.iter().zip(&recorded) {
            assert_eq!(a.origin, Some(origin), "{version}");
            assert_eq!(a.bundle.as_ref().unwrap(), want, "{version}");
            assert_eq!(a.initiator.as_deref(), Some("user"));
        }
    }
    assert!(
        !gh.blob_saw_auth(),
        "blob URLs are fetched without the token"
    );
    // Expired blob URLs: each entry says why it has no bundle; the listing itself stands.
    gh.faults
        .blobs_expired
        .store(true, std::sync::atomic::Ordering::Relaxed);
    let got = rt
        .block_on(
            client(vouch_github::API_VERSION_NO_INLINE_BUNDLE).attestations(REPO, &digest, None),
        )
        .unwrap();
    let why = got[0].bundle.as_ref().unwrap_err();
    assert!(
        why.contains("HTTP 403") && !why.contains("blob-signature-secret"),
        "{why}"
    );
    // Another repository's store, another predicate type: nothing.
    let none = rt
        .block_on(client(vouch_github::API_VERSION).attestations("cupy/other", &digest, None))
        .unwrap();
    assert!(none.is_empty());
    let none = rt
        .block_on(client(vouch_github::API_VERSION).attestations(
            REPO,
            &digest,
            Some("https://vouch.build/pr-build/v1"),
        ))
        .unwrap();
    assert!(none.is_empty());

    // The bulk listing: one request for several digests; a user-owned repository's listing is
    // under `users`.
    let unknown = format!("sha256:{}", "0".repeat(64));
    for user in [false, true] {
        gh.faults
            .owner_is_user
            .store(user, std::sync::atomic::Ordering::Relaxed);
        let (_, bulks_before) = gh.attestation_lookups();
        let got = rt
            .block_on(client(vouch_github::API_VERSION).attestations_bulk(
                "cupy",
                &[digest.clone(), unknown.clone()],
                None,
            ))
            .unwrap();
        assert_eq!(got.len(), 2);
        assert_eq!((got[0].0.as_str(), got[0].1.len()), (digest.as_str(), 3));
        assert_eq!((got[1].0.as_str(), got[1].1.len()), (unknown.as_str(), 0));
        assert_eq!(gh.attestation_lookups().1 - bulks_before, 1, "user {user}");
    }
    // A digest that is not sha256 hex never reaches the API.
    let before = gh.api_calls();
    assert!(
        rt.block_on(client(vouch_github::API_VERSION).attestations(REPO, "sha256:../../x", None))
            .is_err()
    );
    assert_eq!(gh.api_calls(), before);
}

/// Every `path:type` in `v` (arrays as `[]`), for comparing layouts rather than values.
fn shape(v: &Value, path: &str, out: &mut std::collections::BTreeSet<String>) {
    match v {
        Value::Object(m) => m
            .iter()
            .for_each(|(k, x)| shape(x, &format!("{path}/{k}"), out)),
        Value::Array(a) => a.iter().for_each(|x| shape(x, &format!("{path}[]"), out)),
        Value::String(_) => drop(out.insert(format!("{path}:string"))),
        Value::Number(_) => drop(out.insert(format!("{path}:number"))),
        Value::Bool(_) => drop(out.insert(format!("{path}:bool"))),
        Value::Null => drop(out.insert(format!("{path}:null"))),
    }
}

fn statement_of(bundle: &Value) -> Value {
    use base64::Engine as _;
    let raw = base64::engine::general_purpose::STANDARD
        .decode(bundle["dsseEnvelope"]["payload"].as_str().unwrap())
        .unwrap();
    serde_json::from_slice(&raw).unwrap()
}

/// What `gh attestation verify --repo O/R --signer-workflow W` reads of a bundle, vouch's
/// recorded bundle has, in the layout of GitHub's own: the real bundle of cli/cli's release
/// workflow (tests/fixtures/sigstore/SOURCES.md). gh itself cannot run here (Debian's gh 2.23
/// has no `attestation` command), so the layout is compared member by member, and vouch's
/// verifier accepts the cli/cli bundle elsewhere (provenance tests).
#[test]
fn recorded_bundles_have_githubs_layout_and_predicate() {
    let w = World::new();
    let gh = w.github();
    let wheel = w.dir.path().join("w-1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"wheel bytes").unwrap();
    let bundle = w.dir.path().join("w.sigstore.json");
    // Twice: in a log of one entry the inclusion proof has no hashes to show.
    for _ in 0..2 {
        std::fs::remove_file(&bundle).ok();
        let r = attest_recording(&w, &gh, &wheel, &bundle, &[]);
        assert_eq!(r.code, 0, "{}", r.stderr);
    }
    let ours = gh.attestations().remove(1).bundle;
    let theirs: Value = serde_json::from_str(
        &std::fs::read_to_string(
            repo_root().join("tests/fixtures/sigstore/cli-gh-2.50.0-windows-arm64.sigstore.json"),
        )
        .unwrap(),
    )
    .unwrap();
    let (mut a, mut b) = (Default::default(), Default::default());
    shape(&ours, "", &mut a);
    shape(&theirs, "", &mut b);
    assert_eq!(a, b, "bundle layout");
    assert_eq!(ours["mediaType"], theirs["mediaType"]);
    assert_eq!(
        ours["dsseEnvelope"]["payloadType"],
        "application/vnd.in-toto+json"
    );
    assert_eq!(
        ours["verificationMaterial"]["tlogEntries"][0]["kindVersion"],
        theirs["verificationMaterial"]["tlogEntries"][0]["kindVersion"]
    );

    let (st, gh_st) = (statement_of(&ours), statement_of(&theirs));
    assert_eq!(st["_type"], gh_st["_type"]);
    assert_eq!(st["predicateType"], "https://slsa.dev/provenance/v1");
    let (mut a, mut b) = (Default::default(), Default::default());
    shape(&st, "", &mut a);
    shape(&gh_st, "", &mut b);
    // vouch adds its own claims (SLSA allows internal parameters; gh reads none of them) and,
    // as GitHub's provenance does since 2024-06, the runner environment.
    let extra: Vec<&String> = a.difference(&b).collect();
    assert!(
        extra.iter().all(|p| p.starts_with(
            "/predicate/buildDefinition/internalParameters/vouch/"
        ) || p.as_str()
            == "/predicate/buildDefinition/internalParameters/github/runner_environment:string"),
        "{extra:#?}"
    );
    let missing: Vec<&String> = b.difference(&a).collect();
    assert!(missing.is_empty(), "{missing:#?}");
    // The builder is the signing job's workflow, as in GitHub's own provenance; the build
    // type is GitHub's workflow build type.
    assert_eq!(
        st["predicate"]["runDetails"]["builder"]["id"],
        "https://github.com/cupy/cupy/.github/workflows/vouch-build.yml@refs/heads/main"
    );
    assert_eq!(
        st["predicate"]["buildDefinition"]["buildType"],
        "https://actions.github.io/buildtypes/workflow/v1"
    );
}

/// `audit --github-attestations`: files without evidence next to them are looked up by digest
/// in one bulk request; a good stored attestation verifies its file, a decoy alone fails its
/// file, and a file with nothing recorded stays "no evidence".
#[test]
fn audit_finds_evidence_by_digest_in_one_bulk_request() {
    let w = World::new();
    let gh = w.github();
    let dir = w.dir.path().join("release");
    std::fs::create_dir_all(&dir).unwrap();
    let file = |name: &str, bytes: &[u8]| {
        let p = dir.join(name);
        std::fs::write(&p, bytes).unwrap();
        p
    };
    let good = file("good-1.0-py3-none-any.whl", b"good");
    let _bare = file("bare-1.0-py3-none-any.whl", b"bare");
    let decoyed = file("decoyed-1.0-py3-none-any.whl", b"decoyed");
    // The store's repository must exist for the lookup (publish writes repository.json).
    w.publish("anything", 500, std::slice::from_ref(&good));
    let scratch = w.dir.path().join("b.sigstore.json");
    let r = attest_recording(&w, &gh, &good, &scratch, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let evil = evil_claims();
    record_decoy(&w, &gh, &decoyed, &evil);
    let token = token_file(&w);
    let r = run(vouch()
        .arg("audit")
        .arg(&dir)
        .args(["--github-attestations", REPO, "--api-url", &gh.url])
        .arg("--token-file")
        .arg(&token)
        .arg("--trust-root")
        .arg(&w.root)
        .args(["--repo", REPO, "--json"]));
    assert_eq!(r.code, 1, "{}", r.stderr);
    assert_no_secret(&r);
    let rows: Vec<(String, String)> = r
        .json()
        .as_array()
        .unwrap()
        .iter()
        .map(|row| {
            let file = row["file"].as_str().unwrap();
            (
                file.rsplit('/').next().unwrap().to_owned(),
                row["verdict"].as_str().unwrap().to_owned(),
            )
        })
        .collect();
    assert_eq!(
        rows,
        [
            ("bare-1.0-py3-none-any.whl".into(), "no-evidence".into()),
            ("decoyed-1.0-py3-none-any.whl".into(), "failed".into()),
            ("good-1.0-py3-none-any.whl".into(), "verified".into()),
        ]
    );
    assert!(
        r.stderr.contains("ignored stored attestation #0"),
        "{}",
        r.stderr
    );
    assert_eq!(
        gh.attestation_lookups(),
        (0, 1),
        "one bulk request, no per-digest listing"
    );
}

/// gh's `--owner`: alone, `verify` looks the digest up in the owner's stores (the bulk
/// listing) and holds every candidate to the owner; beside a bundle it is a policy claim; a
/// `--repo` of another owner is a usage error.
#[test]
fn verify_owner_looks_up_the_owners_stores_and_holds_the_owner() {
    let w = World::new();
    let gh = w.github();
    let wheel = w.dir.path().join("owned-1.0-py3-none-any.whl");
    std::fs::write(&wheel, b"owned").unwrap();
    w.publish("anything", 500, std::slice::from_ref(&wheel));
    let bundle = w.dir.path().join("owned.sigstore.json");
    let r = attest_recording(&w, &gh, &wheel, &bundle, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    // Another owner's signer, recorded in the same store: found, reported, ignored.
    record_decoy(&w, &gh, &wheel, &evil_claims());
    let verify = |extra: &[&str]| {
        let token = token_file(&w);
        let r = run(vouch()
            .arg("verify")
            .arg(&wheel)
            .args(["--api-url", &gh.url])
            .arg("--token-file")
            .arg(&token)
            .arg("--trust-root")
            .arg(&w.root)
            .args(extra));
        assert_no_secret(&r);
        r
    };
    let r = verify(&["--owner", "cupy", "--format", "json"]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let doc = r.json();
    assert_eq!(doc["verified"], true, "{doc}");
    let store = doc["attestation_store"].as_array().unwrap();
    assert_eq!(store.len(), 2, "{doc}");
    assert!(
        store.iter().any(|s| s["accepted"] == false
            && s["reason"]
                .as_str()
                .unwrap()
                .contains("source repository owner")),
        "the decoy is reported with the claim it failed: {doc}"
    );
    assert!(
        r.stderr.contains("only --owner cupy is required"),
        "{}",
        r.stderr
    );
    assert_eq!(gh.attestation_lookups().1, 1, "one bulk request");

    // Beside a bundle, --owner is a claim only: no request is made.
    let before = gh.attestation_lookups();
    let r = verify(&["-b", bundle.to_str().unwrap(), "--owner", "evil"]);
    assert_eq!(r.code, 16, "a policy failure: {}", r.stderr);
    assert!(
        r.stderr.contains("source repository owner") && r.stderr.contains("github.com/evil/*"),
        "{}",
        r.stderr
    );
    assert_eq!(gh.attestation_lookups(), before);

    let r = verify(&["--owner", "evil", "--repo", REPO]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("is not one of --owner evil's"),
        "{}",
        r.stderr
    );
    let r = verify(&["--owner", "cupy", "--offline"]);
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("--offline means no network"),
        "{}",
        r.stderr
    );
}

/// gh itself accepts what vouch signs: `gh attestation verify --bundle` (gh 2.102, offline,
/// with the local Sigstore's root as `--custom-trusted-root`) passes a push build's bundle with
/// the repository, owner and signer workflow vouch's generated workflows give, and refuses it
/// for another repository, another signer workflow or a changed file.
#[test]
fn gh_attestation_verify_accepts_vouch_bundles() {
    let w = World::new();
    let wheel = w
        .dir
        .path()
        .join("cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    std::fs::write(&wheel, b"a wheel gh must accept").unwrap();
    let bundle = w.dir.path().join("cupy.sigstore.json");
    let c = claims("push", "vouch-build.yml", 500);
    let r = attest_keyless(&w.sigstore, &c, &wheel, &bundle, None, &[], &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    let gh = |file: &Path, extra: &[&str]| gh_attestation_verify(&w.root, file, &bundle, extra);
    let signer = format!("{REPO}/.github/workflows/vouch-build.yml");
    let r = gh(
        &wheel,
        &[
            "--repo",
            REPO,
            "--signer-workflow",
            &signer,
            "--deny-self-hosted-runners",
            "--format",
            "json",
        ],
    );
    assert_eq!(
        r.code, 0,
        "gh refused vouch's bundle:\n{}\n{}",
        r.stdout, r.stderr
    );
    let doc: Value = serde_json::from_str(&r.stdout).unwrap();
    let result = &doc[0]["verificationResult"];
    assert_eq!(
        result["statement"]["predicateType"], "https://slsa.dev/provenance/v1",
        "{doc}"
    );
    assert_eq!(
        result["signature"]["certificate"]["sourceRepositoryURI"],
        format!("https://github.com/{REPO}"),
        "{doc}"
    );
    let r = gh(&wheel, &["--owner", "cupy"]);
    assert_eq!(r.code, 0, "{}", r.stderr);

    for (file, extra, why) in [
        (&wheel, vec!["--repo", "evil/cupy"], "another repository"),
        (
            &wheel,
            vec![
                "--repo",
                REPO,
                "--signer-workflow",
                "cupy/cupy/.github/workflows/other.yml",
            ],
            "another signer workflow",
        ),
    ] {
        let r = gh(file, &extra);
        assert_ne!(r.code, 0, "gh accepted {why}: {}", r.stdout);
    }
    let changed = w.dir.path().join("changed.whl");
    std::fs::write(&changed, b"a wheel gh must refuse").unwrap();
    let r = gh(&changed, &["--repo", REPO]);
    assert_ne!(r.code, 0, "gh accepted a changed file: {}", r.stdout);
}

/// A bundle GitHub's store would index under `digest` with predicate `predicate_type`: a
/// statement with that subject, unsigned. The store files what it is given; only the consumer
/// verifies, so an unsigned flood costs an attacker nothing but the writes.
fn unsigned_bundle(digest: &str, predicate_type: &str) -> Value {
    use base64::Engine as _;
    let hex = digest.strip_prefix("sha256:").unwrap();
    let statement = serde_json::json!({
        "_type": "https://in-toto.io/Statement/v1",
        "subject": [{"name": "w.whl", "digest": {"sha256": hex}}],
        "predicateType": predicate_type,
        "predicate": {},
    });
    serde_json::json!({
        "mediaType": "application/vnd.dev.sigstore.bundle.v0.3+json",
        "dsseEnvelope": {
            "payload": base64::engine::general_purpose::STANDARD.encode(statement.to_string()),
            "payloadType": "application/vnd.in-toto+json",
            "signatures": [],
        },
    })
}

/// A push build's wheel whose artifact carries no bundle, and whose attestation the build
/// recorded in the store after `flood` (recorded first, so listed ahead of it); pages hold
/// one entry, so the old page limit (20 pages) is 20 entries. Then `vouch fetch
/// --github-attestations` with the artifact's own name.
fn fetch_behind_a_flood(flood: impl FnOnce(&World, &FakeGithub, &Path)) -> (Run, FakeGithub) {
    let w = World::new();
    let gh = w.github();
    let wheel = w
        .dir
        .path()
        .join("cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl");
    std::fs::write(&wheel, b"the release wheel").unwrap();
    flood(&w, &gh, &wheel);
    let bundle = w.dir.path().join("build.sigstore.json");
    let r = attest_recording(&w, &gh, &wheel, &bundle, &[]);
    assert_eq!(r.code, 0, "{}", r.stderr);
    gh.faults
        .page_size
        .store(1, std::sync::atomic::Ordering::Relaxed);
    let art = format!("cupy-cuda13x-py3.12-linux-64-{HEAD}");
    w.publish(&art, 500, std::slice::from_ref(&wheel));
    let token = token_file(&w);
    let out = w.dir.path().join("out");
    let r = run(vouch()
        .arg("fetch")
        .args(["--repo", REPO, "--event", "push", "--sha", HEAD])
        .args(["--artifact-name", &art, "--api-url", &gh.url])
        .args(["--github-attestations", REPO, "--wait-for-run", "0"])
        .arg("--token-file")
        .arg(&token)
        .arg("--trust-root")
        .arg(&w.root)
        .arg("--out")
        .arg(&out)
        .arg("--json"));
    assert_no_secret(&r);
    if r.code != 0 {
        crate::fetch::assert_nothing_written(&out);
    }
    (r, gh)
}

/// Issue 31 (2c): the signer records a pr-build attestation for every wheel it signs, and a
/// PR build of released code reproduces the release wheel's digest. Far more of them than the
/// listing's page limit, ahead of the release's own SLSA provenance, must not hide it: the
/// look-up asks the store for the policy's predicate type only.
#[test]
fn issue31_a_flood_of_pr_build_attestations_does_not_hide_the_release_provenance() {
    let (r, gh) = fetch_behind_a_flood(|_, gh, wheel| {
        let flood = unsigned_bundle(&sha256_of(wheel), "https://vouch.build/pr-build/v1");
        for _ in 0..25 {
            gh.record_attestation(REPO, flood.clone());
        }
    });
    assert_eq!(r.code, 0, "{}", r.stderr);
    let store = r.json()["attestation_store"].clone();
    assert_eq!(store.as_array().unwrap().len(), 1, "{store:#}");
    assert_eq!(store[0]["accepted"], true);
    assert_eq!(gh.attestation_lookups().0, 1, "one page, the filtered one");
}

/// Issue 31 (2c): entries of the right type that fail the policy are read page after page
/// until one passes; past the budget the look-up stops, and says which budget it spent.
#[test]
fn issue31_store_look_up_pages_until_a_pass_within_its_budget() {
    let decoys = |n: usize| {
        move |w: &World, gh: &FakeGithub, wheel: &Path| {
            let evil = w.dir.path().join("evil.sigstore.json");
            let r = attest_keyless(&w.sigstore, &evil_claims(), wheel, &evil, None, &[], &[]);
            assert_eq!(r.code, 0, "{}", r.stderr);
            let json: Value =
                serde_json::from_str(&std::fs::read_to_string(&evil).unwrap()).unwrap();
            for _ in 0..n {
                gh.record_attestation(REPO, json.clone());
            }
        }
    };
    // Behind five: found on the sixth page.
    let (r, gh) = fetch_behind_a_flood(decoys(5));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let store = r.json()["attestation_store"].clone();
    let accepted: Vec<bool> = store
        .as_array()
        .unwrap()
        .iter()
        .map(|a| a["accepted"] == true)
        .collect();
    assert_eq!(accepted, [false, false, false, false, false, true]);
    assert_eq!(gh.attestation_lookups().0, 6);

    // Behind more than the budget: refused, naming the budget, after exactly that many pages.
    let budget = vouch_fetch::STORE_PAGE_BUDGET;
    let (r, gh) = fetch_behind_a_flood(decoys(budget + 5));
    assert_eq!(gh.attestation_lookups().0, budget as u64);
    let message = r.json()["message"].as_str().unwrap().to_owned();
    let message = message.replace(&sha256_of_bytes(b"the release wheel"), "[DIGEST]");
    insta::assert_snapshot!(message, @r#"no artifact named "cupy-cuda13x-py3.12-linux-64-1111111111111111111111111111111111111111" passed: artifact 1001 (run 500): cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl: no bundle in the artifact, and none of the first 20 attestation(s) of type https://slsa.dev/provenance/v1 that cupy/cupy's store holds for [DIGEST] passed; the lookup stopped at its budget of 20 pages, and the store holds more (a flood of attestations for this digest?): attestation #0 (repository id 968015): policy check failed: source repository (OID .1.12): expected "https://github.com/cupy/cupy", found "https://github.com/evil/cupy"; attestation #1 (repository id 968015): policy check failed: source repository (OID .1.12): expected "https://github.com/cupy/cupy", found "https://github.com/evil/cupy"; attestation #2 (repository id 968015): policy check failed: source repository (OID .1.12): expected "https://github.com/cupy/cupy", found "https://github.com/evil/cupy"; and 17 more"#);
}

fn sha256_of_bytes(data: &[u8]) -> String {
    format!("sha256:{}", vouch_core::Sha256Digest::of(data).hex())
}
