//! `vouch lock` and builds from hash-locked build tools, against a real PEP 503 index on
//! 127.0.0.1 serving real wheels (downloaded from PyPI once per target directory): the lock
//! is stable, a rebuilt venv gets the same files, and an index that serves another file for a
//! pinned version is refused before anything is installed.

use std::collections::BTreeMap;
use std::io::{BufRead as _, BufReader, Write as _};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};

use crate::common::{copy_sample, run, sha256_file, tempdir, vouch};

/// The host interpreter's `X.Y`: the test profile's one Python.
fn host_python() -> String {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .unwrap();
    String::from_utf8(out.stdout).unwrap().trim().to_owned()
}

/// vouch's build tools for linux-64 with their dependencies, and uv, as wheels: downloaded
/// with the host's pip once, then served by every test's index.
fn wheels() -> PathBuf {
    static ONCE: Mutex<()> = Mutex::new(());
    let _guard = ONCE.lock().unwrap_or_else(|e| e.into_inner());
    let dir = PathBuf::from(env!("CARGO_TARGET_TMPDIR")).join("lock-wheels");
    let done = dir.join(".complete");
    if !done.exists() {
        let mut reqs = vouch_build::lock::tool_requirements(vouch_core::Platform::Linux64);
        reqs.push(format!("uv=={}", vouch_build::lock::UV_VERSION));
        let status = std::process::Command::new("python3")
            .args([
                "-m",
                "pip",
                "download",
                "--quiet",
                "--only-binary=:all:",
                "-d",
            ])
            .arg(&dir)
            .args(&reqs)
            .status()
            .unwrap();
        assert!(status.success(), "pip download {reqs:?}");
        std::fs::write(&done, "").unwrap();
    }
    dir
}

/// A PEP 503 simple index over a directory of wheels. With `tamper` set, every file of
/// `tamper_project` is served with bytes appended: same name, same version, another sha256.
struct Index {
    url: String,
    tamper: Arc<AtomicBool>,
    downloads: Arc<AtomicUsize>,
}

fn project_of(file: &str) -> String {
    vouch_core::normalize_dist_name(file.split('-').next().unwrap_or_default())
}

const TAMPER_PROJECT: &str = "setuptools";
const TAMPER_SUFFIX: &[u8] = b"not the file that was locked";

impl Index {
    fn start(dir: &Path) -> Index {
        let files: BTreeMap<String, Vec<u8>> = std::fs::read_dir(dir)
            .unwrap()
            .flatten()
            .filter(|e| e.file_name().to_string_lossy().ends_with(".whl"))
            .map(|e| {
                (
                    e.file_name().to_string_lossy().into_owned(),
                    std::fs::read(e.path()).unwrap(),
                )
            })
            .collect();
        let files = Arc::new(files);
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        let url = format!("http://{}/simple/", listener.local_addr().unwrap());
        let tamper = Arc::new(AtomicBool::new(false));
        let downloads = Arc::new(AtomicUsize::new(0));
        let (t, d) = (tamper.clone(), downloads.clone());
        // The listener thread lives as long as the test process; every test has its own port.
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                let (files, t, d) = (files.clone(), t.clone(), d.clone());
                std::thread::spawn(move || serve(stream, &files, &t, &d));
            }
        });
        Index {
            url,
            tamper,
            downloads,
        }
    }
}

