//! The Cython translation cache and the build-venv shim (crates/vouch-build/src/buildenv.rs,
//! crates/vouch-build/python/vouch_buildenv.py), through real `vouch build`s of
//! tests/fixtures/cyproj with real Cython and ccache behind the scoped gateway on a directory
//! store.

use std::path::{Path, PathBuf};

use crate::common::*;

const EPOCH: &str = "1700000000";
const TRUSTED: &[&str] = &["--event", "push", "--ref", "refs/heads/main"];
const PR7: &[&str] = &["--event", "pull_request", "--pr", "7", "--base-ref", "main"];

/// A fresh copy of the fixture project.
fn project(dir: &Path, name: &str) -> PathBuf {
    let dest = dir.join(name);
    let fixture = repo_root().join("tests/fixtures/cyproj");
    for file in walk(&fixture) {
        let rel = file.strip_prefix(&fixture).unwrap();
        if rel.components().any(|c| c.as_os_str() == "__pycache__") {
            continue;
        }
        let to = dest.join(rel);
        std::fs::create_dir_all(to.parent().unwrap()).unwrap();
        std::fs::copy(&file, &to).unwrap();
    }
    dest
}

fn edit(file: &Path, from: &str, to: &str) {
    let text = std::fs::read_to_string(file).unwrap();
    assert!(text.contains(from), "{} lacks {from:?}", file.display());
    std::fs::write(file, text.replacen(from, to, 1)).unwrap();
}

struct Built {
    sha256: String,
    json: serde_json::Value,
}

impl Built {
    /// (hits, misses, stored) of the Cython cache.
    fn cython(&self) -> (u64, u64, u64) {
        let c = &self.json["cache"]["cython"];
        let n = |k: &str| {
            c[k].as_u64()
                .unwrap_or_else(|| panic!("no cython.{k}: {c}"))
        };
        (n("hits"), n("misses"), n("stored"))
    }

    fn compiler_misses(&self) -> u64 {
        self.json["cache"]["compiler_cache"]["misses"]
            .as_u64()
            .unwrap()
    }
}

/// `vouch build` of `src` into `<dir>/<out>`, with the scoped cache on `<dir>/store` when
/// `scope` is given.
fn build(dir: &Path, src: &Path, out: &str, scope: Option<&[&str]>) -> Built {
    let mut cmd = vouch();
    cmd.args(["build", "--json", "--source-date-epoch", EPOCH, "--source"])
        .arg(src)
        .arg("--out")
        .arg(dir.join(out));
    if let Some(scope) = scope {
        cmd.args(["--cache", "ccache", "--cache-store"])
            .arg(dir.join("store"))
            .args(scope);
        cache_keys(&mut cmd, scope);
    }
    let r = run(&mut cmd);
    assert_eq!(r.code, 0, "{out}: {}", r.stderr);
    let json = r.json();
    Built {
        sha256: json["sha256"].as_str().unwrap().to_owned(),
        json,
    }
}

/// Every file under `<dir>/store/<scope>`, relative to it.
fn store_files(dir: &Path, scope: &str) -> Vec<String> {
    let root = dir.join("store").join(scope);
    if !root.exists() {
        return Vec::new();
    }
    let mut files: Vec<String> = walk(&root)
        .iter()
        .map(|p| p.strip_prefix(&root).unwrap().display().to_string())
        .collect();
    files.sort();
    files
}

#[test]
fn a_cython_cache_hit_gives_the_wheel_a_miss_and_an_uncached_build_give() {
    let dir = tempdir();
    let cold = build(dir.path(), &project(dir.path(), "a"), "cold", Some(TRUSTED));
    assert_eq!(cold.cython(), (0, 2, 2), "{}", cold.json["cache"]);
    // Per module: the entry, and the manifest (`.deps`) naming the files it was keyed over.
    let kv: Vec<String> = store_files(dir.path(), "branch/main")
        .into_iter()
        .filter(|f| f.starts_with("@/kv/cython/v1/"))
        .collect();
    assert_eq!(kv.len(), 4, "{kv:?}");
    let core: Vec<&String> = kv
        .iter()
        .filter(|f| f.starts_with("@/kv/cython/v1/cyproj.core/"))
        .collect();
    assert_eq!(core.len(), 2, "{kv:?}");
    let manifest = core
        .iter()
        .find(|f| f.ends_with(".deps"))
        .expect("a manifest");
    let manifest: serde_json::Value = serde_json::from_slice(entry_payload(
        &std::fs::read(dir.path().join("store/branch/main").join(manifest)).unwrap(),
    ))
    .unwrap();
    let deps = manifest["dependencies"].to_string();
    for file in ["core.pyx", "__init__.pxd", "mid.pxd", "deep.pxd"] {
        assert!(deps.contains(file), "{file} not in {deps}");
    }

    // The same sources from another directory: every translation and every compile (the
    // configure probe in its mkdtemp() directory included) comes from the store.
    let warm = build(dir.path(), &project(dir.path(), "b"), "warm", Some(TRUSTED));
    assert_eq!(warm.cython(), (2, 0, 0), "{}", warm.json["cache"]);
    assert_eq!(warm.compiler_misses(), 0, "{}", warm.json["cache"]);

    let uncached = build(dir.path(), &project(dir.path(), "c"), "uncached", None);
    assert!(uncached.json["cache"].is_null());
    assert_eq!(cold.sha256, warm.sha256);
    assert_eq!(uncached.sha256, warm.sha256);
}

