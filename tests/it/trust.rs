//! `vouch trust update/status` and the TUF-refreshed root every verifying command uses, against
//! a signed TUF repository served on loopback whose `trusted_root.json` is a local Sigstore's.

use std::path::{Path, PathBuf};

use vouch_testsig::tuf::{IN_THE_PAST, TufServer};
use vouch_testsig::{GithubClaims, LocalSigstore};

use crate::common::{Run, attest_keyless, run, tempdir, vouch};

const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

/// A bundle the local Sigstore signed, a TUF repository serving its root, and a cache of our
/// own (the suite's shared one must not see a refreshed root).
struct Setup {
    dir: tempfile::TempDir,
    wheel: PathBuf,
    bundle: PathBuf,
    tuf_root: PathBuf,
    server: TufServer,
    _sigstore: LocalSigstore,
}

impl Setup {
    fn new() -> Setup {
        let sigstore = LocalSigstore::start();
        let dir = tempdir();
        let wheel = dir
            .path()
            .join("cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl");
        std::fs::write(&wheel, b"bytes to sign").unwrap();
        let bundle = dir.path().join("wheel.sigstore.json");
        let mut claims = GithubClaims::push("cupy/cupy", SHA);
        claims.event_name = "pull_request".into();
        claims.git_ref = "refs/pull/7/merge".into();
        claims.workflow_ref = "cupy/cupy/.github/workflows/ci.yml@refs/pull/7/merge".into();
        claims.job_workflow_ref = claims.workflow_ref.clone();
        let event = r#"{"number": 7, "pull_request": {"number": 7, "head": {"sha": "1111111111111111111111111111111111111111"}}}"#;
        let r = attest_keyless(&sigstore, &claims, &wheel, &bundle, Some(event), &[], &[]);
        assert_eq!(r.code, 0, "attest: {}", r.stderr);
        let server = TufServer::start(&sigstore.trusted_root());
        let tuf_root = dir.path().join("1.root.json");
        std::fs::write(&tuf_root, server.initial_root()).unwrap();
        Setup {
            dir,
            wheel,
            bundle,
            tuf_root,
            server,
            _sigstore: sigstore,
        }
    }

    fn cache(&self) -> PathBuf {
        self.dir.path().join("cache")
    }

    /// `vouch` with this setup's cache and TUF repository.
    fn vouch(&self) -> std::process::Command {
        let mut cmd = vouch();
        cmd.env("VOUCH_CACHE_DIR", self.cache())
            .env("VOUCH_TUF_URL", &self.server.url)
            .env("VOUCH_TUF_ROOT", &self.tuf_root);
        cmd
    }

    fn update(&self) -> Run {
        run(self.vouch().args(["trust", "update", "--json"]))
    }

    fn verify(&self, extra: &[&str]) -> Run {
        run(self
            .vouch()
            .arg("verify")
            .arg(&self.wheel)
            .arg("--bundle")
            .arg(&self.bundle)
            .args(["--repo", "cupy/cupy", "--json"])
            .args(extra))
    }

    /// The repository's directory in the cache: the one directory under `trust-root/`.
    fn repo_dir(&self) -> PathBuf {
        let mut dirs = std::fs::read_dir(self.cache().join("trust-root"))
            .unwrap()
            .map(|e| e.unwrap().path());
        let d = dirs.next().unwrap();
        assert!(dirs.next().is_none());
        d
    }
}

#[track_caller]
fn assert_verified_from_cache(r: &Run) {
    assert_eq!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("trust root: Sigstore root from the TUF cache"),
        "{}",
        r.stderr
    );
}

