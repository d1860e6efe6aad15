//! The GitHub Actions workflows that build a vouch profile's matrix, sign what it built and hand
//! it to a test farm: generated from the profile ([`generate`]), compared with what a
//! repository has ([`check`]), audited for the trust rules they exist to keep
//! ([`audit_trust`]), and explained event by event ([`explain`]).
//!
//! Three files, each with a trust of its own:
//!
//! - `vouch-trigger.yml` (`issue_comment`, `pull_request_target`): `/test <targets> @<sha>`
//!   from an owner or member with write access records the request when the head still is
//!   that commit (else it replies with the head it found) and labels the pull request with a
//!   GitHub App token; a new head loses the label and cancels its build. Base-repository context: it never checks out
//!   or runs the pull request's code and never reads or writes the cache (with the Redis store
//!   it only grants the pull request its own cache user, whose password goes into the record).
//! - `vouch-build.yml` (`pull_request` labeled, `push` to `main`/`v[0-9]*`/`hotfix-*`, `v[0-9]*` tags):
//!   `request` → `plan` → `build-push`/`build-pr` (one job per cell, the platform's compiler cache (ccache or sccache) on the store
//!   `[workflows.cache]` names, see `cache`; cannot sign) → for pushes `attest` (signs in-run, runs nothing from the checkout)
//!   and `dispatch` → `vouch-build-ok` (the one check to require).
//! - `vouch-sign.yml` (`workflow_run` of a pull request's build): pins the run through the
//!   API, signs each cell's wheel with claims from API metadata and the recorded request, then
//!   dispatches.
//!
//! The repository needs the label [`TRIGGER_LABEL`], a GitHub App (issues and pull requests:
//! write; commit statuses: write), the environment [`TRUSTED_ENVIRONMENT`] limited to
//! [`TRUSTED_REFS`] and those refs guarded by a ruleset ([`TRUSTED_REFS_RULESET`]), the
//! [`VARIABLES`] and [`SECRETS`], and the commit status [`REQUIRED_STATUS`] as the required
//! check, from the App ([`REQUIRED_STATUS_SOURCE`]).

mod audit;
mod cache;
pub mod calls;
pub mod dispatch;
pub mod explain;
mod guards;
pub mod install;
pub mod pins;
mod render;
mod steps;

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch_profile::{CacheSpec, CacheTool, Platform, Profile, StepsSpec, Submodules};

pub use audit::{Rule, Violation, audit_trust};
pub use cache::pr_cache_note;
pub use calls::{VouchCall, vouch_calls};
pub use dispatch::Dispatch;
pub use install::{Install, Machine};
pub use render::build::{PR_BUILD_JOB, PUSH_BUILD_JOB, TRUSTED_ONLY_SECRETS};
pub use render::trigger::MIN_NAMED_DIGITS;
pub use render::{
    BUILD_FILE, BUILD_WORKFLOW_NAME, HEADER, PR_BUILD_GROUP, REQUEST_ARTIFACT_PREFIX,
    REQUIRED_STATUS, SENTINEL_JOB, SIGN_FILE, SIGNING_JOBS, TRIGGER_FILE, TRIGGER_LABEL,
    TRUSTED_ENVIRONMENT,
};

/// Minutes a build job may run (CuPy's cold builds of every GPU architecture take hours).
pub const DEFAULT_BUILD_TIMEOUT_MINUTES: u32 = 240;

/// Who may ask for a pull-request build unless the profile says otherwise.
pub const DEFAULT_TRIGGER_ASSOCIATIONS: &[&str] = &["OWNER", "MEMBER"];

/// GitHub's `author_association` values
/// (https://docs.github.com/en/graphql/reference/enums#commentauthorassociation).
pub const AUTHOR_ASSOCIATIONS: &[&str] = &[
    "OWNER",
    "MEMBER",
    "COLLABORATOR",
    "CONTRIBUTOR",
    "FIRST_TIME_CONTRIBUTOR",
    "FIRST_TIMER",
    "MANNEQUIN",
    "NONE",
];

/// The refs [`TRUSTED_ENVIRONMENT`]'s deployment policy must allow, and no others: the
/// default branch (trigger, sign and `workflow_run` jobs run there) and the push branches.
pub const TRUSTED_REFS: &[&str] = &["main", "v[0-9]*", "hotfix-*", "tags: v[0-9]*"];

