//! Shared harness for the integration tests: running the real `vouch` binary, temp
//! dirs, crafting wheels, and filters that make output snapshot-stable.
//!
//! Snapshot or `contains`? CLI output is snapshotted with `vouch_snapshot!` wherever the
//! filters make it the same on every machine. `contains` stays for: secrets that must never
//! appear (a negative check says that intent whatever else changes); output that embeds a real
//! tool's text (pip, setuptools, gcc, ccache) or a -vvv trace, which varies with versions and
//! timing; and text that is not CLI output (files written, JSON fields, summaries).
#![allow(dead_code)]

use std::io::Write as _;
use std::path::{Path, PathBuf};
use std::process::Command;
use std::sync::OnceLock;

use sha2::{Digest as _, Sha256};

#[derive(Clone)]
pub struct Run {
    pub code: i32,
    pub stdout: String,
    pub stderr: String,
}

impl Run {
    pub fn json(&self) -> serde_json::Value {
        serde_json::from_str(&self.stdout)
            .unwrap_or_else(|e| panic!("stdout is not JSON ({e}):\n{}", self.stdout))
    }
}

pub fn repo_root() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR"))
}

/// Build venvs are shared by every test (vouch creates them atomically), so only the first
/// test pays for `pip install`.
pub fn cache_dir() -> PathBuf {
    PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("vouch-cache")
}

pub fn vouch() -> Command {
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vouch"));
    // The suite's own work directory, so it never waits for (or on) a real build holding the
    // canonical one; the tests of the canonical path remove it.
    cmd.env("VOUCH_CACHE_DIR", cache_dir())
        .env("VOUCH_WORK_DIR", cache_dir().join("work"))
        .env_remove("SOURCE_DATE_EPOCH")
        .env_remove("VOUCH_LOG");
    cmd
}

/// Asserts that `r` exited with `code` and that its stderr says `expected`; either failure shows
/// the stderr.
#[track_caller]
pub fn assert_exit(r: &Run, code: i32, expected: &str) {
    assert_eq!(r.code, code, "{}", r.stderr);
    assert!(r.stderr.contains(expected), "{}", r.stderr);
}

pub fn run(cmd: &mut Command) -> Run {
    let out = cmd.output().expect("spawn");
    Run {
        code: out.status.code().unwrap_or(-1),
        stdout: String::from_utf8_lossy(&out.stdout).into_owned(),
        stderr: String::from_utf8_lossy(&out.stderr).into_owned(),
    }
}

pub fn tempdir() -> tempfile::TempDir {
    tempfile::Builder::new()
        .prefix("vouch-test-")
        .tempdir()
        .unwrap()
}

/// Replaces things that change from run to run, so messages can be snapshotted.
pub fn filter(text: &str, dirs: &[&Path]) -> String {
    let mut out = text.to_owned();
    for (i, d) in dirs.iter().enumerate() {
        out = out.replace(&d.display().to_string(), &format!("[DIR{i}]"));
    }
    static HEX: OnceLock<regex::Regex> = OnceLock::new();
    let hex = HEX.get_or_init(|| regex::Regex::new(r"[0-9a-f]{64}").unwrap());
    hex.replace_all(&out, "[SHA256]").into_owned()
}

pub fn sha256_file(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

pub fn record_hash(data: &[u8]) -> String {
    use base64::Engine as _;
    format!(
        "sha256={}",
        base64::engine::general_purpose::URL_SAFE_NO_PAD.encode(Sha256::digest(data))
    )
}

/// Copies the bundled sample package into `dest`.
pub fn copy_sample(dest: &Path) {
    let src = repo_root().join("pyproject-templates/sample");
    for entry in walk(&src) {
        let rel = entry.strip_prefix(&src).unwrap();
        let first = rel
            .components()
            .next()
            .unwrap()
            .as_os_str()
            .to_string_lossy()
            .into_owned();
        if first == "build"
            || first.ends_with(".egg-info")
            || rel.to_string_lossy().contains("__pycache__")
        {
            continue;
        }
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&entry, &to).unwrap();
    }
}

