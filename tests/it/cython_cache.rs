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
    let kv: Vec<String> = store_files(dir.path(), "branch/main")
        .into_iter()
        .filter(|f| f.starts_with("@/kv/cython/v1/"))
        .collect();
    assert_eq!(kv.len(), 2, "{kv:?}");
    assert!(
        kv.iter()
            .any(|f| f.starts_with("@/kv/cython/v1/cyproj.core/"))
    );

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

    // A change Cython never reads (a file outside the dependency tree) still hits: the
    // checks below can tell a hit from a miss.
    let unrelated = project(dir.path(), "unrelated");
    std::fs::write(
        unrelated.join("NOTES.txt"),
        "not an input of any translation\n",
    )
    .unwrap();
    assert_eq!(
        build(dir.path(), &unrelated, "unrelated", Some(TRUSTED)).cython(),
        (2, 0, 0)
    );

    // A .pxd two levels below core.pyx (core cimports mid, mid cimports deep): core misses,
    // other (which cimports neither) hits.
    let deep = project(dir.path(), "deep");
    edit(&deep.join("cyproj/deep.pxd"), "DEEP = 41", "DEEP = 40");
    let b = build(dir.path(), &deep, "deep", Some(TRUSTED));
    assert_eq!(b.cython(), (1, 1, 1), "a .pxd two levels down");

    // A comment in it: the generated code may not change, but the key must.
    let comment = project(dir.path(), "comment");
    edit(
        &comment.join("cyproj/deep.pxd"),
        "cdef enum:",
        "# a comment\ncdef enum:",
    );
    assert_eq!(
        build(dir.path(), &comment, "comment", Some(TRUSTED)).cython(),
        (1, 1, 1),
        "a comment in a .pxd two levels down"
    );

    // A compiler directive (Cython's own cache leaves directives out of its fingerprint).
    let directive = project(dir.path(), "directive");
    std::fs::write(
        directive.join("directives.json"),
        r#"{"language_level": 3, "boundscheck": false}"#,
    )
    .unwrap();
    assert_eq!(
        build(dir.path(), &directive, "directive", Some(TRUSTED)).cython(),
        (0, 2, 2),
        "a directive"
    );

    // Another Cython: another venv, every translation misses.
    let version = project(dir.path(), "version");
    edit(
        &version.join("pyproject.toml"),
        "Cython==3.2.9",
        "Cython==3.2.8",
    );
    assert_eq!(
        build(dir.path(), &version, "version", Some(TRUSTED)).cython(),
        (0, 2, 2),
        "another Cython version"
    );
}

#[test]
fn a_pull_requests_build_reads_mains_translations_and_writes_only_its_own_scope() {
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
    assert_eq!(b.cython(), (1, 1, 1), "{}", b.json["cache"]);
    assert_eq!(b.json["cache"]["gateway"]["write_scope"], "pr/7");
    assert_eq!(store_files(dir.path(), "branch/main"), main_before);
    let pr_kv: Vec<String> = store_files(dir.path(), "pr/7")
        .into_iter()
        .filter(|f| f.starts_with("@/kv/cython/"))
        .collect();
    assert_eq!(pr_kv.len(), 1, "{pr_kv:?}");
    assert!(pr_kv[0].starts_with("@/kv/cython/v1/cyproj.other/"));

    // main's next build never reads the pull request's translation of other.pyx.
    let again = build(dir.path(), &pr, "main-again", Some(TRUSTED));
    assert_eq!(again.cython(), (1, 1, 1));
    // And the pull request's wheel is the one an uncached build of its sources makes.
    let uncached = build(dir.path(), &pr, "uncached", None);
    assert_eq!(b.sha256, uncached.sha256);
}
