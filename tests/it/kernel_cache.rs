//! Issue 15: CuPy's kernel cache through the scoped gateway. The gateway's `/kv/<key>`
//! endpoint (`vouch cache serve` over a directory store), and
//! `pyproject-templates/cupy/kernel_cache/vouch_backend.py` driven by the machine's `python3`
//! against the REAL `cupy/cuda/_compiler_cache.py` of the CuPy 14.2.0 sdist.
//!
//! That file comes from `scripts/fetch-cupy-compiler-cache.py` (sha256-pinned sdist, run by
//! scripts/test.sh) into `target/test-tools/cupy-14.2.0/stub`; without it these tests fail
//! and say how to get it. Only `cupy.cuda.compiler` is a stub (the private setter and two
//! compiled facts; see tests/fixtures/kernel_cache/driver.py).

use std::path::{Path, PathBuf};
use std::time::Duration;

use serde_json::{Value, json};

use crate::common::*;

/// sha256 of `cupy/cuda/_compiler_cache.py` in `cupy-14.2.0.tar.gz` (sha256
/// cfed725e612178cfbdbf62f4a3a598b60edecbbca718c0d4580c21a16ae4a62c).
const REAL_MODULE_SHA256: &str = "ba5dbfa01eae039b865cfc399a2079ef373fa9766b5700f46e39d2a212b0fced";

/// What the driver's stub `cupy.cuda.compiler` reports as `CUPY_CACHE_KEY` (NVRTC 13.0).
const STUB_CACHE_KEY: &str = "5d41402abc4b2a76b9719d911017c592aaaaaaaa";

/// The stub package tree holding the real module, checked against its pin.
fn real_cupy_stub() -> PathBuf {
    let stub = repo_root().join("target/test-tools/cupy-14.2.0/stub");
    let module = stub.join("cupy/cuda/_compiler_cache.py");
    assert!(
        module.is_file(),
        "{} is missing: run `python3 scripts/fetch-cupy-compiler-cache.py` (scripts/test.sh \
         does) to fetch CuPy 14.2.0's real kernel cache module",
        module.display()
    );
    assert_eq!(
        sha256_file(&module),
        REAL_MODULE_SHA256,
        "{} is not CuPy 14.2.0's file: run `python3 scripts/fetch-cupy-compiler-cache.py` again",
        module.display()
    );
    stub
}

fn namespace() -> String {
    let platform = match std::env::consts::ARCH {
        "x86_64" => "linux-64",
        "aarch64" => "linux-aarch64",
        other => panic!("no CuPy platform name for {other}"),
    };
    format!("cupy-kernels/{STUB_CACHE_KEY}/{platform}/CUDA_13_0")
}

/// Runs the driver with `ops` (see driver.py) against the gateway URL in `url_file`, with
/// `local` as the backend's local disk layer. Returns the ops' results and stderr.
fn driver(url_file: &Path, local: &Path, ops: Value) -> (Vec<Value>, String) {
    let stub = real_cupy_stub();
    let pythonpath = std::env::join_paths([
        stub,
        repo_root().join("pyproject-templates/cupy/kernel_cache"),
    ])
    .unwrap();
    let home = local.with_extension("home");
    let mut cmd = std::process::Command::new("python3");
    cmd.arg(repo_root().join("tests/fixtures/kernel_cache/driver.py"))
        .arg(local)
        .arg(ops.to_string())
        .env_clear()
        .env("PATH", std::env::var_os("PATH").unwrap_or_default())
        .env("HOME", &home)
        .env("PYTHONPATH", pythonpath)
        // No __pycache__ in the source tree.
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("VOUCH_CACHE_URL_FILE", url_file)
        // A proxy from the environment would get the gateway's secret: the backend must
        // ignore it (nothing listens here, so a request through it fails).
        .env("http_proxy", "http://127.0.0.1:9")
        .env("HTTP_PROXY", "http://127.0.0.1:9");
    let r = run_with_timeout(&mut cmd, Duration::from_secs(60));
    assert_eq!(r.code, 0, "driver failed:\n{}", r.stderr);
    assert!(
        !home.exists(),
        "the backend wrote outside its local cache dir"
    );
    let out: Vec<Value> = serde_json::from_str(&r.stdout)
        .unwrap_or_else(|e| panic!("driver stdout is not JSON ({e}): {}", r.stdout));
    (out, r.stderr)
}