#[test]
fn update_makes_the_refreshed_root_verify() {
    let s = Setup::new();
    // Before: the embedded production root does not know the local CA.
    let r = s.verify(&[]);
    assert_ne!(r.code, 0, "{}", r.stderr);
    let r = run(s.vouch().args(["trust", "status", "--json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["source"], "embedded");

    let r = s.update();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["root_version"], 1);
    assert_verified_from_cache(&s.verify(&[]));

    let r = run(s.vouch().args(["trust", "status", "--json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let st = r.json();
    assert_eq!(st["source"], "tuf-cache");
    assert_eq!(st["root_version"], 1);
    assert!(st["refreshed_at"].is_string());

    // --trust-root and --staging still win over the cache.
    let r = s.verify(&["--staging"]);
    assert_ne!(r.code, 0, "{}", r.stderr);
    // Staging has its own TUF repository and cache: not refreshed, so its embedded root.
    let r = run(s.vouch().args(["trust", "status", "--staging", "--json"]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let st = r.json();
    assert_eq!(st["source"], "embedded", "{st}");
    assert_eq!(st["describe"], "Sigstore staging (embedded)", "{st}");
    assert!(st["url"].as_str().unwrap().contains("sigstage.dev"), "{st}");
    assert_ne!(
        st["cache"],
        run(s.vouch().args(["trust", "status", "--json"])).json()["cache"]
    );
}

#[test]
fn update_follows_a_root_rotation() {
    let s = Setup::new();
    assert_eq!(s.update().code, 0);
    s.server.rotate();
    let r = s.update();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["root_version"], 2);
    assert_verified_from_cache(&s.verify(&[]));
    let r = run(s.vouch().args(["trust", "status", "--json"]));
    assert_eq!(r.json()["root_version"], 2);
}

#[test]
fn a_rollback_is_refused_and_the_cache_kept() {
    let s = Setup::new();
    s.server.republish(vouch_testsig::tuf::FAR_FUTURE);
    let r = s.update();
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(r.json()["timestamp_version"], 2);
    // The repository serves timestamp version 1 again.
    s.server.replay_timestamp(0);
    let r = s.update();
    assert_eq!(r.code, 17, "{}", r.stderr);
    assert!(
        r.stderr.contains("rollback detected for timestamp"),
        "{}",
        r.stderr
    );
    assert_verified_from_cache(&s.verify(&[]));
}

#[test]
fn expired_metadata_is_refused() {
    let s = Setup::new();
    s.server.republish(IN_THE_PAST);
    let r = s.update();
    assert_eq!(r.code, 17, "{}", r.stderr);
    assert!(
        r.stderr
            .contains("timestamp metadata expired at 2001-01-01"),
        "{}",
        r.stderr
    );
    // Nothing was refreshed: the embedded root, which does not know the local CA.
    let r = s.verify(&[]);
    assert_ne!(r.code, 0, "{}", r.stderr);
}

#[test]
fn an_unreachable_repository_is_a_download_failure() {
    let mut s = Setup::new();
    s.server.stop();
    let r = s.update();
    assert_eq!(r.code, 31, "{}", r.stderr);
    assert!(
        r.stderr.contains("cannot reach the TUF repository"),
        "{}",
        r.stderr
    );
}

#[test]
fn offline_uses_the_cache_and_falls_back_to_the_embedded_root() {
    let mut s = Setup::new();
    assert_eq!(s.update().code, 0);
    s.server.stop();
    assert_verified_from_cache(&s.verify(&["--offline"]));

    // Tampered: the cached target no longer matches its pinned hash.
    let dir = s.repo_dir();
    tamper(&dir.join("targets").join("trusted_root.json"));
    let r = s.verify(&["--offline"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("warning: ignoring the refreshed trust root"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("Sigstore production (embedded)"),
        "{}",
        r.stderr
    );

    // Deleted: the embedded root, said under --offline.
    std::fs::remove_dir_all(s.cache().join("trust-root")).unwrap();
    let r = s.verify(&["--offline"]);
    assert_ne!(r.code, 0);
    assert!(
        r.stderr
            .contains("trust root: Sigstore production (embedded)"),
        "{}",
        r.stderr
    );
}

fn tamper(path: &Path) {
    let mut bytes = std::fs::read(path).unwrap();
    bytes.extend_from_slice(b" ");
    std::fs::write(path, bytes).unwrap();
}

#[test]
fn plain_http_is_refused_off_loopback() {
    let s = Setup::new();
    let r = run(s
        .vouch()
        .args(["trust", "update"])
        .env("VOUCH_TUF_URL", "http://example.com/repo"));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(
        r.stderr.contains("plain http only on a loopback"),
        "{}",
        r.stderr
    );
}

/// Issue 31: the cached root is never where trust starts. Someone who can write the cache
/// replaces the whole repository directory with their own self-signed TUF repository (its
/// `root.json`, timestamp, snapshot, targets and a `trusted_root.json` naming their CA), keeping
/// vouch's `refreshed_at` record. The offline load re-verifies from the pinned bootstrap root,
/// so the planted chain is refused and the attacker's bundle does not verify.
#[test]
fn issue31_a_self_signed_root_planted_in_the_cache_is_refused() {
    let s = Setup::new();
    assert_eq!(s.update().code, 0);
    // The attacker's repository: a valid, self-signed chain that verifies the attacker's bundle
    // when it is trusted from its own root.
    let attacker = Setup::new();
    assert_eq!(attacker.update().code, 0);
    assert_verified_from_cache(&attacker.verify(&[]));

    let ours = s.repo_dir();
    let theirs = attacker.repo_dir();
    assert_ne!(
        std::fs::read(ours.join("root.json")).unwrap(),
        std::fs::read(theirs.join("root.json")).unwrap()
    );
    for entry in std::fs::read_dir(&ours).unwrap() {
        let path = entry.unwrap().path();
        if path.file_name().unwrap() == "vouch-refreshed.json" {
            continue;
        }
        if path.is_dir() {
            std::fs::remove_dir_all(&path).unwrap();
        } else {
            std::fs::remove_file(&path).unwrap();
        }
    }
    copy_tree(&theirs, &ours, "vouch-refreshed.json");

    let r = run(s
        .vouch()
        .arg("verify")
        .arg(&attacker.wheel)
        .arg("--bundle")
        .arg(&attacker.bundle)
        .args(["--repo", "cupy/cupy", "--json", "--offline"]));
    assert_ne!(r.code, 0, "{}\n{}", r.stdout, r.stderr);
    assert!(
        r.stderr
            .contains("warning: ignoring the refreshed trust root"),
        "{}",
        r.stderr
    );
    assert!(
        r.stderr.contains("the cached TUF metadata in") && r.stderr.contains("does not verify"),
        "{}",
        r.stderr
    );
    assert!(
        !r.stderr
            .contains("trust root: Sigstore root from the TUF cache"),
        "{}",
        r.stderr
    );
    let r = run(s.vouch().args(["trust", "status", "--json"]));
    assert_ne!(r.json()["source"], "tuf-cache", "{}", r.stdout);
}

/// Copies `from` into `to` (made as needed), leaving out entries named `skip`.
fn copy_tree(from: &Path, to: &Path, skip: &str) {
    std::fs::create_dir_all(to).unwrap();
    for entry in std::fs::read_dir(from).unwrap() {
        let entry = entry.unwrap();
        if entry.file_name() == skip {
            continue;
        }
        let dest = to.join(entry.file_name());
        if entry.file_type().unwrap().is_dir() {
            copy_tree(&entry.path(), &dest, skip);
        } else {
            std::fs::copy(entry.path(), dest).unwrap();
        }
    }
}
