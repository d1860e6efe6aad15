//! Issue 5: the scoped compiler cache with real ccache, sccache, redis-server and gcc.

use std::path::{Path, PathBuf};

use crate::common::*;
use crate::stores::{Backing, MAIN_REF, PR7_REF};
use crate::vouch_snapshot;
use serde_json::Value;

/// A `gcc` wrapper, the same file for every build (so ccache and sccache key it the same),
/// that appends a "poison" section to every object it writes while `marker` exists: what a
/// malicious PR's build could do to the objects it compiles.
fn poison_wrapper(dir: &Path) -> (PathBuf, PathBuf) {
    let bin = dir.join("bin");
    std::fs::create_dir_all(&bin).unwrap();
    let marker = dir.join("poison-on");
    let script = format!(
        r#"#!/bin/sh
out=""
prev=""
for a in "$@"; do
  [ "$prev" = "-o" ] && out="$a"
  prev="$a"
done
/usr/bin/gcc "$@" || exit $?
case "$out" in
  *.o) if [ -f "{marker}" ]; then objcopy --add-section .vouch_poison="{marker}" "$out"; fi ;;
esac
"#,
        marker = marker.display()
    );
    let gcc = bin.join("gcc");
    std::fs::write(&gcc, script).unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        std::fs::set_permissions(&gcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    }
    std::fs::write(&marker, "poisoned object\n").unwrap();
    std::fs::remove_file(&marker).unwrap();
    (gcc, marker)
}

struct Scenario {
    dir: tempfile::TempDir,
    gcc: PathBuf,
    marker: PathBuf,
    original: PathBuf,
    work: PathBuf,
}

impl Scenario {
    fn new() -> Scenario {
        let dir = tempdir();
        let (gcc, marker) = poison_wrapper(dir.path());
        let original = dir.path().join("original");
        copy_sample(&original);
        let work = dir.path().join("work");
        Scenario {
            dir,
            gcc,
            marker,
            original,
            work,
        }
    }

    /// `vouch build` with the wrapper compiler; `cache` = (tool, store flags, scope flags).
    fn build(&self, source: &Path, out: &str, cache: Option<(&str, &Backing, &[&str])>) -> Value {
        self.build_env(source, out, cache, &[])
    }

    /// [`Scenario::build`], then `env` on top (e.g. another seal key).
    fn build_env(
        &self,
        source: &Path,
        out: &str,
        cache: Option<(&str, &Backing, &[&str])>,
        env: &[(&str, &std::ffi::OsStr)],
    ) -> Value {
        let mut cmd = vouch();
        cmd.arg("build")
            .arg("--source")
            .arg(source)
            .arg("--out")
            .arg(self.dir.path().join(out))
            .arg("--work-dir")
            .arg(&self.work)
            .args(["--source-date-epoch", "1700000000", "--json"])
            .env("CC", &self.gcc);
        if let Some((tool, store, scope)) = cache {
            cmd.args(["--cache", tool]).args(scope);
            store.apply(&mut cmd, scope);
        }
        for (k, v) in env {
            cmd.env(k, v);
        }
        let r = run(&mut cmd);
        assert_eq!(r.code, 0, "build failed:\n{}", r.stderr);
        r.json()
    }

    fn poison(&self, on: bool) {
        if on {
            std::fs::write(&self.marker, "poisoned object\n").unwrap();
        } else {
            let _ = std::fs::remove_file(&self.marker);
        }
    }
}

/// The poisoning scenario on the store `kind`. A PR build compiles the sample with the
/// poisoning compiler on an empty store (so it writes entries under exactly the keys a clean
/// build would look up), then a trusted build runs. Returns (clean reference digest, trusted
/// digest, PR cache record, store keys after the PR build).
fn poisoning(tool: &str, kind: &str, pr_scope: &[&str]) -> (Value, Value, Value, Vec<String>) {
    let s = Scenario::new();
    let reference = s.build(&s.original, "ref", None);
    let store = Backing::start(kind, s.dir.path());
    s.poison(true);
    let pr = s.build(&s.original, "pr", Some((tool, &store, pr_scope)));
    s.poison(false);
    assert_ne!(
        pr["sha256"], reference["sha256"],
        "the wrapper really poisons objects"
    );
    let keys = store.keys();
    let trusted = s.build(&s.original, "trusted", Some((tool, &store, TRUSTED)));
    (
        reference["sha256"].clone(),
        trusted["sha256"].clone(),
        pr["cache"].clone(),
        keys,
    )
}

fn assert_not_poisoned(tool: &str, kind: &str) {
    let (reference, trusted, pr, keys) = poisoning(tool, kind, PR7);
    assert_eq!(
        trusted, reference,
        "{kind}: the trusted wheel must not contain the PR's objects"
    );
    // Reads follow trust: nothing reads what a PR wrote, so a PR build writes nothing.
    assert_eq!(pr["gateway"]["write_scope"], Value::Null);
    assert_eq!(pr["gateway"]["writes"], 0, "{pr}");
    assert!(
        pr["gateway"]["refused_writes"].as_u64().unwrap() > 0,
        "{kind}: the tool tried to write and was refused: {pr}"
    );
    assert!(keys.is_empty(), "{kind}: a PR build wrote {keys:?}");
}

/// Every entry a directory store holds in `branch/main`: (key, stored bytes).
fn main_entries(store: &Path) -> Vec<(String, Vec<u8>)> {
    let root = store.join("branch/main/@");
    let mut out: Vec<(String, Vec<u8>)> = walkdir::WalkDir::new(&root)
        .into_iter()
        .filter_map(Result::ok)
        .filter(|e| e.file_type().is_file())
        .map(|e| {
            let key = e.path().strip_prefix(&root).unwrap().display().to_string();
            (key, std::fs::read(e.path()).unwrap())
        })
        .collect();
    out.sort();
    out
}