/// The gateway's secret: the last segment of its URL.
fn secret(url: &str) -> &str {
    url.rsplit_once('/').unwrap().1
}

/// The driver's log never holds the gateway's secret.
#[track_caller]
fn assert_no_secret(stderr: &str, url: &str) {
    assert!(
        !stderr.contains(secret(url)),
        "the gateway secret was logged:\n{stderr}"
    );
}

/// A stored kv entry as the backend writes it: CuPy's disk format, SHA-1 hex + payload, in
/// the gateway's signed frame.
#[track_caller]
fn assert_entry(path: &Path, payload: &str) {
    let stored = std::fs::read(path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    let data = entry_payload(&stored);
    let (digest, rest) = data.split_at(40.min(data.len()));
    assert!(
        digest.iter().all(u8::is_ascii_hexdigit) && rest == payload.as_bytes(),
        "{}: {:?}",
        path.display(),
        String::from_utf8_lossy(data)
    );
}

/// Store files as `<scope>/<key>` strings.
fn store_files(store: &Path) -> Vec<String> {
    walk(store)
        .iter()
        .map(|p| p.strip_prefix(store).unwrap().display().to_string())
        .collect()
}

fn stats(url: &str) -> Value {
    let (status, body) = request(
        &reqwest::Client::new(),
        "GET",
        &format!("{url}/_vouch/stats"),
        None,
    );
    assert_eq!(status, 200, "{body}");
    serde_json::from_str(&body).unwrap()
}

#[test]
fn kv_endpoint_reads_signed_entries_pr_writes_nothing_and_enforces_limits() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let (t_dir, p_dir, ro_dir) = (
        dir.path().join("t"),
        dir.path().join("p"),
        dir.path().join("ro"),
    );
    for d in [&t_dir, &p_dir, &ro_dir] {
        std::fs::create_dir_all(d).unwrap();
    }
    let trusted = serve(
        &t_dir,
        &store,
        &[TRUSTED, &["--max-entry-bytes", "64"]].concat(),
    );
    let pr = serve(
        &p_dir,
        &store,
        &["--event", "pull_request", "--pr", "7", "--base-ref", "main"],
    );
    let read_only = serve(
        &ro_dir,
        &store,
        &[
            "--event",
            "pull_request_target",
            "--pr",
            "7",
            "--base-ref",
            "main",
        ],
    );
    let c = reqwest::Client::new();
    let at = |s: &Served, path: &str| format!("{}/{path}", s.url);
    let (t, p, ro) = (&trusted, &pr, &read_only);

    assert_eq!(
        request(&c, "PUT", &at(t, "kv/k/main.cubin"), Some("main's")).0,
        201
    );
    // The same key in a compiler cache's namespace: a kv key never reaches it.
    assert_eq!(
        request(&c, "PUT", &at(t, "ccache/k/cc.cubin"), Some("ccache's")).0,
        201
    );
    assert_eq!(request(&c, "GET", &at(t, "kv/k/cc.cubin"), None).0, 404);
    assert_eq!(
        request(&c, "GET", &at(t, "kv/ccache/k/cc.cubin"), None).0,
        404
    );

    // A PR reads main's signed kernels and writes nothing, under main's key names or its own
    // (issue 31: nothing may read what a pull request's build wrote).
    assert_eq!(
        request(&c, "GET", &at(p, "kv/k/main.cubin"), None),
        (200, "main's".into())
    );
    assert_eq!(request(&c, "HEAD", &at(p, "kv/k/main.cubin"), None).0, 200);
    assert_eq!(
        request(&c, "PUT", &at(p, "kv/k/pr.cubin"), Some("the PR's")).0,
        403
    );
    assert_eq!(
        request(&c, "PUT", &at(p, "kv/k/main.cubin"), Some("poison")).0,
        403
    );
    assert_eq!(request(&c, "GET", &at(p, "kv/k/pr.cubin"), None).0, 404);

    // A trusted run reads only its own scope.
    assert_eq!(request(&c, "GET", &at(t, "kv/k/pr.cubin"), None).0, 404);
    assert_eq!(request(&c, "HEAD", &at(t, "kv/k/pr.cubin"), None).0, 404);
    assert_eq!(
        request(&c, "GET", &at(t, "kv/k/main.cubin"), None),
        (200, "main's".into())
    );

    // 413 over the cap, 400 for keys outside the key rule, 403 for a read-only scope.
    assert_eq!(
        request(&c, "PUT", &at(t, "kv/k/big.cubin"), Some(&"x".repeat(65))).0,
        413
    );
    for bad in ["kv/", "kv/k//x", "kv/k%2Fx", "kv/k/x%00", "kv/k/a b"] {
        assert_eq!(request(&c, "PUT", &at(t, bad), Some("x")).0, 400, "{bad}");
    }
    assert_eq!(
        request(&c, "PUT", &at(ro, "kv/k/ro.cubin"), Some("x")).0,
        403
    );
    assert_eq!(
        request(&c, "GET", &at(ro, "kv/k/main.cubin"), None),
        (200, "main's".into()),
        "a read-only scope still reads main"
    );
    let wrong_secret = format!(
        "{}/kv/k/main.cubin",
        p.url.replace(secret(&p.url), SECRET_LIKE)
    );
    assert_eq!(request(&c, "GET", &wrong_secret, None).0, 403);

    assert_eq!(
        store_files(&store),
        [
            "branch/main/@/ccache/k/cc.cubin",
            "branch/main/@/kv/k/main.cubin",
        ]
    );
    assert_eq!(
        entry_payload(&std::fs::read(store.join("branch/main/@/kv/k/main.cubin")).unwrap()),
        b"main's"
    );
    let s = stats(&p.url);
    assert_eq!(
        (&s["writes"], &s["refused_writes"], &s["unauthorized"]),
        (&json!(0), &json!(2), &json!(1))
    );
    assert_eq!(s["layers"].as_array().unwrap().len(), 1, "{s}");
    assert_eq!(
        s["layers"][0],
        json!({"scope": "branch/main", "hits": 2, "bytes": 12})
    );
    let s = stats(&t.url);
    assert_eq!(
        (
            &s["misses"],
            &s["writes"],
            &s["too_large"],
            &s["refused_other"]
        ),
        (&json!(4), &json!(2), &json!(1), &json!(5))
    );
    assert_eq!(stats(&ro.url)["refused_writes"], 1);
}

