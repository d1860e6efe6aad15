//! The build venv: one per (interpreter, lock file), created once, sealed, and copied
//! (verified) into each build's work directory, so no build can change what a later build
//! runs. With a lock ([`crate::lock`]) every file is hash-checked by pip and the venv's cache
//! key is the lock's sha256; without one (a plain `vouch build` of a project no profile
//! locks) vouch's pins and the project's requirements are installed unhashed, and the build
//! output says so (`build_lock` is absent).

use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};

use vouch_core::host::HostLayout;
use vouch_fs::seal::{Seal, SealError, SealKey};

use crate::lock::{BuildLock, LockError, LockFile, parse_hash_mismatches, tools_from_report};
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

/// A build's own venv: a verified copy of the sealed venv, inside the build's work directory,
/// gone when the build ends. Whatever the build does to it (a `.pth` dropped into
/// site-packages, a package installed by `setup.py`) dies with it.
#[derive(Clone, Debug)]
pub struct Venv {
    pub root: PathBuf,
    pub python: PathBuf,
    /// `pip freeze` of the venv, for the build record.
    pub frozen: Vec<String>,
    /// The lock it was installed from, and each tool's file and sha256.
    pub lock: Option<BuildLock>,
}

/// The venv for one (interpreter, build requirements), created once, sealed
/// ([`vouch_fs::seal`]) and never run in place: builds run copies of it.
#[derive(Debug)]
pub struct SealedVenv {
    pub root: PathBuf,
    seal: Seal,
    frozen: Vec<String>,
    lock: Option<BuildLock>,
    /// Whether an existing venv was reused (after its check) or one was created.
    pub reused: bool,
}

const FREEZE_FILE: &str = "vouch-freeze.txt";

/// pip installing exactly the files a hash-pinned requirements file names: every file's
/// sha256 checked, nothing resolved beyond it, no source builds.
pub(crate) const PIP_HASHED_INSTALL: &[&str] = &[
    "-m",
    "pip",
    "install",
    "--quiet",
    "--require-hashes",
    "--no-deps",
    "--only-binary=:all:",
];
/// The [`BuildLock`] of a locked venv, sealed with it.
const LOCK_RECORD_FILE: &str = "vouch-lock.json";

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_owned(),
        source,
    }
}

fn seal_err(e: SealError) -> BuildError {
    BuildError::Sealed(e)
}

/// The venv's interpreter, as the host lays it out ([`HostLayout`]).
pub(crate) fn venv_python(root: &Path) -> PathBuf {
    HostLayout::current().venv_python(root)
}

/// How the venv gets its packages: from a lock, or (no lock) from vouch's pins and the
/// project's requirements, unhashed.
enum Source<'a> {
    Locked(LockFile),
    Unlocked(&'a [String]),
}

impl Source<'_> {
    /// The venv's cache key: the interpreter, and the lock's sha256 or the requirement strings.
    fn key(&self, python: &Python) -> String {
        let mut key = Sha256::new();
        let mut part = |p: &str| {
            key.update(p.as_bytes());
            key.update([0]);
        };
        part(python.executable.to_string_lossy().as_ref());
        part(python.version.as_str());
        match self {
            Source::Locked(lock) => {
                part("lock");
                part(&lock.sha256.to_string());
            }
            Source::Unlocked(requires) => {
                BUILD_TOOL_PINS.iter().for_each(|p| part(p));
                requires.iter().for_each(|r| part(r));
            }
        }
        hex_prefix(&key.finalize())
    }

    /// Installs into the staged venv; returns the lock record for a locked install.
    fn install(&self, python: &Path, staging: &Path) -> Result<Option<BuildLock>, BuildError> {
        match self {
            Source::Unlocked(requires) => {
                let constraints = staging.join("vouch-constraints.txt");
                std::fs::write(&constraints, BUILD_TOOL_PINS.join("\n") + "\n")
                    .map_err(io(&constraints))?;
                let mut cmd = scrubbed_command(python);
                cmd.args(["-m", "pip", "install", "--quiet", "-c"])
                    .arg(&constraints)
                    .args(BUILD_TOOL_PINS)
                    .args(requires.iter());
                run_logged(cmd, "pip install of the build requirements")?;
                std::fs::remove_file(&constraints).map_err(io(&constraints))?;
                Ok(None)
            }
            Source::Locked(lock) => {
                // The report goes outside the venv: it names the index's URLs.
                let report_dir = tempfile::tempdir().map_err(io(&std::env::temp_dir()))?;
                let report = report_dir.path().join("pip-report.json");
                let mut cmd = scrubbed_command(python);
                cmd.args(PIP_HASHED_INSTALL)
                    .arg("--report")
                    .arg(&report)
                    .arg("-r")
                    .arg(&lock.path);
                match run_logged(cmd, "pip install of the locked build tools") {
                    Ok(_) => {}
                    Err(BuildError::Failed { output_tail, .. })
                        if !parse_hash_mismatches(&output_tail).is_empty() =>
                    {
                        return Err(LockError::HashMismatch {
                            lock: lock.path.clone(),
                            mismatches: parse_hash_mismatches(&output_tail),
                        }
                        .into());
                    }
                    Err(e) => return Err(e),
                }
                let tools = tools_from_report(&report, lock)?;
                Ok(Some(BuildLock {
                    file: lock
                        .path
                        .file_name()
                        .unwrap_or_default()
                        .to_string_lossy()
                        .into_owned(),
                    sha256: lock.sha256.to_string(),
                    tools,
                }))
            }
        }
    }
}