#[test]
fn every_input_of_a_translation_is_in_its_key() {
    let dir = tempdir();
    build(
        dir.path(),
        &project(dir.path(), "base"),
        "fill",
        Some(TRUSTED),
    );
    // A fresh copy of the project with `change` made to it, built against the filled store:
    // the Cython cache's (hits, misses, stored).
    let variant = |name: &str, change: &dyn Fn(&Path)| {
        let src = project(dir.path(), name);
        change(&src);
        build(dir.path(), &src, name, Some(TRUSTED)).cython()
    };
    let write = |rel: &'static str, text: &'static str| {
        move |src: &Path| std::fs::write(src.join(rel), text).unwrap()
    };

    // A change Cython never reads (a file outside the dependency tree) still hits: the
    // checks below can tell a hit from a miss.
    let unrelated = write("NOTES.txt", "not an input of any translation\n");
    assert_eq!(variant("unrelated", &unrelated), (2, 0, 0));

    // A .pxd two levels below core.pyx (core cimports mid, mid cimports deep): core misses,
    // other (which cimports neither) hits. For `from cyproj cimport mid` Cython's own
    // dependency tree lists only cyproj/__init__.pxd, not mid.pxd or deep.pxd (so Cython's
    // cache would hit here); the files Cython actually read are what the key covers.
    let deep = |src: &Path| edit(&src.join("cyproj/deep.pxd"), "DEEP = 41", "DEEP = 40");
    assert_eq!(variant("deep", &deep), (1, 1, 1), "a .pxd two levels down");

    // A comment in it: the generated code may not change, but the key must.
    let comment = |src: &Path| {
        edit(
            &src.join("cyproj/deep.pxd"),
            "cdef enum:",
            "# a comment\ncdef enum:",
        )
    };
    assert_eq!(
        variant("comment", &comment),
        (1, 1, 1),
        "a comment in a .pxd two levels down"
    );

    // The package's __init__.pxd, which Cython reads for the cimport.
    let init = write("cyproj/__init__.pxd", "cdef int PACKAGE_LEVEL\n");
    assert_eq!(
        variant("init", &init),
        (1, 1, 1),
        "the package's __init__.pxd"
    );

    // A new .pxd on the search path, read by nothing yet: which file a cimport resolves to
    // depends on what exists, so every translation misses.
    let new_file = write("cyproj/extra.pxd", "cdef int EXTRA\n");
    assert_eq!(
        variant("new-file", &new_file),
        (0, 2, 2),
        "a new .pxd on the search path"
    );

    // A compiler directive (Cython's own cache leaves directives out of its fingerprint).
    let directive = write(
        "directives.json",
        r#"{"language_level": 3, "boundscheck": false}"#,
    );
    assert_eq!(variant("directive", &directive), (0, 2, 2), "a directive");

    // Another Cython: another venv, every translation misses.
    let version = |src: &Path| {
        edit(
            &src.join("pyproject.toml"),
            "Cython==3.2.9",
            "Cython==3.2.8",
        )
    };
    assert_eq!(
        variant("version", &version),
        (0, 2, 2),
        "another Cython version"
    );
}

#[test]
fn a_pull_requests_build_reads_mains_translations_and_writes_nothing() {
    let dir = tempdir();
    build(
        dir.path(),
        &project(dir.path(), "base"),
        "fill",
        Some(TRUSTED),
    );
    let main_before = store_files(dir.path(), "branch/main");

    let pr = project(dir.path(), "pr");
    edit(
        &pr.join("cyproj/other.pyx"),
        "    return f'hello {name}'",
        "    greeting = f'hello {name}'\n    return greeting",
    );
    let b = build(dir.path(), &pr, "pr", Some(PR7));
    // The changed module misses and is not stored: a pull request's build writes nothing.
    assert_eq!(b.cython(), (1, 1, 0), "{}", b.json["cache"]);
    assert_eq!(
        b.json["cache"]["gateway"]["write_scope"],
        serde_json::Value::Null
    );
    assert_eq!(store_files(dir.path(), "branch/main"), main_before);
    assert!(store_files(dir.path(), "pr/7").is_empty());

    // main's next build never reads the pull request's translation of other.pyx.
    let again = build(dir.path(), &pr, "main-again", Some(TRUSTED));
    assert_eq!(again.cython(), (1, 1, 1));
    // And the pull request's wheel is the one an uncached build of its sources makes.
    let uncached = build(dir.path(), &pr, "uncached", None);
    assert_eq!(b.sha256, uncached.sha256);
}
