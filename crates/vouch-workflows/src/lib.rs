//! The GitHub Actions workflows that build a vouch profile's matrix, sign what it built and hand
//! the run to a test farm: generated from the profile ([`generate`]), compared with what a
//! repository has ([`check`]), and audited for the trust rules they exist to keep
//! ([`audit_trust`]).
//!
//! Three files, each with a job of its own trust:
//!
//! - `vouch-trigger.yml` (`issue_comment`): `/test` from an owner or member labels the pull
//!   request with a GitHub App token. Base-repository secrets, so it never checks out or
//!   touches the cache.
//! - `vouch-build.yml` (`pull_request` with the label, `push` to `main`/`v*`/`hotfix-*`, `v*`
//!   tags): `plan` → `build` (one job per cell, may read the compiler cache, cannot sign) →
//!   `attest` (one job per cell, the only jobs with an OIDC token; they run nothing from the
//!   checkout) → `vouch-build-ok` (the one check to require).
//! - `vouch-dispatch.yml` (`workflow_run` of the build, success, not a fork): a
//!   `repository_dispatch` to the test farm.
//!
//! The repository needs the label [`TRIGGER_LABEL`], a GitHub App installed on it (issues and
//! pull requests: write) and on the test-farm repository (contents: write), the
//! [`VARIABLES`] and [`SECRETS`], and [`SENTINEL_JOB`] as the required check.

mod audit;
pub mod pins;
mod render;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch_profile::Profile;

pub use audit::{Rule, Violation, audit_trust};
pub use render::{
    ATTEST_JOB, BUILD_FILE, BUILD_WORKFLOW_NAME, DISPATCH_FILE, HEADER, SENTINEL_JOB, TRIGGER_FILE,
    TRIGGER_LABEL,
};

/// The PyPI distribution the workflows install vouch from.
pub const DEFAULT_PACKAGE: &str = "vouch-build";

/// Minutes a build job may run (CuPy's cold builds of every GPU architecture take hours).
pub const DEFAULT_BUILD_TIMEOUT_MINUTES: u32 = 240;

/// Repository variables (`vars.*`) the workflows read, and what for.
pub const VARIABLES: &[(&str, &str)] = &[
    (
        "VOUCH_APP_ID",
        "the GitHub App that labels pull requests and dispatches to the test farm",
    ),
    (
        "VOUCH_CACHE_STORE",
        "the compiler cache's store (redis://user@host:port); empty: build without a cache",
    ),
    (
        "VOUCH_TEST_FARM_REPO",
        "OWNER/NAME of the test farm's repository",
    ),
];

/// Repository secrets the workflows read, and what for.
pub const SECRETS: &[(&str, &str)] = &[
    ("VOUCH_APP_PRIVATE_KEY", "the GitHub App's private key"),
    (
        "VOUCH_CACHE_PASSWORD",
        "the cache store password for pushes (may write its own branch's scope)",
    ),
    (
        "VOUCH_SEAL_KEY",
        "32+ random bytes that authenticate the venvs and toolkits push builds reuse (self-hosted runners)",
    ),
    (
        "VOUCH_CACHE_PR_PASSWORD",
        "the cache store password for pull requests (`vouch cache check` must find it fenced)",
    ),
];

/// GitHub runs at most 256 jobs per matrix.
pub const MAX_MATRIX_JOBS: usize = 256;

#[derive(Debug, thiserror::Error)]
pub enum Error {
    #[error("{option} {value:?}: {reason}")]
    Option {
        option: &'static str,
        value: String,
        reason: String,
    },
    #[error("profile: {0}")]
    Profile(String),
    #[error("cannot read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{file}: not valid YAML: {message}")]
    Yaml { file: String, message: String },
    #[error("{file}: {message}")]
    Shape { file: String, message: String },
}

/// What the generated workflows are made with, besides the profile.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The profile's path relative to the repository root, as the workflows pass it to
    /// `vouch plan --profile` and `vouch build --profile`.
    pub profile_path: String,
    /// The PyPI distribution vouch is installed from ([`DEFAULT_PACKAGE`]).
    pub vouch_package: String,
    /// The vouch version the workflows install (`==`).
    pub vouch_version: String,
    /// sha256 of every vouch wheel of that version the runners may pick (one per platform:
    /// Linux x86_64 and aarch64, Windows): pip installs with `--require-hashes`. At least one.
    pub vouch_wheel_sha256: Vec<String>,
    /// `timeout-minutes` of a build job.
    pub build_timeout_minutes: u32,
}