/// What a deployment policy of name patterns does not stop, and the ruleset that does. A job
/// runs the workflow file of the ref it runs on, so whoever can create a ref the policy
/// allows runs their own workflow with the environment's secrets; an environment can require
/// "protected branches", but not for tags and not together with patterns.
pub const TRUSTED_REFS_RULESET: &str = "a deployment policy of ref patterns alone lets any writer create a matching branch (hotfix-x, v9-x) or tag (v9) with their own vouch-build.yml, whose push build then reads every secret of that environment (the GitHub App's key, which labels pull requests and posts vouch/pr-build; the seal key; the cache and test-farm secrets) and signs push-build provenance for that ref. Add a repository ruleset on refs/heads/main, refs/heads/v[0-9]*, refs/heads/hotfix-* and refs/tags/v[0-9]* that restricts creations, updates and deletions to a bypass list of release managers and blocks force pushes; then only they can reach the environment";

/// Where [`REQUIRED_STATUS`] must come from. A required check named by context alone is
/// satisfied by any check or status of that name, and a pull request's own run (a fork's
/// included) can report a check run named `vouch/pr-build`.
pub const REQUIRED_STATUS_SOURCE: &str = "require it from the GitHub App whose client id is vars.VOUCH_APP_CLIENT_ID (a ruleset's required status check with that App as its source, or branch protection's expected source), never from any source: a pull request's own run can report a check of that name, and only the App's token, which the sign workflow posts the status with, cannot be had by a pull request";

/// Where a secret lives.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum SecretHome {
    /// In [`TRUSTED_ENVIRONMENT`]: only jobs that name it, on its allowed refs, can read it.
    TrustedEnvironment,
    /// A repository secret: any workflow run of the repository itself can read it, a
    /// same-repository pull request's included (it may rewrite the workflow file).
    Repository,
}

/// Repository variables (`vars.*`) the workflows read, and what for.
pub const VARIABLES: &[(&str, &str)] = &[
    (
        "VOUCH_APP_CLIENT_ID",
        "the GitHub App (client id) that labels pull requests, posts the commit status vouch/pr-build and dispatches to a test-farm repository",
    ),
    (
        "VOUCH_CACHE_STORE",
        "the compiler cache's Redis server as the trusted user (redis://user@host:port; cache store `redis`)",
    ),
    (
        "VOUCH_TEST_FARM_REPO",
        "OWNER/NAME of the test farm's repository (dispatch mode `repository`)",
    ),
    (
        "VOUCH_EXTERNAL_TEST_REPO",
        "OWNER/NAME of the repository that runs the targets FlexCI does not (`external_tags`, e.g. CuPy's ROCm CI cupy/self-hosted-ci): a `/test` of only such targets is sent there by repository_dispatch (dispatch mode `flexci`)",
    ),
];