/// The sample package copied under `dir` and built there by vouch (`dir/wheels`, with its
/// own work directory): a real wheel pip installs.
pub fn build_sample_wheel(dir: &Path) -> PathBuf {
    let src = dir.join("sample");
    copy_sample(&src);
    let built = run(vouch()
        .arg("build")
        .arg("--source")
        .arg(&src)
        .arg("--out")
        .arg(dir.join("wheels"))
        .arg("--work-dir")
        .arg(dir.join("work"))
        .arg("--json"));
    assert_eq!(built.code, 0, "{}", built.stderr);
    PathBuf::from(built.json()["wheel"].as_str().unwrap())
}

/// Every file under `dir`, sorted.
pub fn walk(dir: &Path) -> Vec<PathBuf> {
    let mut out = Vec::new();
    for e in std::fs::read_dir(dir).unwrap() {
        let p = e.unwrap().path();
        if p.is_dir() {
            out.extend(walk(&p));
        } else {
            out.push(p);
        }
    }
    out.sort();
    out
}

/// One member of a crafted wheel.
#[derive(Clone, Copy)]
pub struct Entry<'a> {
    pub name: &'a str,
    pub data: &'a [u8],
    pub mode: u32,
}

pub fn entry<'a>(name: &'a str, data: &'a [u8]) -> Entry<'a> {
    Entry {
        name,
        data,
        mode: 0o644,
    }
}

/// Writes a zip with exactly these members, in this order, with the zip crate.
pub fn write_zip(path: &Path, entries: &[Entry<'_>]) {
    let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for e in entries {
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Deflated)
            .unix_permissions(e.mode);
        w.start_file(e.name, opts).unwrap();
        w.write_all(e.data).unwrap();
    }
    w.finish().unwrap();
}

/// RECORD text listing `entries` truthfully, plus the RECORD line.
pub fn record_for(entries: &[Entry<'_>], record_path: &str) -> Vec<u8> {
    let mut s = String::new();
    for e in entries {
        s.push_str(&format!(
            "{},{},{}\n",
            e.name,
            record_hash(e.data),
            e.data.len()
        ));
    }
    s.push_str(&format!("{record_path},,\n"));
    s.into_bytes()
}

pub const DEMO_DIST_INFO: &str = "demo-1.0.dist-info";
pub const DEMO_WHEEL: &str = "demo-1.0-py3-none-any.whl";

/// A valid pure-Python wheel `demo-1.0` with the given payload (RECORD appended).
pub fn write_valid_wheel(dir: &Path, payload: &[Entry<'_>]) -> PathBuf {
    let metadata = b"Metadata-Version: 2.1\nName: demo\nVersion: 1.0\n".as_slice();
    let wheel = b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n"
        .as_slice();
    let mut entries: Vec<Entry<'_>> = payload
        .iter()
        .map(|e| Entry {
            name: e.name,
            data: e.data,
            mode: e.mode,
        })
        .collect();
    entries.push(entry("demo-1.0.dist-info/METADATA", metadata));
    entries.push(entry("demo-1.0.dist-info/WHEEL", wheel));
    let record = record_for(&entries, "demo-1.0.dist-info/RECORD");
    entries.push(entry("demo-1.0.dist-info/RECORD", &record));
    let path = dir.join(DEMO_WHEEL);
    write_zip(&path, &entries);
    path
}

/// A Python venv for install tests, created once per test binary.
pub fn test_venv() -> &'static Path {
    static VENV: OnceLock<PathBuf> = OnceLock::new();
    VENV.get_or_init(|| {
        let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR"))
            .join(format!("test-venv-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        make_venv(&dir);
        dir
    })
}

/// A fresh `python3 -m venv` at `dir`.
pub fn make_venv(dir: &Path) {
    let st = Command::new("python3")
        .args(["-m", "venv"])
        .arg(dir)
        .status()
        .unwrap();
    assert!(st.success(), "python3 -m venv {dir:?} failed");
}

pub fn venv_python() -> PathBuf {
    test_venv().join("bin/python")
}

/// A real `redis-server` on a free loopback port, stopped on drop.
pub struct RedisServer {
    pub port: u16,
    child: std::process::Child,
    _dir: tempfile::TempDir,
}

impl RedisServer {
    pub fn start() -> RedisServer {
        let dir = tempdir();
        let port = std::net::TcpListener::bind("127.0.0.1:0")
            .unwrap()
            .local_addr()
            .unwrap()
            .port();
        let child = Command::new("redis-server")
            .args([
                "--bind",
                "127.0.0.1",
                "--port",
                &port.to_string(),
                "--save",
                "",
                "--appendonly",
                "no",
                "--dir",
            ])
            .arg(dir.path())
            .stdout(std::process::Stdio::null())
            .spawn()
            .expect("redis-server must be installed (.ci/run installs it)");
        let server = RedisServer {
            port,
            child,
            _dir: dir,
        };
        for _ in 0..100 {
            if std::net::TcpStream::connect(("127.0.0.1", port)).is_ok() {
                return server;
            }
            std::thread::sleep(std::time::Duration::from_millis(50));
        }
        panic!("redis-server did not start on {port}");
    }

    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}", self.port)
    }

    /// Runs a command as the default (admin) user.
    pub fn cli(&self, args: &[&str]) -> String {
        let out = Command::new("redis-cli")
            .args(["-p", &self.port.to_string()])
            .args(args)
            .output()
            .expect("redis-cli");
        String::from_utf8_lossy(&out.stdout).into_owned()
    }
}

impl Drop for RedisServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

/// The suite's seal key for trusted cache builds (a fixture, not a secret), and the public key
/// `vouch cache public-key` derives from it (a test holds the two equal).
pub fn test_seal_key() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/fixtures/cache-seal-key")
}
pub const TEST_CACHE_PUBLIC_KEY: &str = "ed25519:0RkOBSBE1Zm8j1K/foEzQao6LsBDpz3bnkfmllfrGno=";