/// Issue 31, reads follow trust. An attacker compiles the sample with the poisoning compiler,
/// so its entries sit under exactly the keys a clean build looks up, signs them with a key of
/// its own, and plants them straight into the store: in PR 7's scope (any run of PR 7 can, and
/// a holder of a leaked credential), under main's key names in PR 7's own GitHub cache scope
/// (which GitHub serves to PR 7's runs first), and in main's scope (any default-branch
/// workflow can). Neither PR 7's vouched build nor a trusted build may serve one of them: both
/// wheels equal the uncached build, with the planted entries counted as unauthenticated. A
/// control run on a second store, planted the same way with the trusted key's entries, hits:
/// so the planted entries were really in the reading path.
fn planted_entries_are_never_served(tool: &str, kind: &str) {
    let s = Scenario::new();
    let reference = s.build(&s.original, "ref", None);
    let attacker_key = s.dir.path().join("attacker-seal-key");
    std::fs::write(&attacker_key, "an attacker's own key, 32 bytes or more").unwrap();
    let evil_store = s.dir.path().join("evil-store");
    s.poison(true);
    // Its own cache directory too: venv seals made under another key are the suite's
    // business, not this test's.
    let attacker_cache = s.dir.path().join("attacker-cache");
    let evil = s.build_env(
        &s.original,
        "evil",
        Some((tool, &Backing::Dir(evil_store.clone()), TRUSTED)),
        &[
            ("VOUCH_SEAL_KEY_FILE", attacker_key.as_os_str()),
            ("VOUCH_CACHE_DIR", attacker_cache.as_os_str()),
        ],
    );
    s.poison(false);
    assert_ne!(
        evil["sha256"], reference["sha256"],
        "the attacker's objects differ"
    );
    let planted = main_entries(&evil_store);
    assert!(!planted.is_empty());

    let store = Backing::start(kind, s.dir.path());
    for (key, data) in &planted {
        store.plant(&format!("pr/7/@/{key}"), data, PR7_REF);
        store.plant(&format!("branch/main/@/{key}"), data, PR7_REF);
        store.plant(&format!("branch/main/@/{key}"), data, MAIN_REF);
        // And raw, without vouch's frame, under the key of the tool's manifest or result.
        store.plant(&format!("pr/7/@/{key}.raw"), &data[72..], PR7_REF);
    }
    for (scope, out) in [(PR7, "pr"), (TRUSTED, "trusted")] {
        let built = s.build(&s.original, out, Some((tool, &store, scope)));
        assert_eq!(
            built["sha256"], reference["sha256"],
            "{kind}: the {out} build served a planted entry"
        );
        let g = &built["cache"]["gateway"];
        assert_eq!(g["hits"], 0, "{kind} {out}: {g}");
        assert!(
            g["unauthenticated"].as_u64().unwrap() > 0,
            "{kind} {out}: {g}"
        );
        assert!(
            g["layers"]
                .as_array()
                .unwrap()
                .iter()
                .all(|l| l["scope"] == "branch/main"),
            "{kind} {out}: {g}"
        );
    }

    // The control: the trusted key's own entries, planted the same way, are served.
    let good_store = s.dir.path().join("good-store");
    s.build(
        &s.original,
        "good",
        Some((tool, &Backing::Dir(good_store.clone()), TRUSTED)),
    );
    let control_dir = s.dir.path().join("control");
    std::fs::create_dir_all(&control_dir).unwrap();
    let control = Backing::start(kind, &control_dir);
    for (key, data) in main_entries(&good_store) {
        control.plant(&format!("branch/main/@/{key}"), &data, MAIN_REF);
    }
    let pr = s.build(&s.original, "pr-control", Some((tool, &control, PR7)));
    assert_eq!(pr["sha256"], reference["sha256"]);
    let g = &pr["cache"]["gateway"];
    assert!(
        g["hits"].as_u64().unwrap() > 0,
        "{kind}: the control missed: {g}"
    );
    assert_eq!(g["unauthenticated"], 0, "{kind}: {g}");
}

macro_rules! planted_tests {
    ($($name:ident: $tool:literal on $kind:literal;)*) => {$(
        #[test]
        fn $name() {
            planted_entries_are_never_served($tool, $kind);
        }
    )*};
}

planted_tests! {
    issue31_planted_entries_ccache_directory_store: "ccache" on "directory";
    issue31_planted_entries_ccache_redis_store: "ccache" on "redis";
    issue31_planted_entries_ccache_s3_store_on_moto: "ccache" on "s3";
    issue31_planted_entries_ccache_gcs_store_on_gcs_emulator: "ccache" on "gcs";
    issue31_planted_entries_ccache_github_cache_double: "ccache" on "gha";
    issue31_planted_entries_sccache_github_cache_double: "sccache" on "gha";
}

/// The same scenario with the scopes swapped the wrong way (the PR build given the trusted
/// scope): the trusted wheel is poisoned, so the assertions above can fail.
fn assert_swapped_scopes_poison(tool: &str, kind: &str) {
    let (reference, trusted, pr, keys) = poisoning(tool, kind, TRUSTED);
    assert_ne!(
        trusted, reference,
        "{kind}: with the PR writing branch/main, the trusted build reads its objects"
    );
    assert_eq!(pr["gateway"]["write_scope"], "branch/main");
    assert!(
        keys.iter().any(|k| k.starts_with("branch/main/")),
        "{keys:?}"
    );
}

/// One poisoning test per tool and store; the S3 and GCS stores are the emulators (stand-ins
/// for AWS and Google Cloud, which CI cannot reach).
macro_rules! poisoning_tests {
    ($($name:ident: $tool:literal on $kind:literal;)*) => {$(
        #[test]
        fn $name() {
            assert_not_poisoned($tool, $kind);
        }
    )*};
}

poisoning_tests! {
    poisoning_ccache_directory_store: "ccache" on "directory";
    poisoning_sccache_directory_store: "sccache" on "directory";
    poisoning_ccache_redis_store: "ccache" on "redis";
    poisoning_sccache_redis_store: "sccache" on "redis";
    poisoning_ccache_s3_store_on_moto: "ccache" on "s3";
    poisoning_sccache_s3_store_on_moto: "sccache" on "s3";
    poisoning_ccache_gcs_store_on_gcs_emulator: "ccache" on "gcs";
    poisoning_sccache_gcs_store_on_gcs_emulator: "sccache" on "gcs";
    poisoning_ccache_github_cache_double: "ccache" on "gha";
    poisoning_sccache_github_cache_double: "sccache" on "gha";
}

#[test]
fn swapped_scopes_do_poison_ccache() {
    assert_swapped_scopes_poison("ccache", "directory");
}

#[test]
fn swapped_scopes_do_poison_sccache_redis() {
    assert_swapped_scopes_poison("sccache", "redis");
}

#[test]
fn swapped_scopes_do_poison_sccache_s3_on_moto() {
    assert_swapped_scopes_poison("sccache", "s3");
}

fn compile_counts(record: &Value) -> (u64, u64) {
    let c = &record["cache"]["compiler_cache"];
    (
        c["hits"].as_u64().unwrap(),
        c["misses"].as_u64().unwrap_or(0),
    )
}