#[test]
fn cupy_kernel_cache_with_the_real_cupy_module_pr_writes_nothing_and_trusted_never_loads_it() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let (t_dir, p_dir) = (dir.path().join("t"), dir.path().join("p"));
    std::fs::create_dir_all(&t_dir).unwrap();
    std::fs::create_dir_all(&p_dir).unwrap();
    let trusted = serve(&t_dir, &store, TRUSTED);
    let ns = namespace();

    // A trusted run compiled main's kernel.
    let (out, err) = driver(
        &trusted.url_file,
        &dir.path().join("local-seed"),
        json!([
            ["real"],
            ["namespace"],
            ["save", "main.cubin", "main's kernel"]
        ]),
    );
    let real = &out[0];
    assert_eq!(
        real["module_file"],
        real_cupy_stub()
            .join("cupy/cuda/_compiler_cache.py")
            .canonicalize()
            .unwrap()
            .display()
            .to_string(),
        "the backend ran against the real module"
    );
    assert_eq!(
        (&real["subclass"], &real["disk_subclass"], &real["abstract"]),
        (&json!(true), &json!(true), &json!(["load", "save"]))
    );
    assert_eq!(out[1], ns);
    assert!(!err.contains("WARNING"), "{err}");
    assert_eq!(
        store_files(&store),
        [format!("branch/main/@/kv/{ns}/main.cubin")]
    );

    // A PR's test run (`--event pull_request --pr 7 --base-ref main`), with an empty local
    // disk: main's kernel is a hit; what it compiles stays on its local disk (issue 31: a
    // pull request's run writes nothing to the shared cache, under main's name or its own).
    let pr = serve(
        &p_dir,
        &store,
        &["--event", "pull_request", "--pr", "7", "--base-ref", "main"],
    );
    let pr_local = dir.path().join("local-pr");
    let (out, err) = driver(
        &pr.url_file,
        &pr_local,
        json!([
            ["load", "main.cubin"],
            ["local", "main.cubin"],
            ["load", "new.cubin"],
            ["save", "new.cubin", "the PR's kernel"],
            ["save", "main.cubin", "poison"],
        ]),
    );
    assert_eq!(
        out,
        [
            json!("main's kernel"),
            json!(true),
            Value::Null,
            Value::Null,
            Value::Null
        ]
    );
    // Said once, and the run goes on.
    assert_eq!(err.matches("read-only").count(), 1, "{err}");
    assert_no_secret(&err, &pr.url);
    assert_eq!(
        store_files(&store),
        [format!("branch/main/@/kv/{ns}/main.cubin")]
    );
    assert_entry(
        &store.join(format!("branch/main/@/kv/{ns}/main.cubin")),
        "main's kernel",
    );
    let s = stats(&pr.url);
    assert_eq!(
        (&s["writes"], &s["refused_writes"], &s["misses"]),
        (&json!(0), &json!(1), &json!(1))
    );
    assert_eq!(
        s["layers"],
        json!([{"scope": "branch/main", "hits": 1, "bytes": 53}])
    );

    // The next trusted run (fresh local disk) never loads what the PR compiled.
    let (out, err) = driver(
        &trusted.url_file,
        &dir.path().join("local-trusted"),
        json!([["load", "new.cubin"], ["load", "main.cubin"]]),
    );
    assert_eq!(out, [Value::Null, json!("main's kernel")]);
    assert!(!err.contains("WARNING"), "{err}");
    let s = stats(&trusted.url);
    assert_eq!(
        s["layers"],
        json!([{"scope": "branch/main", "hits": 1, "bytes": 53}])
    );
}