/// Gives a cache build or gateway under the scope flags `scope` the keys its trust level
/// has, as the generated workflows do: a pull request's only the public key, anything else
/// (trusted) the seal key, which signs.
pub fn cache_keys(cmd: &mut Command, scope: &[&str]) {
    if scope.contains(&"pull_request") {
        cmd.env("VOUCH_CACHE_PUBLIC_KEY", TEST_CACHE_PUBLIC_KEY)
            .env_remove("VOUCH_SEAL_KEY_FILE");
    } else {
        cmd.env("VOUCH_SEAL_KEY_FILE", test_seal_key())
            .env_remove("VOUCH_CACHE_PUBLIC_KEY");
    }
}

/// The bytes a cache entry as the gateway stores it carries: after the frame's magic and
/// Ed25519 signature (`vouch_cache::entry`).
pub fn entry_payload(stored: &[u8]) -> &[u8] {
    assert!(stored.starts_with(b"vouchce2"), "not a signed cache entry");
    &stored[8 + 64..]
}

/// `vouch cache serve` scope flags: a trusted push to main.
pub const TRUSTED: &[&str] = &["--event", "push", "--ref", "refs/heads/main"];
/// A pull request #7 against main: reads branch/main only, writes nothing.
pub const PR7: &[&str] = &[
    "--event",
    "pull_request",
    "--ref",
    "refs/pull/7/merge",
    "--pr",
    "7",
    "--base-ref",
    "main",
];

/// `vouch cache serve` in the background; killed on drop.
pub struct Served {
    child: std::process::Child,
    pub url: String,
    /// What `cache serve --url-file` wrote.
    pub url_file: PathBuf,
}