/// Trusted build fills branch/main; a PR changing one C file hits for every other translation
/// unit and writes nothing; a fresh trusted rebuild of the original hits 100% and is
/// byte-identical.
fn warm_and_pr_hit_rates(tool: &str, kind: &str) {
    let s = Scenario::new();
    let store = Backing::start(kind, s.dir.path());
    let first = s.build(&s.original, "t1", Some((tool, &store, TRUSTED)));
    assert_eq!(
        compile_counts(&first),
        (0, 2),
        "cold: both translation units miss"
    );

    let modified = s.dir.path().join("modified");
    copy_sample(&modified);
    let c = modified.join("csrc/checksum.c");
    std::fs::write(
        &c,
        std::fs::read_to_string(&c)
            .unwrap()
            .replacen("65521u", "65519u", 1),
    )
    .unwrap();
    s.poison(true);
    let pr = s.build(&modified, "pr", Some((tool, &store, PR7)));
    s.poison(false);
    assert_eq!(
        compile_counts(&pr),
        (1, 1),
        "_native.c hits branch/main, checksum.c misses"
    );
    let layers = &pr["cache"]["gateway"]["layers"];
    assert_eq!(layers.as_array().unwrap().len(), 1, "{layers}");
    assert_eq!(layers[0]["scope"], "branch/main");
    assert!(layers[0]["hits"].as_u64().unwrap() >= 1, "{layers}");
    assert_eq!(pr["cache"]["gateway"]["writes"], 0);

    let second = s.build(&s.original, "t2", Some((tool, &store, TRUSTED)));
    assert_eq!(compile_counts(&second), (2, 0), "warm rebuild: 100% hits");
    assert_eq!(second["sha256"], first["sha256"]);
    assert_eq!(
        second["cache"]["gateway"]["layers"]
            .as_array()
            .unwrap()
            .len(),
        1,
        "a trusted build reads only its own scope"
    );
    assert!(store.keys().iter().all(|k| k.starts_with("branch/main/")));
}

#[test]
fn warm_rebuild_and_pr_hit_rates_ccache() {
    warm_and_pr_hit_rates("ccache", "directory");
}

#[test]
fn warm_rebuild_and_pr_hit_rates_sccache() {
    warm_and_pr_hit_rates("sccache", "directory");
}

/// The counters (gateway layers, the tool's own hits) read the same on an object store.
#[test]
fn warm_rebuild_and_pr_hit_rates_sccache_gcs_on_gcs_emulator() {
    warm_and_pr_hit_rates("sccache", "gcs");
}

/// `vouch cache check --json` with the store flags `store` under the PR #7 scope.
fn check(store: &[String]) -> Run {
    run(vouch()
        .args(["cache", "check"])
        .args(store)
        .args(PR7)
        .arg("--json"))
}

fn assert_open_at_main(r: &Run) {
    assert_eq!(r.code, 20, "{}\n{}", r.stdout, r.stderr);
    let probes = r.json()["probes"].clone();
    assert!(
        probes
            .as_array()
            .unwrap()
            .iter()
            .any(|p| p["scope"] == "branch/main" && p["can_write"] == true),
        "{probes}"
    );
}

fn no_secret_in(runs: &[&Run], secrets: &[&str]) {
    for r in runs {
        for out in [&r.stdout, &r.stderr] {
            for s in secrets {
                assert!(!out.contains(s), "a secret leaked: {out}");
            }
        }
    }
}

/// Issue 31: a credential that may write but not delete (here a Redis user with SET and
/// SETEX but no DEL) used to leave `cache check`'s probes in trusted scopes for good. Probes
/// are now written to expire on their own where the store can (Redis: SETEX), so each one
/// left behind carries a TTL of at most five minutes.
#[test]
fn issue31_cache_check_probes_expire_where_they_cannot_be_removed() {
    let redis = RedisServer::start();
    redis.cli(&[
        "ACL",
        "SETUSER",
        "nodel",
        "on",
        ">pw-nodel",
        "~*",
        "-@all",
        "+@connection",
        "+get",
        "+set",
        "+setex",
        "+exists",
        "+strlen",
    ]);
    let r = check(&[
        "--cache-store".into(),
        format!("redis://nodel:pw-nodel@127.0.0.1:{}", redis.port),
    ]);
    assert_open_at_main(&r);
    let left: Vec<String> = redis
        .cli(&["--raw", "KEYS", "*"])
        .lines()
        .filter(|l| !l.is_empty())
        .map(str::to_owned)
        .collect();
    assert!(
        left.contains(&"branch/main/@/.vouch-fence-probe".to_owned()),
        "the removal failed, so the probe is there: {left:?}"
    );
    for key in &left {
        let ttl: i64 = redis.cli(&["TTL", key]).trim().parse().unwrap();
        assert!(
            (1..=300).contains(&ttl),
            "{key} has TTL {ttl}: it never expires"
        );
    }
    no_secret_in(&[&r], &["pw-nodel"]);
}