/// Secrets the workflows read, where each must live, and what for.
pub const SECRETS: &[(&str, SecretHome, &str)] = &[
    (
        "VOUCH_APP_PRIVATE_KEY",
        SecretHome::TrustedEnvironment,
        "the GitHub App's private key",
    ),
    (
        "VOUCH_CACHE_PASSWORD",
        SecretHome::TrustedEnvironment,
        "the Redis password for pushes (may write its own branch's scope; cache store `redis`)",
    ),
    (
        "VOUCH_CACHE_ADMIN_PASSWORD",
        SecretHome::TrustedEnvironment,
        "the Redis password `vouch cache grant` creates each pull request's own user with (cache store `redis`)",
    ),
    (
        "VOUCH_SEAL_KEY",
        SecretHome::TrustedEnvironment,
        "32+ random bytes that authenticate the venvs and toolkits push builds reuse and sign every compiler-cache entry they write (a push build's cache needs it); its public half goes in [workflows.cache] public_key (`vouch cache public-key`)",
    ),
    (
        "FLEXCI_WEBHOOK_SECRET",
        SecretHome::TrustedEnvironment,
        "the FlexCI webhook secret (dispatch mode `flexci`)",
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

impl Error {
    /// A value of `option` that cannot be used, and why.
    pub(crate) fn option(option: &'static str, value: &str, reason: &str) -> Error {
        Error::Option {
            option,
            value: value.to_owned(),
            reason: reason.to_owned(),
        }
    }
}

/// What the generated workflows are made with, besides the matrix.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Options {
    /// The profile's path relative to the repository root, as the workflows pass it to
    /// `vouch plan --profile` and `vouch build --profile`.
    pub profile_path: String,
    /// How the workflows install vouch.
    pub install: Install,
    /// `timeout-minutes` of a build job.
    pub build_timeout_minutes: u32,
    /// `author_association`s whose `/test` counts.
    pub trigger_associations: Vec<String>,
    pub dispatch: Dispatch,
    /// Adopter steps around `vouch build`.
    pub steps: StepsSpec,
    /// The build jobs' compiler cache (`[workflows.cache]`, checked when the profile loaded).
    pub cache: CacheSpec,
    /// The compiler cache of each platform the profile builds, from `cache`.
    pub cache_tools: Vec<(Platform, CacheTool)>,
    /// Which submodules the sdist job's checkout fetches.
    pub submodules: Submodules,
    /// Where each platform's build jobs run (runner, image): vouch is compiled once per run for each.
    pub machines: Vec<Machine>,
}

impl Options {
    /// The options `[workflows]` of `profile` gives (its install route is required).
    pub fn from_profile(
        profile: &Profile,
        profile_path: impl Into<String>,
    ) -> Result<Options, Error> {
        let spec = profile.workflows.clone().unwrap_or_default();
        Ok(Options {
            profile_path: profile_path.into(),
            install: Install::from_spec(&spec)?,
            build_timeout_minutes: DEFAULT_BUILD_TIMEOUT_MINUTES,
            trigger_associations: spec.trigger_associations.clone().unwrap_or_else(|| {
                DEFAULT_TRIGGER_ASSOCIATIONS
                    .iter()
                    .map(|s| (*s).to_owned())
                    .collect()
            }),
            dispatch: Dispatch::from_spec(spec.dispatch.as_ref())?,
            steps: spec.steps,
            cache_tools: profile
                .platforms
                .iter()
                .filter_map(|p| p.parse::<Platform>().ok())
                .map(|p| (p, spec.cache.tool.for_platform(p)))
                .collect(),
            cache: spec.cache,
            submodules: spec.submodules,
            machines: profile
                .platforms
                .iter()
                .filter_map(|p| {
                    Some(Machine {
                        platform: p.parse::<Platform>().ok()?,
                        runner: profile.runners.get(p)?.clone(),
                        container: profile.containers.get(p).cloned(),
                    })
                })
                .collect(),
        })
    }

    fn validate(&self) -> Result<(), Error> {
        let bad = Error::option;
        let p = &self.profile_path;
        if !plain_relative_path(p) {
            return Err(bad(
                "profile path",
                p,
                "must be a plain relative path (letters, digits, `.`, `_`, `-`, `/`; no `..`)",
            ));
        }
        if !(1..=7200).contains(&self.build_timeout_minutes) {
            return Err(bad(
                "build timeout",
                &self.build_timeout_minutes.to_string(),
                "must be 1 to 7200 minutes",
            ));
        }
        if self.trigger_associations.is_empty() {
            return Err(bad(
                "workflows.trigger_associations",
                "",
                "name at least one author association (e.g. OWNER, MEMBER)",
            ));
        }
        for a in &self.trigger_associations {
            if !AUTHOR_ASSOCIATIONS.contains(&a.as_str()) {
                return Err(bad(
                    "workflows.trigger_associations",
                    a,
                    &format!("must be one of {}", AUTHOR_ASSOCIATIONS.join(", ")),
                ));
            }
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

/// A path in the repository that can go into a workflow unquoted: letters, digits, `.`, `_`,
/// `-`, `/`; relative, no empty, `.` or `..` component.
pub(crate) fn plain_relative_path(p: &str) -> bool {
    !p.is_empty()
        && p.bytes()
            .all(|b| b.is_ascii_alphanumeric() || b"._/-".contains(&b))
        && !p.starts_with(['/', '-'])
        && !p.split('/').any(|c| c.is_empty() || c == "." || c == "..")
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

/// The workflow files for `profile`, in a fixed order (trigger, build, sign); the same
/// inputs give the same bytes.
pub fn generate(profile: &Profile, opts: &Options) -> Result<Vec<GeneratedFile>, Error> {
    validate_profile(profile)?;
    opts.validate()?;
    let platforms: BTreeSet<String> = profile
        .plan()
        .iter()
        .map(|c| c.platform.as_str().to_owned())
        .collect();
    opts.install.check_covers(&platforms)?;
    let vars = render::Vars {
        project: &profile.project,
        opts,
    };
    Ok(vec![
        GeneratedFile {
            name: TRIGGER_FILE.to_owned(),
            contents: render::trigger::render(&vars),
        },
        GeneratedFile {
            name: BUILD_FILE.to_owned(),
            contents: render::build::render(&vars)?,
        },
        GeneratedFile {
            name: SIGN_FILE.to_owned(),
            contents: render::sign::render(&vars),
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