fn serve(
    mut stream: std::net::TcpStream,
    files: &BTreeMap<String, Vec<u8>>,
    tamper: &AtomicBool,
    downloads: &AtomicUsize,
) {
    let mut reader = BufReader::new(stream.try_clone().unwrap());
    let mut line = String::new();
    if reader.read_line(&mut line).is_err() {
        return;
    }
    loop {
        let mut header = String::new();
        if reader.read_line(&mut header).unwrap_or(0) == 0 || header == "\r\n" {
            break;
        }
    }
    let path = line.split(' ').nth(1).unwrap_or("/").to_owned();
    let (status, kind, body) = if let Some(name) = path
        .strip_prefix("/simple/")
        .map(|n| n.trim_end_matches('/'))
        .filter(|n| !n.is_empty())
    {
        let want = vouch_core::normalize_dist_name(name);
        let links: String = files
            .keys()
            .filter(|f| project_of(f) == want)
            .map(|f| format!("<a href=\"/files/{f}\">{f}</a><br/>\n"))
            .collect();
        if links.is_empty() {
            ("404 Not Found", "text/plain", b"no such project".to_vec())
        } else {
            let html = format!("<!DOCTYPE html><html><body>\n{links}</body></html>\n");
            ("200 OK", "text/html", html.into_bytes())
        }
    } else if let Some(bytes) = path.strip_prefix("/files/").and_then(|f| files.get(f)) {
        downloads.fetch_add(1, Ordering::SeqCst);
        let mut bytes = bytes.clone();
        if tamper.load(Ordering::SeqCst) && project_of(&path[7..]) == TAMPER_PROJECT {
            bytes.extend_from_slice(TAMPER_SUFFIX);
        }
        ("200 OK", "application/octet-stream", bytes)
    } else {
        ("404 Not Found", "text/plain", b"not found".to_vec())
    };
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: {kind}\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    let _ = stream.write_all(head.as_bytes());
    let _ = stream.write_all(&body);
}