/// Redis: `cache grant` mints the per-PR ACL user the PR job gets; `cache check` passes with
/// it and fails closed (20) with the trusted credential and with a hand-made broad one.
#[test]
fn cache_check_redis_granted_user_passes_trusted_user_fails() {
    let redis = RedisServer::start();
    let dir = tempdir();
    let pw_file = dir.path().join("pr7.pw");
    // An admin user with a password (from a file, as in the generated workflows).
    redis.cli(&[
        "ACL",
        "SETUSER",
        "vouch-admin",
        "on",
        ">admin-secret-pw",
        "~*",
        "&*",
        "+@all",
    ]);
    let admin_pw = dir.path().join("admin.pw");
    std::fs::write(&admin_pw, "admin-secret-pw\n").unwrap();
    let admin = format!("redis://vouch-admin@127.0.0.1:{}", redis.port);
    let grant_pr = |pr: &str, ttl: &str, out: &Path| {
        run(vouch()
            .args(["cache", "grant", "--cache-store", &admin, "--password-file"])
            .arg(&admin_pw)
            .args(["--pr", pr, "--base-ref", "main", "--ttl", ttl, "--out"])
            .arg(out))
    };
    let grant = grant_pr("7", "6h", &pw_file);
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let pr_store = grant.stdout.trim().to_owned();
    assert_eq!(
        pr_store,
        format!("redis://vouch-pr-7@127.0.0.1:{}", redis.port)
    );
    let password = std::fs::read_to_string(&pw_file).unwrap();
    assert_eq!(password.len(), 48, "192 random bits, hex");
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&pw_file).unwrap().permissions().mode();
        assert_eq!(mode & 0o777, 0o600);
    }
    let granted = [
        "--cache-store".to_owned(),
        pr_store.clone(),
        "--password-file".into(),
        pw_file.display().to_string(),
    ];
    let good = check(&granted);
    assert_eq!(good.code, 0, "{}\n{}", good.stdout, good.stderr);
    assert_eq!(good.json()["fenced"], true);
    // A PR build writes nothing, so its credential writes nowhere.
    let probes = good.json()["probes"].clone();
    assert_eq!(probes[0]["scope"], "branch/main");
    assert!(
        probes
            .as_array()
            .unwrap()
            .iter()
            .all(|p| p["may_write"] == false && p["can_write"] == false),
        "{probes}"
    );

    // The trusted credential (the push builds'): it can write everything.
    let trusted = check(&["--cache-store".into(), redis.url()]);
    assert_open_at_main(&trusted);
    // The granted user runs the cache's commands and nothing that reaches other clients.
    let as_pr = |args: &[&str]| {
        let out = std::process::Command::new("redis-cli")
            .args([
                "-p",
                &redis.port.to_string(),
                "--user",
                "vouch-pr-7",
                "--pass",
                &password,
            ])
            .arg("--no-auth-warning")
            .args(args)
            .output()
            .unwrap();
        String::from_utf8_lossy(&out.stdout).into_owned()
    };
    for denied in [
        &["CLIENT", "PAUSE", "10"][..],
        &["CLIENT", "LIST"],
        &["KEYS", "*"],
        &["FLUSHALL"],
        &["SELECT", "1"],
    ] {
        assert!(
            as_pr(denied).contains("NOPERM"),
            "{denied:?}: {}",
            as_pr(denied)
        );
    }
    // Issue 31: the password travels in a public artifact, so it reads and writes nothing
    // a stranger could use: not even its own PR's scope (which no build reads).
    assert!(as_pr(&["SET", "branch/main/x", "p"]).contains("NOPERM"));
    assert!(as_pr(&["SET", "pr/7/x", "p"]).contains("NOPERM"));
    assert!(as_pr(&["GET", "pr/7/x"]).contains("NOPERM"));
    assert!(!as_pr(&["GET", "branch/main/x"]).contains("NOPERM"));
    // A hand-made credential that may write every branch is caught the same way.
    redis.cli(&[
        "ACL",
        "SETUSER",
        "broad",
        "on",
        ">pw-broad",
        "resetkeys",
        "%R~*",
        "%W~pr/*",
        "%W~branch/*",
        "-@all",
        "+@connection",
        "+get",
        "+set",
        "+exists",
        "+strlen",
        "+del",
    ]);
    let broad = check(&[
        "--cache-store".into(),
        format!("redis://broad:pw-broad@127.0.0.1:{}", redis.port),
    ]);
    assert_open_at_main(&broad);
    no_secret_in(
        &[&grant, &good, &trusted, &broad],
        &[&password, "pw-broad", "admin-secret-pw"],
    );
    assert_eq!(
        redis.cli(&["--raw", "KEYS", "*"]).trim(),
        "vouch-grants/vouch-pr-7",
        "probes leave nothing behind (only the grant's expiry record)"
    );

    // The granted user works through a build's gateway: it reads what the trusted build
    // signed into branch/main, and writes nothing.
    let main = serve(dir.path(), redis.url(), TRUSTED);
    let c = reqwest::Client::new();
    let (code, _) = request(&c, "PUT", &format!("{}/kv/k", main.url), Some("v"));
    assert_eq!(code, 201);
    let served = serve(
        dir.path(),
        &pr_store,
        &[PR7, &["--password-file", pw_file.to_str().unwrap()]].concat(),
    );
    assert_eq!(
        request(&c, "GET", &format!("{}/kv/k", served.url), None),
        (200, "v".into())
    );
    let (code, _) = request(&c, "PUT", &format!("{}/kv/n", served.url), Some("v"));
    assert_eq!(code, 403);

    // Expiry: a grant's user outlives its marker only until the next grant sweeps it.
    redis.cli(&["DEL", "vouch-grants/vouch-pr-7"]);
    let other = run(vouch()
        .args([
            "cache",
            "grant",
            "--cache-store",
            &redis.url(),
            "--pr",
            "8",
            "--out",
        ])
        .arg(dir.path().join("pr8.pw")));
    assert_eq!(other.code, 0, "{}", other.stderr);
    let users = redis.cli(&["ACL", "USERS"]);
    assert!(
        !users.contains("vouch-pr-7") && users.contains("vouch-pr-8"),
        "{users}"
    );
    assert_ne!(
        check(&granted).code,
        0,
        "an expired grant no longer authenticates"
    );
}

/// S3 (moto's IAM as the stand-in for AWS's): the policy `cache grant` prints, attached to a
/// user, passes `cache check`; the trusted `s3:*` user fails it; probes are removed.
#[test]
fn cache_check_s3_granted_policy_passes_trusted_fails_on_moto() {
    let moto = crate::stores::Moto::start();
    let dir = tempdir();
    let grant = run(vouch().args([
        "cache",
        "grant",
        "--cache-store",
        &format!(
            "s3://vouch-cache/vouch?region=us-east-1&endpoint={}",
            moto.endpoint()
        ),
        "--pr",
        "7",
    ]));
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let policy: Value = serde_json::from_str(&grant.stdout).unwrap();
    // Issue 31: read-only, on the branch scope trusted builds write.
    assert_eq!(
        policy["Statement"][0]["Resource"],
        serde_json::json!(["arn:aws:s3:::vouch-cache/vouch/branch/main/*"])
    );
    assert!(!grant.stdout.contains("PutObject"), "{}", grant.stdout);
    let pr7 = moto.user("pr7", &grant.stdout);
    let trusted = moto.user(
        "trusted",
        r#"{"Version": "2012-10-17", "Statement": [{"Effect": "Allow", "Action": "s3:*", "Resource": ["arn:aws:s3:::vouch-cache", "arn:aws:s3:::vouch-cache/*"]}]}"#,
    );
    moto.enforce_iam();
    let flags = |(id, secret): &(String, String), name: &str| {
        let f = dir.path().join(name);
        std::fs::write(&f, secret).unwrap();
        vec![
            "--cache-store".to_owned(),
            moto.spec(id),
            "--password-file".into(),
            f.display().to_string(),
        ]
    };
    // The trusted build signs main's entry (through its gateway, with the s3:* user).
    let tflags = flags(&trusted, "trusted");
    let main_args: Vec<&str> = TRUSTED
        .iter()
        .copied()
        .chain(tflags[2..].iter().map(String::as_str))
        .collect();
    let main = serve(dir.path(), moto.spec(&trusted.0), &main_args);
    let c = reqwest::Client::new();
    assert_eq!(
        request(&c, "PUT", &format!("{}/kv/k", main.url), Some("main")).0,
        201
    );
    let good = check(&flags(&pr7, "pr7"));
    assert_eq!(good.code, 0, "{}\n{}", good.stdout, good.stderr);
    assert_eq!(
        good.json()["probes"][0]["can_write"],
        false,
        "{}",
        good.stdout
    );
    let bad = check(&flags(&trusted, "trusted"));
    assert_open_at_main(&bad);
    no_secret_in(&[&good, &bad], &[&pr7.1, &trusted.1]);
    assert_eq!(
        moto.keys(),
        ["branch/main/@/kv/k"],
        "probes leave nothing behind"
    );

    // Through a gateway, the granted key reads main and writes nothing.
    let served = serve(
        dir.path(),
        moto.spec(&pr7.0),
        &[
            PR7,
            &["--password-file", dir.path().join("pr7").to_str().unwrap()],
        ]
        .concat(),
    );
    assert_eq!(
        request(&c, "GET", &format!("{}/kv/k", served.url), None),
        (200, "main".into())
    );
    assert_eq!(
        request(&c, "GET", &format!("{}/kv/none", served.url), None).0,
        404
    );
    assert_eq!(
        request(&c, "PUT", &format!("{}/kv/n", served.url), Some("x")).0,
        403
    );
    assert_eq!(moto.keys(), ["branch/main/@/kv/k"]);
}