impl Options {
    pub fn new(
        profile_path: impl Into<String>,
        vouch_version: impl Into<String>,
        vouch_wheel_sha256: Vec<String>,
    ) -> Options {
        Options {
            profile_path: profile_path.into(),
            vouch_package: DEFAULT_PACKAGE.to_owned(),
            vouch_version: vouch_version.into(),
            vouch_wheel_sha256,
            build_timeout_minutes: DEFAULT_BUILD_TIMEOUT_MINUTES,
        }
    }

    /// The pip requirement line: `<package>==<version> --hash=sha256:<hex> ...` (hashes
    /// lowercased, sorted, deduplicated).
    pub fn requirement(&self) -> Result<String, Error> {
        self.validate()?;
        let hashes: BTreeSet<String> = self
            .vouch_wheel_sha256
            .iter()
            .map(|h| h.to_ascii_lowercase())
            .collect();
        let mut line = format!("{}=={}", self.vouch_package, self.vouch_version);
        for h in hashes {
            line.push_str(" --hash=sha256:");
            line.push_str(&h);
        }
        Ok(line)
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = |option, value: &str, reason: &str| Error::Option {
            option,
            value: value.to_owned(),
            reason: reason.to_owned(),
        };
        let p = &self.profile_path;
        if p.is_empty()
            || !p
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
            || p.starts_with(['/', '-'])
            || p.split('/').any(|c| c.is_empty() || c == "." || c == "..")
        {
            return Err(bad(
                "profile path",
                p,
                "must be a plain relative path (letters, digits, `.`, `_`, `-`, `/`; no `..`)",
            ));
        }
        let pkg = &self.vouch_package;
        if pkg.is_empty()
            || !pkg
                .bytes()
                .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-".contains(&b))
        {
            return Err(bad(
                "vouch package",
                pkg,
                "must be a normalized distribution name",
            ));
        }
        let v = &self.vouch_version;
        if !v.starts_with(|c: char| c.is_ascii_digit())
            || !v
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b"._+!-".contains(&b))
        {
            return Err(bad("vouch version", v, "must be a PEP 440 version"));
        }
        if self.vouch_wheel_sha256.is_empty() {
            return Err(bad(
                "vouch wheel sha256",
                "",
                "give the sha256 of the vouch wheel(s): the workflows install with --require-hashes",
            ));
        }
        for h in &self.vouch_wheel_sha256 {
            if h.len() != 64 || !h.bytes().all(|b| b.is_ascii_hexdigit()) {
                return Err(bad("vouch wheel sha256", h, "must be 64 hex digits"));
            }
        }
        if !(1..=7200).contains(&self.build_timeout_minutes) {
            return Err(bad(
                "build timeout",
                &self.build_timeout_minutes.to_string(),
                "must be 1 to 7200 minutes",
            ));
        }
        Ok(())
    }
}

/// One generated file: its name in `.github/workflows/` and its text.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct GeneratedFile {
    pub name: String,
    pub contents: String,
}

fn plain_name(s: &str) -> bool {
    !s.is_empty()
        && s.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
}

/// Checks what of the profile reaches the workflows (or GitHub's limits at run time).
fn validate_profile(profile: &Profile) -> Result<(), Error> {
    if !plain_name(&profile.project) {
        return Err(Error::Profile(format!(
            "project {:?} must be letters, digits, `.`, `_` or `-`",
            profile.project
        )));
    }
    let cells = profile.plan();
    if cells.is_empty() {
        return Err(Error::Profile("the plan has no cells".into()));
    }
    if cells.len() > MAX_MATRIX_JOBS {
        return Err(Error::Profile(format!(
            "the plan has {} cells; a GitHub matrix runs at most {MAX_MATRIX_JOBS}",
            cells.len()
        )));
    }
    let mut ids = BTreeSet::new();
    let mut artifacts = std::collections::BTreeMap::new();
    for c in &cells {
        if !plain_name(&c.id) {
            return Err(Error::Profile(format!(
                "cell {:?}: an id must be letters, digits, `.`, `_` or `-` (it becomes part of an artifact name)",
                c.id
            )));
        }
        if !ids.insert(c.id.as_str()) {
            return Err(Error::Profile(format!("two cells are named {:?}", c.id)));
        }
        // The workflows name a wheel cell's artifact after its stem and a source cell's after
        // its id (see render::ARTIFACT_NAME_STEP); two cells of one run must not share one.
        let key = if c.route == vouch_profile::Route::Source {
            c.id.as_str()
        } else {
            c.artifact_stem.as_str()
        };
        if let Some(other) = artifacts.insert(key.to_owned(), c.id.clone()) {
            return Err(Error::Profile(format!(
                "cells {other:?} and {:?} would upload artifacts of one name ({key:?})",
                c.id
            )));
        }
    }
    Ok(())
}

