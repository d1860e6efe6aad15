//! Install: hand exactly the verified files to pip, each pinned to the digest that was
//! verified, so pip cannot substitute anything on the way ([`pip_install_verified`]).
//!
//! With extras, a second, separate pip call installs what the wheels require
//! ([`plan_dependencies`], then [`pip_install_dependencies`]): the base `Requires-Dist` and
//! the requested extras', selected by vouch from each verified wheel's own metadata. Those come
//! from the package index and are not verified by vouch; they are reported by name and
//! version from pip's installation report. Everything is planned before anything is
//! installed, so an unknown extra installs nothing.

mod environment;
mod requirements;

use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::FetchReport;
use requirements::CoreMetadata;

/// pip's children (build backends of source distributions) inherit its environment: the
/// GitHub tokens never reach them.
const TOKEN_VARS: &[&str] = &["GH_TOKEN", "GITHUB_TOKEN", "GH_TOKEN_FILE"];

#[derive(Debug, thiserror::Error)]
pub enum InstallError {
    #[error("resolving {path:?}")]
    Resolve {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{0:?} cannot be a file URL")]
    FileUrl(PathBuf),
    #[error("writing {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("running {}", .python.display())]
    Spawn {
        python: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("pip install of the verified wheels failed ({0})")]
    Failed(std::process::ExitStatus),
    #[error("reading the metadata of {}", .wheel.display())]
    Wheel {
        wheel: PathBuf,
        #[source]
        source: vouch_wheel::WheelError,
    },
    #[error("{}: METADATA: {reason}", .wheel.display())]
    BadMetadata { wheel: PathBuf, reason: String },
    #[error("--extras: {extra:?} is not a valid extra name ({reason})")]
    InvalidExtra { extra: String, reason: String },
    #[error(
        "--extras: {extra:?} is not an extra of {}; it provides {}",
        .wheel.display(),
        if .provided.is_empty() { "none".to_owned() } else { .provided.join(", ") }
    )]
    UnknownExtra {
        extra: String,
        wheel: PathBuf,
        provided: Vec<String>,
    },
    #[error(
        "asking {} for its marker environment (expected a Python interpreter): {detail}",
        .python.display()
    )]
    MarkerEnvironment { python: PathBuf, detail: String },
    #[error(
        "pip install of the wheels' requirements (from the package index, not verified by vouch) failed ({0})"
    )]
    DependenciesFailed(std::process::ExitStatus),
    #[error("pip's installation report {path:?}: {reason} (pip 22.2 or newer writes one)")]
    Report { path: PathBuf, reason: String },
    #[error(
        "pip installed {name} {version} from {url}, not the verified wheel {}: the verified distribution must never come from the index",
        .verified.display()
    )]
    Replaced {
        name: String,
        version: String,
        url: String,
        verified: PathBuf,
    },
}

/// `python`, in the caller's environment less the GitHub tokens.
pub(crate) fn user_python(python: &Path) -> std::process::Command {
    let mut cmd = std::process::Command::new(python);
    for var in TOKEN_VARS {
        cmd.env_remove(var);
    }
    cmd
}

/// `python -m pip install ...`, its output on stderr: pip's progress is a note, and stdout
/// holds only vouch's own report (`--json` must stay parseable).
fn pip_install(python: &Path) -> std::process::Command {
    let mut cmd = user_python(python);
    cmd.args(["-m", "pip", "install"])
        .stdout(std::process::Stdio::from(std::io::stderr()));
    cmd
}

/// Runs a `pip_install` command to its end; a pip that cannot be started is `Spawn`.
fn run_pip(
    mut cmd: std::process::Command,
    python: &Path,
) -> Result<std::process::ExitStatus, InstallError> {
    cmd.status().map_err(|source| InstallError::Spawn {
        python: python.to_owned(),
        source,
    })
}

/// An absolute, percent-encoded `file:` URL: a relative output directory or a `#` in a path
/// must not change what pip reads.
fn file_url(path: &Path) -> Result<url::Url, InstallError> {
    let abs = std::path::absolute(path).map_err(|source| InstallError::Resolve {
        path: path.to_owned(),
        source,
    })?;
    url::Url::from_file_path(&abs).map_err(|()| InstallError::FileUrl(abs))
}

fn write_private(path: &Path, text: &str) -> Result<(), InstallError> {
    vouch_fs::write_atomically(path, text.as_bytes(), vouch_fs::Mode::Private).map_err(|source| {
        InstallError::Write {
            path: path.to_owned(),
            source,
        }
    })
}

/// `pip install --no-deps --require-hashes` of the report's wheels, with no GitHub token in
/// pip's environment. `scratch` holds the requirements file.
pub fn pip_install_verified(
    python: &Path,
    report: &FetchReport,
    scratch: &Path,
    pip_args: &[String],
) -> Result<(), InstallError> {
    let mut req = String::new();
    for w in &report.wheels {
        let name = w
            .path
            .file_name()
            .and_then(|n| n.to_str())
            .unwrap_or_default();
        let dist = name.split('-').next().unwrap_or(name);
        req.push_str(&format!(
            "{dist} @ {} --hash=sha256:{}\n",
            file_url(&w.path)?,
            w.sha256.hex()
        ));
    }
    let req_file = scratch.join("requirements.txt");
    write_private(&req_file, &req)?;
    let mut cmd = pip_install(python);
    cmd.args(["--no-deps", "--require-hashes", "-r"])
        .arg(&req_file)
        .args(pip_args);
    let status = run_pip(cmd, python)?;
    if !status.success() {
        return Err(InstallError::Failed(status));
    }
    Ok(())
}