/// GCS: the emulator has no IAM (every write is accepted), so `cache check` must find the
/// fence missing and fail closed; the IAM conditions that would fence it are checked as text
/// (`cache grant` output) and documented.
#[test]
fn cache_check_gcs_emulator_without_iam_fails_closed() {
    let gcs = crate::stores::GcsEmulator::start();
    let dir = tempdir();
    let token = dir.path().join("token");
    std::fs::write(&token, "ya29.pr-token").unwrap();
    let r = check(&[
        "--cache-store".into(),
        gcs.spec(),
        "--password-file".into(),
        token.display().to_string(),
    ]);
    assert_open_at_main(&r);
    no_secret_in(&[&r], &["ya29.pr-token"]);
    assert_eq!(
        gcs.keys(),
        Vec::<String>::new(),
        "probes leave nothing behind"
    );
    let grant = run(vouch().args(["cache", "grant", "--cache-store", &gcs.spec(), "--pr", "7"]));
    assert_eq!(grant.code, 0, "{}", grant.stderr);
    let doc: Value = serde_json::from_str(&grant.stdout).unwrap();
    assert_eq!(doc["version"], 3);
    // Issue 31: one read-only binding, on the branch scope trusted builds write.
    assert_eq!(doc["bindings"].as_array().unwrap().len(), 1, "{doc}");
    assert_eq!(doc["bindings"][0]["role"], "roles/storage.objectViewer");
    assert_eq!(
        doc["bindings"][0]["condition"]["expression"],
        "resource.name.startsWith(\"projects/_/buckets/vouch-cache/objects/vouch/branch/main/\")"
    );
}

#[test]
fn gateway_bounds_entries_and_layers_reads() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let main = serve(
        dir.path(),
        &store,
        &[
            "--event",
            "push",
            "--ref",
            "refs/heads/main",
            "--max-entry-bytes",
            "1024",
        ],
    );
    let pr = serve(dir.path(), &store, PR7);
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let (big, small, pr_get, pr_put, pr_get_own, main_get_pr, stats) = rt.block_on(async {
        let c = reqwest::Client::new();
        let big = c
            .put(format!("{}/ccache/aa/big", main.url))
            .body(vec![0u8; 2048])
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let small = c
            .put(format!("{}/ccache/aa/small", main.url))
            .body("main entry")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let pr_get = c
            .get(format!("{}/ccache/aa/small", pr.url))
            .send()
            .await
            .unwrap()
            .text()
            .await
            .unwrap();
        let pr_put = c
            .put(format!("{}/ccache/bb/pr-only", pr.url))
            .body("pr entry")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let pr_get_own = c
            .get(format!("{}/ccache/bb/pr-only", pr.url))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let main_get_pr = c
            .get(format!("{}/ccache/bb/pr-only", main.url))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let stats: Value = c
            .get(format!("{}/_vouch/stats", pr.url))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (big, small, pr_get, pr_put, pr_get_own, main_get_pr, stats)
    });
    assert_eq!((big, small), (413, 201));
    assert_eq!(pr_get, "main entry", "a PR reads the trusted scope");
    assert_eq!(
        (pr_put, pr_get_own),
        (403, 404),
        "a PR build writes nothing"
    );
    assert_eq!(main_get_pr, 404);
    assert_eq!(stats["layers"][0]["scope"], "branch/main");
    assert_eq!(stats["layers"][0]["hits"], 1);
    assert!(!store.join("pr").exists());
    assert!(store.join("branch/main/@/ccache/aa/small").is_file());
    assert!(!store.join("branch/main/@/ccache/aa/big").exists());
    let md = run(vouch().args(["cache", "stats", "--markdown", "--url", &pr.url]));
    assert_eq!(md.code, 0, "{}", md.stderr);
    insta::assert_snapshot!(md.stdout, @r"
    | scope | hits | bytes |
    |---|---:|---:|
    | `branch/main` (read) | 1 | 10 |

    misses 1 · read-only · refused writes 1 · hit rate 50.0%
    ");
}

/// `vouch cache env --tool TOOL`, for the caller to add the URL and the format.
fn cache_env(tool: &str) -> std::process::Command {
    let mut cmd = vouch();
    cmd.args(["cache", "env", "--tool", tool]);
    cmd
}