impl Drop for Served {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

pub fn serve(dir: &Path, store: impl AsRef<std::ffi::OsStr>, args: &[&str]) -> Served {
    let url_file = dir.join(format!(
        "url-{}",
        args.join("-").replace(['/', ':', '.'], "_")
    ));
    let mut cmd = Command::new(env!("CARGO_BIN_EXE_vouch"));
    cache_keys(&mut cmd, args);
    let child = cmd
        .args(["cache", "serve", "--cache-store"])
        .arg(store)
        .args(args)
        .arg("--url-file")
        .arg(&url_file)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::null())
        .spawn()
        .unwrap();
    // From here on, dropping `served` kills and reaps the child, panic or not.
    let mut served = Served {
        child,
        url: String::new(),
        url_file: url_file.clone(),
    };
    for _ in 0..100 {
        if let Ok(url) = std::fs::read_to_string(&url_file) {
            served.url = url;
            return served;
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
    panic!("vouch cache serve did not start");
}

/// Shaped like a gateway secret (32 hex digits); no gateway draws it.
pub const SECRET_LIKE: &str = "0123456789abcdef0123456789abcdef";

/// One HTTP request to a gateway: (status, body).
pub fn request(c: &reqwest::Client, method: &str, url: &str, body: Option<&str>) -> (u16, String) {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut r = c.request(reqwest::Method::from_bytes(method.as_bytes()).unwrap(), url);
        if let Some(b) = body {
            r = r.body(b.to_owned());
        }
        let resp = r.send().await.unwrap();
        let status = resp.status().as_u16();
        (status, resp.text().await.unwrap_or_default())
    })
}

/// `vouch attest FILE --out BUNDLE`, keyless against a local Sigstore instance, in a GitHub
/// Actions environment that matches `claims` (then `env` overrides, e.g. a lying run id).
/// Checks the token file is consumed and the token never printed.
pub fn attest_keyless(
    sigstore: &vouch_testsig::LocalSigstore,
    claims: &vouch_testsig::GithubClaims,
    file: &Path,
    bundle: &Path,
    event_payload: Option<&str>,
    env: &[(&str, &str)],
    extra: &[&str],
) -> Run {
    let jwt = sigstore.mint_token(claims);
    let token = bundle.with_extension("token");
    std::fs::write(&token, &jwt).unwrap();
    let mut cmd = vouch();
    cmd.arg("-vvv")
        .arg("attest")
        .arg(file)
        .arg("--out")
        .arg(bundle)
        .args([
            "--signer",
            "sigstore",
            "--fulcio-url",
            &sigstore.url,
            "--rekor-url",
            &sigstore.url,
            "--oidc-token-file",
        ])
        .arg(&token)
        .args(extra)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_REPOSITORY", &claims.repository)
        .env("GITHUB_REPOSITORY_ID", &claims.repository_id)
        .env("GITHUB_REPOSITORY_OWNER_ID", &claims.repository_owner_id)
        .env("GITHUB_WORKFLOW_REF", &claims.workflow_ref)
        .env("GITHUB_REF", &claims.git_ref)
        .env("GITHUB_SHA", &claims.sha)
        .env("GITHUB_EVENT_NAME", &claims.event_name)
        .env("GITHUB_RUN_ID", &claims.run_id)
        .env("GITHUB_RUN_ATTEMPT", &claims.run_attempt)
        .env("RUNNER_ENVIRONMENT", &claims.runner_environment)
        .env_remove("GITHUB_EVENT_PATH");
    if let Some(payload) = event_payload {
        let event = bundle.with_extension("event.json");
        std::fs::write(&event, payload).unwrap();
        cmd.env("GITHUB_EVENT_PATH", event);
    }
    for (k, v) in env {
        cmd.env(k, v);
    }
    let r = run(&mut cmd);
    assert!(!token.exists(), "the token file is removed after reading");
    // The token is a bearer credential: never in output, even at trace level or on failure.
    let signature_part = jwt.rsplit('.').next().unwrap();
    assert!(
        !r.stdout.contains(signature_part) && !r.stderr.contains(signature_part),
        "token leaked:\n{}",
        r.stderr
    );
    r
}