/// What the second step installs for one verified wheel.
#[derive(Clone, Debug, Serialize)]
pub struct Dependencies {
    pub wheel: PathBuf,
    /// The normalized distribution name and the version, from the wheel's METADATA.
    pub name: String,
    pub version: String,
    /// The extras in effect: those requested, and those the wheel's requirements on itself add.
    pub extras: Vec<String>,
    /// The base `Requires-Dist` and the extras', markers evaluated and removed.
    pub requirements: Vec<String>,
}

/// Reads each verified wheel's metadata, asks `python` for its marker environment and selects
/// the requirements for `extras`. Nothing is installed: an unknown extra fails here.
pub fn plan_dependencies(
    python: &Path,
    report: &FetchReport,
    extras: &[String],
) -> Result<Vec<Dependencies>, InstallError> {
    let mut metadata = Vec::new();
    for w in &report.wheels {
        let contents = vouch_wheel::read_wheel(&w.path).map_err(|source| InstallError::Wheel {
            wheel: w.path.clone(),
            source,
        })?;
        let text = contents.metadata.ok_or_else(|| InstallError::BadMetadata {
            wheel: w.path.clone(),
            reason: format!("{}/METADATA is missing", contents.dist_info),
        })?;
        let text = String::from_utf8(text).map_err(|_| InstallError::BadMetadata {
            wheel: w.path.clone(),
            reason: "it is not UTF-8".into(),
        })?;
        metadata.push((w.path.clone(), CoreMetadata::parse(&w.path, &text)?));
    }
    let env = environment::marker_environment(python)?;
    metadata
        .into_iter()
        .map(|(wheel, m)| {
            let selected = m.select(&wheel, extras, &env)?;
            tracing::info!(wheel = %wheel.display(), extras = ?selected.extras, requirements = ?selected.requirements, "selected requirements");
            Ok(Dependencies {
                wheel,
                name: m.name.to_string(),
                version: m.version,
                extras: selected.extras,
                requirements: selected.requirements,
            })
        })
        .collect()
}

/// One distribution pip installed in the second step, as its report names it.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Installed {
    pub name: String,
    pub version: String,
    /// Where pip took it from.
    pub url: Option<String>,
}

#[derive(serde::Deserialize)]
struct PipReport {
    install: Vec<PipInstall>,
}

#[derive(serde::Deserialize)]
struct PipInstall {
    metadata: PipMetadata,
    download_info: Option<PipDownload>,
}

#[derive(serde::Deserialize)]
struct PipMetadata {
    name: String,
    version: String,
}

#[derive(serde::Deserialize)]
struct PipDownload {
    url: String,
}

/// The second pip call: the planned requirements, from the index (or wherever `pip_args`
/// point pip). Each verified wheel is named again by its file URL, so that the resolver takes
/// that distribution from the verified file, never from the index, when a requirement needs
/// it. Returns what pip installed other than the verified wheels; nothing when nothing was
/// planned.
pub fn pip_install_dependencies(
    python: &Path,
    plan: &[Dependencies],
    scratch: &Path,
    pip_args: &[String],
) -> Result<Vec<Installed>, InstallError> {
    if plan.iter().all(|d| d.requirements.is_empty()) {
        return Ok(Vec::new());
    }
    let mut req = String::new();
    let mut anchors = Vec::new();
    for d in plan {
        let url = file_url(&d.wheel)?.to_string();
        req.push_str(&format!("{} @ {url}\n", d.name));
        anchors.push((d, url));
    }
    for line in plan.iter().flat_map(|d| &d.requirements) {
        req.push_str(line);
        req.push('\n');
    }
    let req_file = scratch.join("dependencies.txt");
    write_private(&req_file, &req)?;
    let report_file = scratch.join("pip-report.json");
    let mut cmd = pip_install(python);
    cmd.arg("--report")
        .arg(&report_file)
        .arg("-r")
        .arg(&req_file)
        .args(pip_args);
    let status = run_pip(cmd, python)?;
    if !status.success() {
        return Err(InstallError::DependenciesFailed(status));
    }
    let bad = |reason: String| InstallError::Report {
        path: report_file.clone(),
        reason,
    };
    let text = std::fs::read_to_string(&report_file).map_err(|e| bad(e.to_string()))?;
    let report: PipReport = serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?;
    let mut installed = Vec::new();
    for i in report.install {
        let item = Installed {
            name: i.metadata.name,
            version: i.metadata.version,
            url: i.download_info.map(|d| d.url),
        };
        let normalized = vouch_core::normalize_dist_name(&item.name);
        if let Some((d, url)) = anchors.iter().find(|(d, _)| d.name == normalized) {
            // pip reinstalls a verified wheel it cannot see installed (`--target`); from its
            // file that is the same verified wheel.
            if item.url.as_deref() == Some(url.as_str()) {
                continue;
            }
            return Err(InstallError::Replaced {
                name: item.name,
                version: item.version,
                url: item.url.unwrap_or_else(|| "an unknown place".into()),
                verified: d.wheel.clone(),
            });
        }
        installed.push(item);
    }
    Ok(installed)
}
