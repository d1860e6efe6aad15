//! The build venv: one per (interpreter, build requirements), created once and reused.

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use crate::{BuildError, BuildSystem, run_logged, scrubbed_command};

/// Build front-end and backend versions vouch pins, so a rebuild months later runs the same
/// tools (setuptools writes its version into every wheel's `WHEEL` file). A project's own
/// requirements must be compatible with these.
pub const BUILD_TOOL_PINS: &[&str] = &[
    "build==1.3.0",
    "packaging==25.0",
    "pyproject_hooks==1.2.0",
    "setuptools==80.9.0",
    "wheel==0.45.1",
];

#[derive(Clone, Debug)]
pub struct Python {
    /// The real interpreter (not a pyenv shim).
    pub executable: PathBuf,
    /// e.g. `3.11.7`.
    pub version: String,
    /// A free-threaded build (`Py_GIL_DISABLED`), as `3.14t` needs.
    pub free_threaded: bool,
}

impl Python {
    pub fn find(explicit: Option<&Path>) -> Result<Python, BuildError> {
        let candidate = match explicit {
            Some(p) => p.to_owned(),
            None => which::which("python3")
                .map_err(|e| BuildError::NoPython(format!("python3 is not on PATH ({e})")))?,
        };
        let mut cmd = scrubbed_command(&candidate);
        cmd.args([
            "-c",
            "import sys, platform, sysconfig; print(sys.executable); print(platform.python_version()); print(sysconfig.get_config_var('Py_GIL_DISABLED') or 0)",
        ]);
        let out = run_logged(cmd, &format!("{}", candidate.display()))?;
        let mut lines = out.lines();
        match (lines.next(), lines.next(), lines.next()) {
            (Some(exe), Some(ver), gil) if !exe.is_empty() => Ok(Python {
                executable: exe.into(),
                version: ver.trim().into(),
                free_threaded: gil.is_some_and(|g| g.trim() == "1"),
            }),
            _ => Err(BuildError::NoPython(format!(
                "{} did not report sys.executable",
                candidate.display()
            ))),
        }
    }
}

#[derive(Clone, Debug)]
pub struct Venv {
    pub root: PathBuf,
    pub python: PathBuf,
    /// `pip freeze` of the venv, for the build record.
    pub frozen: Vec<String>,
}

impl Venv {
    /// Returns the venv for this interpreter and these requirements, creating it if needed.
    /// Creation happens in a temporary sibling that is renamed into place, so concurrent
    /// builds never see a half-installed venv; a venv does not care about its directory name
    /// when used through its `bin/python`.
    pub fn ensure(
        python: &Python,
        system: &BuildSystem,
        cache_dir: &Path,
    ) -> Result<Venv, BuildError> {
        let mut key = Sha256::new();
        for part in [
            python.executable.to_string_lossy().as_ref(),
            python.version.as_str(),
        ]
        .into_iter()
        .chain(BUILD_TOOL_PINS.iter().copied())
        .chain(system.requires.iter().map(String::as_str))
        {
            key.update(part.as_bytes());
            key.update([0]);
        }
        let key = hex_prefix(&key.finalize());
        let venvs = cache_dir.join("venvs");
        let root = venvs.join(format!("py{}-{key}", python.version));
        let venv_python = root.join("bin").join("python");
        let freeze_file = root.join("vouch-freeze.txt");
        if let Ok(text) = std::fs::read_to_string(&freeze_file) {
            tracing::debug!(venv = %root.display(), "reusing build venv");
            return Ok(Venv {
                python: venv_python,
                frozen: text.lines().map(str::to_owned).collect(),
                root,
            });
        }

        std::fs::create_dir_all(&venvs).map_err(|e| BuildError::Io {
            path: venvs.clone(),
            source: e,
        })?;
        let staging = tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(&venvs)
            .map_err(|e| BuildError::Io {
                path: venvs.clone(),
                source: e,
            })?;
        tracing::info!(venv = %root.display(), "creating build venv");
        let mut cmd = scrubbed_command(&python.executable);
        cmd.args(["-m", "venv"]).arg(staging.path());
        run_logged(cmd, "python -m venv")?;

        let staged_python = staging.path().join("bin").join("python");
        let constraints = staging.path().join("vouch-constraints.txt");
        std::fs::write(&constraints, BUILD_TOOL_PINS.join("\n") + "\n").map_err(|e| {
            BuildError::Io {
                path: constraints.clone(),
                source: e,
            }
        })?;
        let mut cmd = scrubbed_command(&staged_python);
        cmd.args(["-m", "pip", "install", "--quiet", "-c"])
            .arg(&constraints)
            .args(BUILD_TOOL_PINS)
            .args(&system.requires);
        run_logged(cmd, "pip install of the build requirements")?;

        let mut cmd = scrubbed_command(&staged_python);
        cmd.args(["-m", "pip", "freeze", "--all"]);
        let frozen: Vec<String> = run_logged(cmd, "pip freeze")?
            .lines()
            .map(str::to_owned)
            .collect();
        let staged_freeze = staging.path().join("vouch-freeze.txt");
        std::fs::write(&staged_freeze, frozen.join("\n") + "\n").map_err(|e| BuildError::Io {
            path: staged_freeze,
            source: e,
        })?;

        let staged = staging.keep();
        if let Err(e) = std::fs::rename(&staged, &root) {
            // Another build won the race; use its venv and discard ours.
            let _ = std::fs::remove_dir_all(&staged);
            if !freeze_file.is_file() {
                return Err(BuildError::Io {
                    path: root,
                    source: e,
                });
            }
        }
        Ok(Venv {
            python: venv_python,
            frozen,
            root,
        })
    }
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes[..8].iter().map(|b| format!("{b:02x}")).collect()
}