/// Runs `cmd`, killing it and failing the test if it takes longer than `limit`: for inputs that
/// once made vouch wait forever (a FIFO), so a regression fails instead of hanging CI.
pub fn run_with_timeout(cmd: &mut Command, limit: std::time::Duration) -> Run {
    use std::io::Read as _;
    let mut child = cmd
        .stdin(std::process::Stdio::null())
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .expect("spawn");
    let drain = |mut r: Box<dyn std::io::Read + Send>| {
        std::thread::spawn(move || {
            let mut s = Vec::new();
            let _ = r.read_to_end(&mut s);
            String::from_utf8_lossy(&s).into_owned()
        })
    };
    let out = drain(Box::new(child.stdout.take().unwrap()));
    let err = drain(Box::new(child.stderr.take().unwrap()));
    let start = std::time::Instant::now();
    let status = loop {
        if let Some(st) = child.try_wait().unwrap() {
            break st;
        }
        if start.elapsed() > limit {
            let _ = child.kill();
            let _ = child.wait();
            panic!("{cmd:?} did not finish within {limit:?}");
        }
        std::thread::sleep(std::time::Duration::from_millis(50));
    };
    Run {
        code: status.code().unwrap_or(-1),
        stdout: out.join().unwrap(),
        stderr: err.join().unwrap(),
    }
}

/// A FIFO at `path` (`mkfifo`), which nothing ever writes to.
pub fn mkfifo(path: &Path) {
    let st = Command::new("mkfifo").arg(path).status().expect("mkfifo");
    assert!(st.success(), "mkfifo {path:?} failed");
}

/// `vouch keygen` into `dir`: (private key, public key).
pub fn keygen(dir: &Path, name: &str) -> (PathBuf, PathBuf) {
    let key = dir.join(name);
    let r = run(vouch().arg("keygen").arg("--out").arg(&key));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let public = PathBuf::from(format!("{}.pub", key.display()));
    (key, public)
}

/// `vouch attest FILE --out BUNDLE --signer key:KEY`, for the caller to add the build context.
pub fn attest_with_key(file: &Path, bundle: impl AsRef<std::ffi::OsStr>, key: &Path) -> Command {
    let mut cmd = vouch();
    cmd.arg("attest")
        .arg(file)
        .arg("--out")
        .arg(bundle)
        .arg("--signer")
        .arg(format!("key:{}", key.display()));
    cmd
}

// ---------------------------------------------------------------- snapshots

/// What `vouch_snapshot!` runs: a command (spawned here) or a `Run` some helper already made.
pub trait IntoRun {
    fn into_run(self) -> Run;
}

impl IntoRun for &mut Command {
    fn into_run(self) -> Run {
        run(self)
    }
}

impl IntoRun for Command {
    fn into_run(mut self) -> Run {
        run(&mut self)
    }
}

impl IntoRun for Run {
    fn into_run(self) -> Run {
        self
    }
}

impl IntoRun for &Run {
    fn into_run(self) -> Run {
        self.clone()
    }
}

/// Replacements that make any run's output the same from machine to machine and run to run:
/// temp dirs, the checkout, digests, loopback ports and durations. Later filters see the text
/// the earlier ones left, so the specific (paths) come before the general (hex).
fn default_filters() -> Vec<(String, String)> {
    let temp = std::env::temp_dir();
    let temp = temp.to_string_lossy();
    let temp = temp.trim_end_matches('/');
    vec![
        // Logs (-v and up): info, debug and trace lines are diagnostics (and dependencies'
        // chatter, which varies by machine and timing), not the CLI's output; what the user
        // is told comes as `error:`/`warning:` lines and stays.
        (r"(?m)^ *(TRACE|DEBUG|INFO) .*\n".into(), String::new()),
        (
            regex::escape(env!("CARGO_TARGET_TMPDIR")),
            "[TARGET_TMP]".into(),
        ),
        (
            format!(r"{}/vouch-test-[A-Za-z0-9]+", regex::escape(temp)),
            "[TEMP]".into(),
        ),
        (regex::escape(env!("CARGO_MANIFEST_DIR")), "[REPO]".into()),
        (r"[0-9a-f]{64}".into(), "[SHA256]".into()),
        (
            r"\b(127\.0\.0\.1|0\.0\.0\.0|localhost):[0-9]+".into(),
            "$1:[PORT]".into(),
        ),
        (r"\b[0-9]+(\.[0-9]+)?(ms|s)\b".into(), "[TIME]".into()),
        // Diff context lines of empty lines end in a space, which editors strip from sources.
        (r"(?m)[ \t]+$".into(), String::new()),
    ]
}