/// The sample with a profile for the host's Python only and no lock files yet.
fn project(dir: &Path) -> PathBuf {
    let src = dir.join("sample");
    copy_sample(&src);
    let _ = std::fs::remove_dir_all(src.join("locks"));
    let profile = src.join("vouch.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    let python = text
        .lines()
        .find(|l| l.starts_with("python = "))
        .unwrap()
        .to_owned();
    std::fs::write(
        &profile,
        text.replace(&python, &format!("python = [\"{}\"]", host_python())),
    )
    .unwrap();
    src
}

/// `vouch` with the test index as pip's only source and its own cache directory.
fn vouch_at(index: &Index, cache: &Path) -> std::process::Command {
    let mut cmd = vouch();
    cmd.env("VOUCH_CACHE_DIR", cache)
        .env("PIP_INDEX_URL", &index.url)
        .env_remove("PIP_FIND_LINKS")
        .env_remove("PIP_EXTRA_INDEX_URL")
        .env("PIP_NO_CACHE_DIR", "1");
    cmd
}

fn lock(index: &Index, cache: &Path, src: &Path) -> crate::common::Run {
    run(vouch_at(index, cache).args([
        "lock",
        "--profile",
        src.join("vouch.toml").to_str().unwrap(),
        "--index-url",
        &index.url,
    ]))
}

fn build(index: &Index, cache: &Path, src: &Path, out: &Path) -> crate::common::Run {
    run(vouch_at(index, cache).args([
        "build",
        "--json",
        "--cell",
        &format!("cpu-py{}-linux-64", host_python()),
        "--profile",
        src.join("vouch.toml").to_str().unwrap(),
        "--source",
        src.to_str().unwrap(),
        "--out",
        out.to_str().unwrap(),
    ]))
}

/// `name==version sha256` per tool of a build record's lock.
fn freeze(record: &serde_json::Value) -> Vec<String> {
    record["build_lock"]["tools"]
        .as_array()
        .expect("the record lists the locked tools")
        .iter()
        .map(|t| {
            format!(
                "{}=={} sha256:{}",
                t["name"].as_str().unwrap(),
                t["version"].as_str().unwrap(),
                t["sha256"].as_str().unwrap()
            )
        })
        .collect()
}

#[test]
#[allow(clippy::print_stderr)] // the two freezes, for the acceptance note (`--nocapture`)
fn lock_is_stable_and_a_locked_build_reinstalls_the_same_tools() {
    let index = Index::start(&wheels());
    let tmp = tempdir();
    let src = project(tmp.path());
    let cache = tmp.path().join("cache");
    let lock_file = src.join(format!("locks/build-py{}-linux-64.txt", host_python()));

    let first = lock(&index, &cache, &src);
    assert_eq!(first.code, 0, "{}", first.stderr);
    let bytes = std::fs::read(&lock_file).unwrap();
    let second = lock(&index, &cache, &src);
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(
        std::fs::read(&lock_file).unwrap(),
        bytes,
        "a second `vouch lock` changed the lock"
    );
    assert!(second.stdout.contains("unchanged"), "{}", second.stdout);
    let text = String::from_utf8(bytes).unwrap();
    // Every line pins one version with the sha256 of the very wheel the index serves.
    for (file, data) in std::fs::read_dir(wheels())
        .unwrap()
        .flatten()
        .map(|e| (e.file_name().to_string_lossy().into_owned(), e.path()))
    {
        if file.ends_with(".whl") && !file.starts_with("uv-") {
            assert!(
                text.contains(&sha256_file(&data)),
                "{file} is not in the lock:\n{text}"
            );
        }
    }

    let out = tmp.path().join("out");
    let one = build(&index, &cache, &src, &out);
    assert_eq!(one.code, 0, "{}", one.stderr);
    let venvs = cache.join("untrusted/venvs");
    let before = index.downloads.load(Ordering::SeqCst);
    std::fs::remove_dir_all(&venvs).unwrap();
    let two = build(&index, &cache, &src, &out);
    assert_eq!(two.code, 0, "{}", two.stderr);
    assert!(
        index.downloads.load(Ordering::SeqCst) > before,
        "the second build did not install again"
    );

    let (one, two) = (one.json(), two.json());
    eprintln!("before deleting the venv:\n  {}", freeze(&one).join("\n  "));
    eprintln!("after deleting the venv:\n  {}", freeze(&two).join("\n  "));
    assert_eq!(freeze(&one), freeze(&two));
    assert_eq!(one["build_tools"], two["build_tools"]);
    assert_eq!(one["sha256"], two["sha256"], "same tools, same wheel");
    let lock_sha = format!("sha256:{}", sha256_file(&lock_file));
    assert_eq!(one["build_lock"]["sha256"], lock_sha.as_str());
    // The record's digests are those of the served files, not the lock's other candidates.
    for tool in one["build_lock"]["tools"].as_array().unwrap() {
        let file = wheels().join(tool["file"].as_str().unwrap());
        assert_eq!(
            tool["sha256"].as_str().unwrap(),
            sha256_file(&file),
            "{tool}"
        );
    }
}

#[test]
#[allow(clippy::print_stderr)] // the refusal as a user sees it (`--nocapture`)
fn an_index_serving_another_file_for_a_pinned_version_is_refused() {
    let index = Index::start(&wheels());
    let tmp = tempdir();
    let src = project(tmp.path());
    let cache = tmp.path().join("cache");
    let made = lock(&index, &cache, &src);
    assert_eq!(made.code, 0, "{}", made.stderr);

    index.tamper.store(true, Ordering::SeqCst);
    let out = tmp.path().join("out");
    let refused = build(&index, &cache, &src, &out);
    eprintln!("refusal:\n{}", refused.stderr);
    let served = std::fs::read_dir(wheels())
        .unwrap()
        .flatten()
        .find(|e| project_of(&e.file_name().to_string_lossy()) == TAMPER_PROJECT)
        .unwrap();
    let mut tampered = std::fs::read(served.path()).unwrap();
    tampered.extend_from_slice(TAMPER_SUFFIX);
    let got = hex::encode(<sha2::Sha256 as sha2::Digest>::digest(&tampered));
    assert_eq!(refused.code, 15, "{}", refused.stderr);
    for want in [
        format!("{}==", TAMPER_PROJECT),
        "expected sha256 ".to_owned(),
        sha256_file(&served.path()),
        format!("got sha256 {got}"),
    ] {
        assert!(
            refused.stderr.contains(&want),
            "{want:?} not in:\n{}",
            refused.stderr
        );
    }
    // Nothing half-installed is left for a later build to pick up.
    let left: Vec<String> = std::fs::read_dir(cache.join("untrusted/venvs"))
        .unwrap()
        .flatten()
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "left in the venv cache: {left:?}");
    assert!(!out.exists() || std::fs::read_dir(&out).unwrap().next().is_none());

    // The same index, honest again: the same lock builds.
    index.tamper.store(false, Ordering::SeqCst);
    let ok = build(&index, &cache, &src, &out);
    assert_eq!(ok.code, 0, "{}", ok.stderr);
}