fn read_lock_record(root: &Path) -> Result<Option<BuildLock>, BuildError> {
    let path = root.join(LOCK_RECORD_FILE);
    match std::fs::read(&path) {
        Ok(bytes) => serde_json::from_slice(&bytes)
            .map(Some)
            .map_err(|e| BuildError::Io {
                path,
                source: std::io::Error::other(e),
            }),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
        Err(e) => Err(io(&path)(e)),
    }
}

impl SealedVenv {
    /// Returns the sealed venv for this interpreter and these requirements under `venvs`,
    /// creating it if needed. With `lock`, the venv is installed from that hash-locked file
    /// (which must have been made from the project's `build-system.requires`) and keyed by its
    /// sha256. A venv whose check fails (anything added, removed or changed since it was
    /// sealed) is moved aside and made again. Creation happens in a temporary sibling renamed
    /// into place, so concurrent builds never see a half-installed venv, and a failed install
    /// (a hash the lock does not list) leaves nothing behind.
    pub fn ensure(
        python: &Python,
        system: &BuildSystem,
        lock: Option<&Path>,
        venvs: &Path,
        seal_key: Option<&SealKey>,
    ) -> Result<SealedVenv, BuildError> {
        let source = match lock {
            Some(path) => {
                let lock = LockFile::read(path)?;
                lock.check_covers(system.requires.iter().map(String::as_str))?;
                Source::Locked(lock)
            }
            None => Source::Unlocked(&system.requires),
        };
        let key = source.key(python);
        let root = venvs.join(format!("py{}-{key}", python.version));
        let seal_path = venvs.join(format!("py{}-{key}.seal.json", python.version));
        std::fs::create_dir_all(venvs).map_err(io(venvs))?;
        // Builds running at once (parallel CI jobs on one runner, a test suite) would
        // otherwise see each other's venv between its rename into place and its seal being
        // written, and take it for a tampered one. Held until this returns.
        let lock_path = venvs.join(format!(".py{}-{key}.lock", python.version));
        let _lock = vouch_fs::lock_file(&lock_path).map_err(io(&lock_path))?;

        if root.exists() {
            let started = std::time::Instant::now();
            match Seal::read(&seal_path, seal_key)
                .and_then(|seal| seal.check(&root, false).map(|c| (seal, c)))
            {
                Ok((seal, checked)) => {
                    let frozen = std::fs::read_to_string(root.join(FREEZE_FILE))
                        .map_err(io(&root))?
                        .lines()
                        .map(str::to_owned)
                        .collect();
                    tracing::debug!(
                        venv = %root.display(),
                        files = checked.files,
                        by_identity = checked.by_identity,
                        hashed = checked.hashed,
                        seconds = started.elapsed().as_secs_f64(),
                        "reusing the sealed build venv"
                    );
                    return Ok(SealedVenv {
                        lock: read_lock_record(&root)?,
                        root,
                        seal,
                        frozen,
                        reused: true,
                    });
                }
                Err(e) => {
                    tracing::warn!(venv = %root.display(), error = %e, "build venv failed its check; making it again");
                    let aside = venvs.join(format!(".tampered-{key}-{}", std::process::id()));
                    std::fs::rename(&root, &aside).map_err(io(&root))?;
                    vouch_fs::seal::remove_tree(&aside).map_err(seal_err)?;
                }
            }
        }

        let staging = tempfile::Builder::new()
            .prefix(".staging-")
            .tempdir_in(venvs)
            .map_err(io(venvs))?;
        tracing::info!(venv = %root.display(), "creating build venv");
        let mut cmd = scrubbed_command(&python.executable);
        cmd.args(["-m", "venv"]).arg(staging.path());
        run_logged(cmd, "python -m venv")?;

        let staged_python = venv_python(staging.path());
        let lock = source.install(&staged_python, staging.path())?;

        let mut cmd = scrubbed_command(&staged_python);
        cmd.args(["-m", "pip", "freeze", "--all"]);
        let frozen: Vec<String> = run_logged(cmd, "pip freeze")?
            .lines()
            .map(str::to_owned)
            .collect();
        // pip itself is half the venv's files and no `--no-isolation` build runs it: it goes,
        // so each build's verified copy is half the work.
        let mut cmd = scrubbed_command(&staged_python);
        cmd.args(["-m", "pip", "uninstall", "--yes", "--quiet", "pip"]);
        run_logged(cmd, "pip uninstall pip")?;
        let frozen: Vec<String> = frozen
            .into_iter()
            .filter(|l| !l.starts_with("pip=="))
            .collect();
        let staged_freeze = staging.path().join(FREEZE_FILE);
        std::fs::write(&staged_freeze, frozen.join("\n") + "\n").map_err(io(&staged_freeze))?;
        if let Some(record) = &lock {
            let path = staging.path().join(LOCK_RECORD_FILE);
            let json = serde_json::to_vec_pretty(record).expect("a lock record serializes");
            std::fs::write(&path, json).map_err(io(&path))?;
        }

        let staged = staging.keep();
        if let Err(e) = std::fs::rename(&staged, &root) {
            // Another build won the race; use its venv (checked below) and discard ours.
            let _ = std::fs::remove_dir_all(&staged);
            if !root.is_dir() {
                return Err(io(&root)(e));
            }
            let seal = Seal::read(&seal_path, seal_key).map_err(seal_err)?;
            seal.check(&root, false).map_err(seal_err)?;
            return Ok(SealedVenv {
                lock: read_lock_record(&root)?,
                root,
                seal,
                frozen,
                reused: true,
            });
        }
        let seal = Seal::make(&root).map_err(seal_err)?;
        seal.write(&seal_path, seal_key).map_err(seal_err)?;
        Ok(SealedVenv {
            root,
            seal,
            frozen,
            lock,
            reused: false,
        })
    }