/// `run` as one text, in the shape of uv's snapshots: success and exit code, then stdout and
/// stderr, after `extra` filters (regex, replacement) and then the default ones.
pub fn snapshot_text(run: &Run, extra: &[(&str, &str)]) -> String {
    let mut filters: Vec<(String, String)> = extra
        .iter()
        .map(|(r, s)| ((*r).to_owned(), (*s).to_owned()))
        .collect();
    filters.extend(default_filters());
    let apply = |text: &str| {
        filters.iter().fold(text.to_owned(), |text, (re, with)| {
            regex::Regex::new(re)
                .unwrap_or_else(|e| panic!("filter {re:?}: {e}"))
                .replace_all(&text, with.as_str())
                .into_owned()
        })
    };
    format!(
        "success: {}\nexit_code: {}\n----- stdout -----\n{}\n----- stderr -----\n{}",
        run.code == 0,
        run.code,
        apply(&run.stdout),
        apply(&run.stderr)
    )
}

/// Runs a `vouch` command (or takes a `Run`) and snapshots its exit code, stdout and stderr
/// together, filtered (see `snapshot_text`); evaluates to the `Run` for further checks.
///
/// `vouch_snapshot!(vouch().arg("name"), @"...")`, or with extra filters first:
/// `vouch_snapshot!([(r"pkg-[0-9]+", "pkg-[N]")], cmd, @"...")`.
#[macro_export]
macro_rules! vouch_snapshot {
    ([$($filter:expr),* $(,)?], $cmd:expr, @$snapshot:literal) => {{
        let run = $crate::common::IntoRun::into_run($cmd);
        ::insta::assert_snapshot!(
            $crate::common::snapshot_text(&run, &[$($filter),*]),
            @$snapshot
        );
        run
    }};
    ($cmd:expr, @$snapshot:literal) => {{
        $crate::vouch_snapshot!([], $cmd, @$snapshot)
    }};
}

/// Labelled runs as one snapshot text, for tables of cases: the diff of a changed snapshot
/// names each case that changed by its label.
pub fn snapshot_cases<L: std::fmt::Debug>(
    cases: impl IntoIterator<Item = (L, Run)>,
    extra: &[(&str, &str)],
) -> String {
    cases
        .into_iter()
        .map(|(label, run)| format!("===== {label:?}\n{}", snapshot_text(&run, extra)))
        .collect::<Vec<_>>()
        .join("\n")
}

/// `gh attestation verify FILE --bundle BUNDLE` offline, trusting `root` (a trusted_root.json)
/// as `--custom-trusted-root`, with no token, host or user config of the machine's. gh must be
/// the pinned 2.102.0 (`scripts/test-tools.txt`): Debian's has no `attestation` command.
pub fn gh_attestation_verify(root: &Path, file: &Path, bundle: &Path, extra: &[&str]) -> Run {
    let version = run(Command::new("gh").arg("--version"));
    assert!(
        version.stdout.contains("gh version 2.102.0"),
        "not the pinned gh: {}",
        version.stdout
    );
    let dir = bundle.parent().unwrap();
    // gh reads a custom trusted root as JSON Lines: one root per line.
    let parsed: serde_json::Value =
        serde_json::from_str(&std::fs::read_to_string(root).unwrap()).unwrap();
    let jsonl = dir.join("gh-trusted-root.jsonl");
    std::fs::write(&jsonl, format!("{parsed}\n")).unwrap();
    let home = dir.join("gh-home");
    std::fs::create_dir_all(&home).unwrap();
    run(Command::new("gh")
        .args(["attestation", "verify"])
        .arg(file)
        .arg("--bundle")
        .arg(bundle)
        .arg("--custom-trusted-root")
        .arg(&jsonl)
        .args(extra)
        .env("HOME", &home)
        .env("GH_CONFIG_DIR", &home)
        .env("GH_NO_UPDATE_NOTIFIER", "1")
        .env_remove("GH_TOKEN")
        .env_remove("GITHUB_TOKEN")
        .env_remove("GH_HOST"))
}