#[test]
fn cache_env_formats() {
    let sh = run(cache_env("ccache").args([
        "--url",
        "http://127.0.0.1:4000",
        "--local-dir",
        "/var/cache/x",
    ]));
    assert_eq!(sh.code, 0, "{}", sh.stderr);
    insta::assert_snapshot!(sh.stdout, @r"
    export CCACHE_DIR=/var/cache/x
    export CCACHE_REMOTE_STORAGE=http://127.0.0.1:4000/ccache
    export CCACHE_REMOTE_ONLY=true
    export CCACHE_COMPILERCHECK=content
    export VOUCH_COMPILER_LAUNCHER=ccache
    ");
    let gh = run(cache_env("sccache").args(["--url", "http://127.0.0.1:4000", "--format", "json"]));
    let j = gh.json();
    assert_eq!(
        j["SCCACHE_WEBDAV_ENDPOINT"],
        "http://127.0.0.1:4000/sccache"
    );
    assert!(
        j["SCCACHE_SERVER_PORT"]
            .as_str()
            .unwrap()
            .parse::<u16>()
            .is_ok()
    );
}

#[test]
fn gateway_refuses_writes_outside_policy_and_bad_requests() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let served = serve(dir.path(), &store, &["--event", "issue_comment"]);
    let url = served.url.clone();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    let statuses = rt.block_on(async {
        let c = reqwest::Client::new();
        let put = c
            .put(format!("{url}/ccache/ab/cd"))
            .body("x")
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let get = c
            .get(format!("{url}/ccache/ab/cd"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let traversal = c
            .get(format!("{url}/ccache/%2E%2E/%2E%2E/etc/passwd"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let delete = c
            .delete(format!("{url}/ccache/ab/cd"))
            .send()
            .await
            .unwrap()
            .status()
            .as_u16();
        let stats: Value = c
            .get(format!("{url}/_vouch/stats"))
            .send()
            .await
            .unwrap()
            .json()
            .await
            .unwrap();
        (put, get, traversal, delete, stats)
    });
    drop(served);
    let (put, get, traversal, delete, stats) = statuses;
    // The client resolves the `..`s above the secret segment, so the gateway sees a request
    // without its secret.
    assert_eq!((put, get, traversal, delete), (403, 404, 403, 405));
    assert_eq!(stats["refused_writes"], 1);
    assert_eq!(stats["write_scope"], Value::Null);
    assert!(dir_entries(&store).is_empty(), "nothing was written");
}

/// Runs `cmd` for at most `secs`; `None` if it was still running (then it is killed).
fn run_bounded(cmd: &mut std::process::Command, secs: u64) -> Option<Run> {
    let mut child = cmd
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    for _ in 0..secs * 20 {
        if child.try_wait().unwrap().is_some() {
            let out = child.wait_with_output().unwrap();
            return Some(Run {
                code: out.status.code().unwrap_or(-1),
                stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
                stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
            });
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    let _ = child.kill();
    let _ = child.wait();
    None
}

/// Files under a directory store, as `<scope>/<key>` paths.
fn dir_entries(store: &Path) -> Vec<String> {
    Backing::Dir(store.to_owned()).keys()
}

#[test]
fn issue12_cache_env_refuses_hostile_urls() {
    let dir = tempdir();
    let pwned = dir.path().join("PWNED");
    let p = pwned.display();
    for url in [
        format!("http://127.0.0.1:4000'; touch {p}; '"),
        format!("http://127.0.0.1:4000/$(touch {p})"),
        format!("http://127.0.0.1:4000/`touch {p}`"),
        "http://127.0.0.1:4000\nCCACHE_DIR=/tmp/evil".to_owned(),
        "http://127.0.0.1:4000/x\rEVIL=1".to_owned(),
        "http://127.0.0.1:4000/a?x='".to_owned(),
        "http://127.0.0.1:4000/%24%28id%29".to_owned(),
        "http://u:pw@127.0.0.1:4000".to_owned(),
        "https://127.0.0.1:4000".to_owned(),
        "http://10.1.2.3:4000".to_owned(),
        "http://cache.example.com:4000".to_owned(),
        "junk".to_owned(),
    ] {
        for format in ["sh", "github-env", "json"] {
            let r = run(cache_env("ccache")
                .args(["--format", format, "--url"])
                .arg(&url)
                .current_dir(dir.path()));
            assert_eq!(r.code, 2, "{url:?} ({format}) was accepted:\n{}", r.stdout);
            assert_eq!(r.stdout, "", "{url:?} ({format})");
        }
    }
    // The same check on a URL read from a file.
    let f = dir.path().join("url");
    std::fs::write(&f, format!("http://127.0.0.1:4000/$(touch {p})\n")).unwrap();
    let r = run(cache_env("sccache").arg("--url-file").arg(&f));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    let r =
        run(cache_env("ccache").args(["--url", "http://127.0.0.1:4000", "--format", "nonsense"]));
    assert_eq!(r.code, 2, "{}", r.stderr);
    assert!(!pwned.exists());
}

#[test]
fn issue12_cache_env_sh_output_sets_exactly_the_value_and_runs_nothing() {
    let dir = tempdir();
    let pwned = dir.path().join("PWNED");
    let p = pwned.display();
    // The local dir is free text: everything a shell could act on.
    let hostile =
        format!("/tmp/x'; touch {p}; '\n$(touch {p})`touch {p}`\"$HOME\" *;{{a,b}}!^#~ \\ %");
    let url = format!("http://127.0.0.1:4000/{SECRET_LIKE}");
    for (tool, vars, remote) in [
        (
            "ccache",
            ["CCACHE_DIR", "CCACHE_REMOTE_STORAGE"],
            format!("{url}/ccache"),
        ),
        (
            "sccache",
            ["SCCACHE_DIR", "SCCACHE_WEBDAV_ENDPOINT"],
            format!("{url}/sccache"),
        ),
    ] {
        let r = run(cache_env(tool)
            .args(["--url", &url, "--local-dir"])
            .arg(&hostile));
        assert_eq!(r.code, 0, "{}", r.stderr);
        let script = format!(
            "{}\nprintf '%s\\0' \"${}\" \"${}\" \"$VOUCH_COMPILER_LAUNCHER\"",
            r.stdout, vars[0], vars[1]
        );
        let out = std::process::Command::new("sh")
            .arg("-c")
            .arg(&script)
            .current_dir(dir.path())
            .output()
            .unwrap();
        assert!(
            out.status.success(),
            "sh: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        let values: Vec<String> = String::from_utf8(out.stdout)
            .unwrap()
            .split_terminator('\0')
            .map(str::to_owned)
            .collect();
        assert_eq!(values, [hostile.clone(), remote, tool.to_owned()]);
        assert!(
            !pwned.exists(),
            "the sh output ran a command:\n{}",
            r.stdout
        );
    }
    // $GITHUB_ENV takes one NAME=value per line: a line break cannot be carried, so refuse.
    let r = run(cache_env("ccache")
        .args(["--format", "github-env"])
        .args(["--url", &url, "--local-dir"])
        .arg(&hostile));
    assert_eq!(r.code, 2, "{}{}", r.stdout, r.stderr);
    assert_eq!(r.stdout, "");
    let r = run(cache_env("ccache").args(["--format", "github-env"]).args([
        "--url",
        &url,
        "--local-dir",
        "/tmp/a'$(b)",
    ]));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert_eq!(
        r.stdout.lines().collect::<Vec<_>>(),
        [
            "CCACHE_DIR=/tmp/a'$(b)".to_owned(),
            format!("CCACHE_REMOTE_STORAGE={url}/ccache"),
            "CCACHE_REMOTE_ONLY=true".to_owned(),
            "CCACHE_COMPILERCHECK=content".to_owned(),
            "VOUCH_COMPILER_LAUNCHER=ccache".to_owned(),
        ]
    );
}

#[test]
fn issue12_serve_refuses_non_loopback_listen() {
    let dir = tempdir();
    let mut refused = Vec::new();
    for addr in ["0.0.0.0:0", "[::]:0", "192.168.1.10:0", "10.1.2.3:4000"] {
        let r = run_bounded(
            std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
                .args(["cache", "serve", "--cache-store"])
                .arg(dir.path().join("store"))
                .args([
                    "--event",
                    "push",
                    "--ref",
                    "refs/heads/main",
                    "--listen",
                    addr,
                ]),
            20,
        )
        .unwrap_or_else(|| panic!("cache serve --listen {addr} kept serving"));
        refused.push((addr, r));
    }
    insta::assert_snapshot!(snapshot_cases(refused, &[]), @r#"
        ===== "0.0.0.0:0"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: invalid value '0.0.0.0:[PORT]' for '--listen <LISTEN>': 0.0.0.0:[PORT] is not a loopback address; the gateway listens on 127.0.0.0/8 or [::1] only

        For more information, try '--help'.

        ===== "[::]:0"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: invalid value '[::]:0' for '--listen <LISTEN>': [::]:0 is not a loopback address; the gateway listens on 127.0.0.0/8 or [::1] only

        For more information, try '--help'.

        ===== "192.168.1.10:0"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: invalid value '192.168.1.10:0' for '--listen <LISTEN>': 192.168.1.10:0 is not a loopback address; the gateway listens on 127.0.0.0/8 or [::1] only

        For more information, try '--help'.

        ===== "10.1.2.3:4000"
        success: false
        exit_code: 2
        ----- stdout -----

        ----- stderr -----
        error: invalid value '10.1.2.3:4000' for '--listen <LISTEN>': 10.1.2.3:4000 is not a loopback address; the gateway listens on 127.0.0.0/8 or [::1] only

        For more information, try '--help'.
    "#);
    assert!(!dir.path().join("store").exists());
}

#[test]
fn issue12_gateway_refuses_requests_without_the_secret() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let known = store.join("branch/main/@/ccache/aa/known");
    let served = serve(dir.path(), &store, TRUSTED);
    let url = served.url.clone();
    // The trusted build's own (signed) entry.
    let c = reqwest::Client::new();
    assert_eq!(
        request(
            &c,
            "PUT",
            &format!("{url}/ccache/aa/known"),
            Some("trusted entry")
        )
        .0,
        201
    );
    let stored = std::fs::read(&known).unwrap();
    let shape = regex::Regex::new(r"^http://127\.0\.0\.1:[0-9]+/[0-9a-f]{32}$").unwrap();
    assert!(shape.is_match(&url), "no secret in {url:?}");
    let url_file = std::fs::read_dir(dir.path())
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.file_name().unwrap().to_str().unwrap().starts_with("url-"))
        .unwrap();
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt;
        let mode = std::fs::metadata(&url_file).unwrap().permissions().mode() & 0o777;
        assert_eq!(mode, 0o600, "the URL file holds the secret");
    }
    let (base, secret) = url.rsplit_once('/').unwrap();
    let wrong = SECRET_LIKE;
    assert_ne!(secret, wrong);
    let attempts: Vec<(&str, String)> = vec![
        ("PUT", format!("{base}/ccache/aa/evil")),
        ("PUT", format!("{base}/{wrong}/ccache/aa/evil")),
        ("PUT", format!("{base}/{}/ccache/aa/evil", &secret[..31])),
        ("PUT", format!("{base}/{secret}x/ccache/aa/evil")),
        ("PUT", format!("{base}/x/{secret}/ccache/aa/evil")),
        (
            "PUT",
            format!("{base}/{}/ccache/aa/evil", secret.to_uppercase()),
        ),
        ("MKCOL", format!("{base}/{wrong}/ccache/")),
        ("GET", format!("{base}/ccache/aa/known")),
        ("GET", format!("{base}/{wrong}/ccache/aa/known")),
        ("HEAD", format!("{base}/{wrong}/ccache/aa/known")),
        ("PROPFIND", format!("{base}/{wrong}/ccache/aa/known")),
        ("PROPFIND", format!("{base}/")),
        ("GET", format!("{base}/_vouch/stats")),
        ("GET", format!("{base}/{wrong}/_vouch/stats")),
    ];
    for (method, u) in &attempts {
        let (status, body) = request(&c, method, u, Some("poison"));
        assert_eq!(status, 403, "{method} {u}: {body}");
        assert!(
            !body.contains("trusted entry"),
            "{method} {u} read the store"
        );
    }
    assert_eq!(
        dir_entries(&store),
        ["branch/main/@/ccache/aa/known"],
        "a request without the secret wrote to the store"
    );
    assert_eq!(std::fs::read(&known).unwrap(), stored);
    // With the secret, the same gateway serves reads and writes.
    assert_eq!(
        request(&c, "GET", &format!("{url}/ccache/aa/known"), None),
        (200, "trusted entry".to_owned())
    );
    assert_eq!(
        request(&c, "PUT", &format!("{url}/ccache/bb/new"), Some("x")).0,
        201
    );
    let (status, stats) = request(&c, "GET", &format!("{url}/_vouch/stats"), None);
    assert_eq!(status, 200);
    let stats: Value = serde_json::from_str(&stats).unwrap();
    assert_eq!(stats["unauthorized"], attempts.len() as u64, "{stats}");
    // Two writes: the signed entry this test started with, and the one above.
    assert_eq!(
        (stats["hits"].as_u64(), stats["writes"].as_u64()),
        (Some(1), Some(2))
    );
}

/// Read-only triggers read the trusted scope and never write: the check a mutant removed
/// (it wrote into branch/main's cache) with every test still passing.
#[test]
fn issue12_read_only_triggers_refuse_put() {
    let redis = RedisServer::start();
    let triggers: [&[&str]; 2] = [
        &[
            "--event",
            "pull_request_target",
            "--ref",
            "refs/heads/main",
            "--pr",
            "7",
            "--base-ref",
            "main",
        ],
        &["--event", "workflow_run", "--ref", "refs/heads/main"],
    ];
    for trigger in triggers {
        for on_redis in [false, true] {
            let dir = tempdir();
            let store_dir = dir.path().join("store");
            let store = if on_redis {
                redis.cli(&["FLUSHALL"]);
                redis.url()
            } else {
                store_dir.display().to_string()
            };
            {
                // The trusted build's own (signed) entry, through its gateway.
                let main = serve(dir.path(), &store, TRUSTED);
                let c = reqwest::Client::new();
                let put = format!("{}/ccache/aa/known", main.url);
                assert_eq!(request(&c, "PUT", &put, Some("trusted entry")).0, 201);
            }
            let what = format!("{} on {store}", trigger[1]);
            let served = serve(dir.path(), &store, trigger);
            let url = &served.url;
            let c = reqwest::Client::new();
            assert_eq!(
                request(&c, "GET", &format!("{url}/ccache/aa/known"), None),
                (200, "trusted entry".to_owned()),
                "{what}: reads branch/main"
            );
            for key in ["ccache/aa/known", "ccache/bb/new", "sccache/c/d/e"] {
                let (status, body) = request(&c, "PUT", &format!("{url}/{key}"), Some("poison"));
                assert_eq!(status, 403, "{what}: PUT {key}: {body}");
            }
            assert_eq!(
                request(&c, "MKCOL", &format!("{url}/sccache/c/"), None).0,
                405,
                "{what}"
            );
            let (_, stats) = request(&c, "GET", &format!("{url}/_vouch/stats"), None);
            let stats: Value = serde_json::from_str(&stats).unwrap();
            assert_eq!(stats["write_scope"], Value::Null, "{what}");
            assert_eq!(stats["writes"], 0, "{what}");
            assert_eq!(stats["refused_writes"], 3, "{what}");
            drop(served);
            if on_redis {
                assert_eq!(
                    redis.cli(&["--raw", "KEYS", "*"]).trim(),
                    "branch/main/@/ccache/aa/known",
                    "{what}: a new entry was written"
                );
                // The signed entry, its bytes last.
                assert!(
                    redis
                        .cli(&["--raw", "GET", "branch/main/@/ccache/aa/known"])
                        .trim()
                        .ends_with("trusted entry")
                );
            } else {
                assert_eq!(
                    dir_entries(&store_dir),
                    ["branch/main/@/ccache/aa/known"],
                    "{what}: a new entry was written"
                );
                assert!(
                    std::fs::read(store_dir.join("branch/main/@/ccache/aa/known"))
                        .unwrap()
                        .ends_with(b"trusted entry")
                );
            }
        }
    }
}

#[test]
fn issue12_cache_errors_are_typed_usage_errors() {
    let dir = tempdir();
    let cases: Vec<(Vec<String>, &str)> = vec![
        (vec!["stats".into(), "--url".into(), "junk".into()], "junk"),
        (
            vec![
                "check".into(),
                "--cache-store".into(),
                "s3://bucket?region=x&regoin=y".into(),
                "--event".into(),
                "push".into(),
                "--ref".into(),
                "refs/heads/main".into(),
            ],
            "option \"regoin\" is not one of region, endpoint, access_key_id",
        ),
        (
            vec![
                "serve".into(),
                "--cache-store".into(),
                "ftp://u:secretpw@host/x".into(),
                "--event".into(),
                "push".into(),
            ],
            "expected a directory path or file:///path, redis://",
        ),
        (
            vec![
                "serve".into(),
                "--cache-store".into(),
                dir.path().join("store").display().to_string(),
                "--password-file".into(),
                "/dev/null".into(),
                "--event".into(),
                "push".into(),
                "--ref".into(),
                "refs/heads/main".into(),
            ],
            "a password file does not apply to directory stores",
        ),
        (
            vec![
                "check".into(),
                "--cache-store".into(),
                "redis://127.0.0.1:1".into(),
            ],
            "give --event",
        ),
        // Flags the event's policy would drop.
        (
            vec![
                "check".into(),
                "--cache-store".into(),
                "redis://127.0.0.1:1".into(),
                "--event".into(),
                "push".into(),
                "--ref".into(),
                "refs/heads/main".into(),
                "--pr".into(),
                "7".into(),
            ],
            "--pr and --base-ref describe a pull request",
        ),
        (
            vec![
                "check".into(),
                "--cache-store".into(),
                "redis://127.0.0.1:1".into(),
                "--event".into(),
                "pull_request".into(),
                "--ref".into(),
                "refs/pull/8/merge".into(),
                "--pr".into(),
                "7".into(),
                "--base-ref".into(),
                "main".into(),
            ],
            "is not refs/pull/<N>/… for --pr 7",
        ),
    ];
    for (args, want) in cases {
        let r = run_bounded(
            std::process::Command::new(env!("CARGO_BIN_EXE_vouch"))
                .arg("cache")
                .args(&args),
            20,
        )
        .unwrap_or_else(|| panic!("{args:?} kept running"));
        assert_eq!(r.code, 2, "{args:?}: {}", r.stderr);
        assert!(r.stderr.contains(want), "{args:?}: {}", r.stderr);
        assert!(!r.stderr.contains("secretpw"), "{}", r.stderr);
    }
    // A gateway that is not there: the error names it without its secret path.
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let r = vouch_snapshot!([(format!(":{port}/").as_str(), ":[FREE_PORT]/")], vouch().args([
        "cache",
        "stats",
        "--url",
        &format!("http://127.0.0.1:{port}/{SECRET_LIKE}"),
    ]), @r#"
        success: false
        exit_code: 5
        ----- stdout -----

        ----- stderr -----
        error: cannot read the gateway's counters from http://127.0.0.1:[FREE_PORT]/…
          caused by: error sending request
          caused by: client error (Connect)
          caused by: tcp connect error
          caused by: Connection refused (os error 111)
    "#);
    assert!(!r.stderr.contains(SECRET_LIKE), "{}", r.stderr);
}

#[test]
fn issue12_stats_markdown_shows_the_tool_counters() {
    let dir = tempdir();
    let served = serve(dir.path(), dir.path().join("store"), TRUSTED);
    let r = run(vouch()
        .args([
            "cache",
            "stats",
            "--markdown",
            "--tool",
            "ccache",
            "--url",
            &served.url,
        ])
        .env("CCACHE_DIR", dir.path().join("ccache")));
    assert_eq!(r.code, 0, "{}", r.stderr);
    assert!(
        r.stdout.contains("\nccache: 0 hits, "),
        "--tool was dropped from the markdown:\n{}",
        r.stdout
    );
}

/// The GitHub cache cannot be probed (no delete); `cache check` judges the trigger: a
/// `pull_request` run is fenced by GitHub, a run with the base branch's cache access fails
/// closed. Nothing is written to the service.
#[test]
fn cache_check_github_cache_judges_the_trigger() {
    let double = vouch_testgh::cache::GhaCache::start();
    let check = |scope: &[&str]| {
        run(vouch()
            .args(["cache", "check", "--cache-store", "gha", "--json"])
            .args(scope)
            .env("ACTIONS_CACHE_SERVICE_V2", "1")
            .env("ACTIONS_RESULTS_URL", double.url())
            .env(
                "ACTIONS_RUNTIME_TOKEN",
                double.token(Some(MAIN_REF), &[MAIN_REF]),
            )
            .env_remove("GITHUB_SERVER_URL"))
    };
    let pr = check(PR7);
    assert_eq!(pr.code, 0, "{}\n{}", pr.stdout, pr.stderr);
    assert_eq!(pr.json()["fence"], "platform");
    assert_eq!(pr.json()["probes"][0]["scope"], "refs/pull/7/merge");
    for event in ["pull_request_target", "issue_comment", "workflow_run"] {
        let r = check(&["--event", event, "--pr", "7", "--base-ref", "main"]);
        assert_eq!(r.code, 20, "{event}: {}\n{}", r.stdout, r.stderr);
        assert_eq!(r.json()["probes"][0]["scope"], "refs/heads/main", "{event}");
    }
    assert_eq!(check(TRUSTED).code, 0);
    assert!(double.entries().is_empty(), "nothing written");
    assert_eq!(double.calls().len(), 0, "nothing asked of the service");

    // Without the job's cache variables there is no GitHub cache to talk to.
    let r = run(vouch()
        .args(["cache", "check", "--cache-store", "gha"])
        .args(PR7)
        .env_remove("ACTIONS_CACHE_SERVICE_V2")
        .env_remove("ACTIONS_RESULTS_URL")
        .env_remove("ACTIONS_RUNTIME_TOKEN"));
    assert_exit(
        &r,
        5,
        "the gha store needs ACTIONS_CACHE_SERVICE_V2 in the environment: vouch speaks the v2 cache service only",
    );
}

/// A PR build's entries land in its merge ref's scope on the GitHub cache, and a trusted
/// build's token cannot see them at all (GitHub's fence under vouch's).
#[test]
fn github_cache_double_scopes_pr_entries_to_the_merge_ref() {
    let s = Scenario::new();
    let store = Backing::start("gha", s.dir.path());
    s.build(&s.original, "t1", Some(("sccache", &store, TRUSTED)));
    let pr = s.build(&s.original, "pr", Some(("sccache", &store, PR7)));
    assert_eq!(
        compile_counts(&pr).0,
        2,
        "the PR build reads main's entries: {pr}"
    );
    let Backing::Gha(double) = &store else {
        unreachable!()
    };
    let refs: std::collections::BTreeSet<String> =
        double.entries().into_iter().map(|e| e.scope_ref).collect();
    assert!(
        refs.iter().all(|r| r == MAIN_REF || r == PR7_REF),
        "{refs:?}"
    );
    assert!(double.entries().iter().all(|e| {
        let k = e.key.trim_start_matches('/');
        (e.scope_ref == MAIN_REF) == k.starts_with("vouch/branch/main/")
    }));
}