#[test]
fn cupy_kernel_cache_install_sets_the_backend_and_gateway_failures_never_fail_a_run() {
    let dir = tempdir();
    let store = dir.path().join("store");
    let (p_dir, ro_dir) = (dir.path().join("p"), dir.path().join("ro"));
    std::fs::create_dir_all(&p_dir).unwrap();
    std::fs::create_dir_all(&ro_dir).unwrap();
    let pr = serve(&p_dir, &store, PR7);
    let local = |name: &str| dir.path().join(name);

    // install() hands CuPy's (stubbed) private setter the real backend subclass.
    let (out, err) = driver(&pr.url_file, &local("l1"), json!([["install"]]));
    assert_eq!(
        out[0],
        json!({
            "returned": "VouchKernelCacheBackend",
            "recorded": ["VouchKernelCacheBackend"],
            "same": true,
            "is_real_backend": true,
        })
    );
    assert_no_secret(&err, &pr.url);

    // No usable URL: CuPy keeps its own cache, with a warning that quotes no URL.
    let missing = dir.path().join("no-such-url-file");
    let off_host = dir.path().join("off-host-url");
    std::fs::write(&off_host, format!("http://10.1.2.3:8080/{SECRET_LIKE}")).unwrap();
    for url_file in [&missing, &off_host] {
        let (out, err) = driver(url_file, &local("l2"), json!([["install"]]));
        assert_eq!(
            out[0],
            json!({"returned": null, "recorded": [], "same": false, "is_real_backend": true})
        );
        assert!(
            err.contains("WARNING vouch_backend: not using the vouch cache gateway"),
            "{err}"
        );
        assert!(
            !err.contains(SECRET_LIKE) && !err.contains("10.1.2.3"),
            "{err}"
        );
    }

    // A gateway that is gone, or that does not know this secret: loads miss (CuPy compiles),
    // saves keep the local copy, one warning each, and the run goes on.
    let gone = dir.path().join("gone-url");
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    std::fs::write(&gone, format!("http://127.0.0.1:{port}/{SECRET_LIKE}")).unwrap();
    let wrong = dir.path().join("wrong-secret-url");
    std::fs::write(&wrong, pr.url.replace(secret(&pr.url), SECRET_LIKE)).unwrap();
    for (url_file, warning) in [
        (&gone, "the cache gateway is unreachable"),
        (&wrong, "the cache gateway refused the request"),
    ] {
        let (out, err) = driver(
            url_file,
            &local(&format!("l-{}", url_file.file_name().unwrap().display())),
            json!([
                ["load", "a.cubin"],
                ["save", "a.cubin", "compiled here"],
                ["save", "b.cubin", "compiled here too"],
                ["local", "a.cubin"],
                ["load", "a.cubin"],
                ["load", "c.cubin"],
            ]),
        );
        assert_eq!(
            out,
            [
                Value::Null,
                Value::Null,
                Value::Null,
                json!(true),
                json!("compiled here"),
                Value::Null
            ]
        );
        assert_eq!(err.matches(warning).count(), 1, "{err}");
        assert_eq!(err.matches("WARNING").count(), 1, "{err}");
        assert!(!err.contains(SECRET_LIKE), "{err}");
        assert_no_secret(&err, &pr.url);
    }
    assert!(
        !store.exists() || crate::stores::Backing::Dir(store.clone()).keys().is_empty(),
        "nothing reached the store"
    );

    // A read-only scope (pull_request_target) refuses saves: said once, kernels kept locally.
    let ro = serve(
        &ro_dir,
        &store,
        &["--event", "pull_request_target", "--base-ref", "main"],
    );
    let (out, err) = driver(
        &ro.url_file,
        &local("l-ro"),
        json!([
            ["save", "a.cubin", "x"],
            ["save", "b.cubin", "y"],
            ["local", "b.cubin"]
        ]),
    );
    assert_eq!(out, [Value::Null, Value::Null, json!(true)]);
    assert_eq!(err.matches("read-only").count(), 1, "{err}");
    assert_eq!(stats(&ro.url)["refused_writes"], 1);
    assert!(
        !store.exists() || crate::stores::Backing::Dir(store.clone()).keys().is_empty(),
        "nothing reached the store"
    );

    // An entry that is not CuPy's disk format (cut short, or PUT by hand through a trusted
    // gateway) is a miss, never handed to CuPy or kept on disk.
    let t_dir = dir.path().join("t");
    std::fs::create_dir_all(&t_dir).unwrap();
    let trusted = serve(&t_dir, &store, TRUSTED);
    let bad = format!("{}/kv/{}/bad.cubin", trusted.url, namespace());
    let put = request(&reqwest::Client::new(), "PUT", &bad, Some("not a cubin"));
    assert_eq!(put.0, 201);
    let (out, err) = driver(
        &pr.url_file,
        &local("l-bad"),
        json!([["load", "bad.cubin"], ["local", "bad.cubin"]]),
    );
    assert_eq!(out, [Value::Null, json!(false)]);
    assert_eq!(err.matches("fails its hash check").count(), 1, "{err}");
}