    /// Copies the venv to `dest` for one build, checking every byte against the seal, and
    /// points its scripts' `#!` lines at the copy.
    pub fn instantiate(&self, dest: &Path) -> Result<Venv, BuildError> {
        let started = std::time::Instant::now();
        let from = format!("#!{}", venv_python(&self.root).display());
        let to = format!("#!{}", venv_python(dest).display());
        // Seal paths are `/`-separated on every host.
        let scripts_prefix = format!("{}/", HostLayout::current().venv_scripts_dir());
        let checked = self
            .seal
            .copy_to(&self.root, dest, &|rel, bytes| {
                if rel.starts_with(scripts_prefix.as_str()) && bytes.starts_with(from.as_bytes()) {
                    let mut out = to.clone().into_bytes();
                    out.extend_from_slice(&bytes[from.len()..]);
                    out
                } else {
                    bytes
                }
            })
            .map_err(seal_err)?;
        tracing::debug!(
            venv = %dest.display(),
            files = checked.files,
            bytes = checked.bytes_hashed,
            seconds = started.elapsed().as_secs_f64(),
            "copied the build venv for this build"
        );
        Ok(Venv {
            python: venv_python(dest),
            root: dest.to_owned(),
            frozen: self.frozen.clone(),
            lock: self.lock.clone(),
        })
    }
}

fn hex_prefix(bytes: &[u8]) -> String {
    bytes[..8].iter().map(|b| format!("{b:02x}")).collect()
}