/// The workflow files for `profile`, in a fixed order (trigger, build, dispatch); the same
/// inputs give the same bytes.
pub fn generate(profile: &Profile, opts: &Options) -> Result<Vec<GeneratedFile>, Error> {
    validate_profile(profile)?;
    let vars = render::Vars {
        project: &profile.project,
        profile_path: &opts.profile_path,
        requirement: opts.requirement()?,
        build_timeout_minutes: opts.build_timeout_minutes,
    };
    Ok(vec![
        GeneratedFile {
            name: TRIGGER_FILE.to_owned(),
            contents: render::trigger(&vars),
        },
        GeneratedFile {
            name: BUILD_FILE.to_owned(),
            contents: render::build(&vars),
        },
        GeneratedFile {
            name: DISPATCH_FILE.to_owned(),
            contents: render::dispatch(&vars),
        },
    ])
}

/// Why a file in the workflows directory is not what `generate` gives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum StaleKind {
    /// Not there.
    Missing,
    /// There, with other contents.
    Changed,
    /// Generated by vouch (it starts with [`HEADER`]) but no longer generated.
    Unexpected,
}

/// A file `check` found out of date.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct Stale {
    pub name: String,
    pub kind: StaleKind,
    /// Unified diff from what is in the directory (`a/NAME`) to what it should be (`b/NAME`).
    pub diff: String,
}

fn unified_diff(name: &str, old: &str, new: &str) -> String {
    similar::TextDiff::from_lines(old, new)
        .unified_diff()
        .context_radius(3)
        .header(&format!("a/{name}"), &format!("b/{name}"))
        .to_string()
}

/// Compares `dir` (a repository's `.github/workflows`) with `expected`: one [`Stale`] per file
/// that is missing or differs, and per file that vouch generated but no longer generates.
/// Empty when everything is up to date. Other files in `dir` are not looked at.
pub fn check(dir: &Path, expected: &[GeneratedFile]) -> Result<Vec<Stale>, Error> {
    let mut stale = Vec::new();
    for f in expected {
        let path = dir.join(&f.name);
        match std::fs::read_to_string(&path) {
            Ok(text) if text == f.contents => {}
            Ok(text) => stale.push(Stale {
                name: f.name.clone(),
                kind: StaleKind::Changed,
                diff: unified_diff(&f.name, &text, &f.contents),
            }),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => stale.push(Stale {
                name: f.name.clone(),
                kind: StaleKind::Missing,
                diff: unified_diff(&f.name, "", &f.contents),
            }),
            Err(source) => return Err(Error::Read { path, source }),
        }
    }
    let entries = match std::fs::read_dir(dir) {
        Ok(entries) => entries,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => return Ok(stale),
        Err(source) => {
            return Err(Error::Read {
                path: dir.to_owned(),
                source,
            });
        }
    };
    let mut unexpected = Vec::new();
    for entry in entries {
        let entry = entry.map_err(|source| Error::Read {
            path: dir.to_owned(),
            source,
        })?;
        let Some(name) = entry.file_name().to_str().map(str::to_owned) else {
            continue;
        };
        if !(name.ends_with(".yml") || name.ends_with(".yaml"))
            || expected.iter().any(|f| f.name == name)
            || !entry.file_type().is_ok_and(|t| t.is_file())
        {
            continue;
        }
        let path = entry.path();
        let text = std::fs::read_to_string(&path).map_err(|source| Error::Read {
            path: path.clone(),
            source,
        })?;
        if text.lines().next() == Some(HEADER) {
            unexpected.push(Stale {
                diff: unified_diff(&name, &text, ""),
                name,
                kind: StaleKind::Unexpected,
            });
        }
    }
    unexpected.sort_by(|a, b| a.name.cmp(&b.name));
    stale.extend(unexpected);
    Ok(stale)
}

/// Writes `files` into `dir` (created if needed), each through a temporary file and a rename.
pub fn write_files(dir: &Path, files: &[GeneratedFile]) -> Result<(), Error> {
    std::fs::create_dir_all(dir).map_err(|source| Error::Write {
        path: dir.to_owned(),
        source,
    })?;
    for f in files {
        let path = dir.join(&f.name);
        let write_err = |source| Error::Write {
            path: path.clone(),
            source,
        };
        vouch_fs::write_atomically(&path, f.contents.as_bytes(), vouch_fs::Mode::Public)
            .map_err(write_err)?;
    }
    Ok(())
}
