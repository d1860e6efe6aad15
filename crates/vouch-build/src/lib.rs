//! Builds one wheel of a PEP 517 project reproducibly: a vouch-managed venv with pinned build
//! tools, a copy of the source in a fresh directory, a scrubbed environment with
//! `SOURCE_DATE_EPOCH` and compiler path-prefix maps, then [`vouch_wheel::normalize_wheel`].

mod epoch;
mod error;
pub mod lock;
mod pyproject;
mod source;
mod venv;
mod workdir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

pub use epoch::{EpochSource, parse_epoch, source_date_epoch};
pub use error::BuildError;
pub use lock::{BuildLock, LockError, LockedTool};
pub use pyproject::BuildSystem;
pub use source::unpack_sdist;
pub use venv::{BUILD_TOOL_PINS, Python, SealedVenv, Venv};

#[derive(Clone, Debug)]
pub struct BuildOptions {
    pub source: PathBuf,
    pub out_dir: PathBuf,
    /// Overrides the epoch taken from git.
    pub source_date_epoch: Option<u64>,
    /// The interpreter to build for; `python3` on PATH when `None`.
    pub python: Option<PathBuf>,
    /// Where venvs are kept between builds.
    pub cache_dir: PathBuf,
    /// Extra variables for the build (e.g. a profile's CUDA settings). They are recorded, so
    /// they must not be secrets.
    pub env: Vec<(String, String)>,
    /// A compiler launcher (`ccache`, `sccache`) put in front of the C and C++ compilers.
    pub launcher: Option<PathBuf>,
    /// Where the source is copied and built [default: `<cache_dir>/work`]. The path is fixed
    /// (and locked while a build runs) so compiler-cache keys, which see the paths in the
    /// prefix-map flags, match from build to build.
    pub work_dir: Option<PathBuf>,
    /// Directories put first on the build's `PATH` (a toolkit's `bin`).
    pub path_prepend: Vec<PathBuf>,
    /// More `-ffile-prefix-map` rewrites (e.g. the toolkit directory to `/cuda`).
    pub prefix_maps: Vec<(PathBuf, String)>,
    /// Turns the source into the distribution to build (a profile's template).
    pub patch: Option<SourcePatch>,
    /// Runs between the PEP 517 build and normalization (e.g. `auditwheel repair`).
    pub repair: Option<Repair>,
    /// The hash-locked requirements file the build venv is installed from ([`lock`]); `None`
    /// installs [`BUILD_TOOL_PINS`] and the project's requirements unhashed.
    pub lock: Option<PathBuf>,
    /// Which cache root the build's venv (and toolkit) come from.
    pub trust: TrustLevel,
    /// Authenticates the seal records of what this build reuses (see [`vouch_fs::seal`]).
    pub seal_key: Option<std::sync::Arc<vouch_fs::seal::SealKey>>,
}

/// Builds of different trust run tools from different roots of the cache directory, so an
/// untrusted build (a pull request's code, a rebuild of someone else's release) never
/// shares a venv or a toolkit with a trusted one (a push to a protected branch). Within a
/// root every reuse is checked against its seal; across roots nothing is shared at all.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum TrustLevel {
    Trusted,
    #[default]
    Untrusted,
}

impl TrustLevel {
    pub fn as_str(self) -> &'static str {
        match self {
            TrustLevel::Trusted => "trusted",
            TrustLevel::Untrusted => "untrusted",
        }
    }

    /// `<cache_dir>/<level>`: where this level's venvs and toolchains live.
    pub fn root(self, cache_dir: &Path) -> PathBuf {
        cache_dir.join(self.as_str())
    }
}

/// Applied to the copied source before the build: `[project]` keys in `pyproject.toml` and
/// files placed in the tree.
#[derive(Clone, Debug, Default)]
pub struct SourcePatch {
    pub project: toml::Table,
    /// Destination (relative, `/`-separated) -> file to copy there.
    pub files: Vec<(String, PathBuf)>,
}

/// `auditwheel repair` for manylinux tags, when the tool is there.
#[derive(Clone, Debug, Default)]
pub struct Repair {
    /// `--plat`, e.g. `manylinux_2_28_x86_64`; auditwheel's choice when `None`.
    pub plat: Option<String>,
    /// Libraries never bundled (`--exclude`), e.g. the CUDA libraries the user installs.
    pub exclude: Vec<String>,
}

#[derive(Clone, Debug, Serialize, serde::Deserialize)]
pub struct RepairOutcome {
    pub ran: bool,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct BuildOutput {
    pub wheel: PathBuf,
    pub sha256: vouch_core::Sha256Digest,
    pub source_date_epoch: u64,
    pub epoch_source: EpochSource,
    pub python: String,
    /// `name==version` of everything in the build venv.
    pub build_tools: Vec<String>,
    /// The lock the venv was installed from, with each tool's wheel and sha256.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_lock: Option<BuildLock>,
    pub seconds: f64,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairOutcome>,
}

/// Every child of a build (pip, the interpreter, the build backend, compilers, auditwheel)
/// sees only the variables [`vouch_core::command::BUILD`] lets through.
pub(crate) fn scrubbed_command(program: &Path) -> Command {
    vouch_core::command::scrubbed(program, vouch_core::command::BUILD)
}

/// Runs `cmd`, and on failure returns the tail of its output in the error.
pub(crate) fn run_logged(cmd: Command, what: &str) -> Result<String, BuildError> {
    use vouch_core::command::RunError;
    vouch_core::command::run(cmd, what, 40).map_err(|e| match e {
        RunError::Spawn(source) => BuildError::Spawn {
            what: what.to_owned(),
            source,
        },
        RunError::Exited {
            status,
            output_tail,
        } => BuildError::Failed {
            what: what.to_owned(),
            status,
            output_tail,
        },
    })
}

fn prefix_map_flags(dirs: &[&Path], extra: &[(PathBuf, String)]) -> String {
    dirs.iter()
        .map(|d| format!("-ffile-prefix-map={}=.", d.display()))
        .chain(
            extra
                .iter()
                .map(|(from, to)| format!("-ffile-prefix-map={}={to}", from.display())),
        )
        .collect::<Vec<_>>()
        .join(" ")
}

/// `${VOUCH_WORK}` and `${VOUCH_SRC}` in a variable's value become the build's work and source
/// directories (known only once the work directory is locked), e.g. for nvcc prefix maps.
fn expand_placeholders(value: &str, work: &Path, tree: &Path) -> String {
    value
        .replace("${VOUCH_WORK}", &work.display().to_string())
        .replace("${VOUCH_SRC}", &tree.display().to_string())
}

fn append_flags(var: &str, extra: &str) -> String {
    match std::env::var(var) {
        Ok(v) if !v.trim().is_empty() => format!("{v} {extra}"),
        _ => extra.to_owned(),
    }
}

/// The C and C++ compilers the build would use: `CC`/`CXX` from the environment, else the
/// interpreter's configured ones (which may carry flags such as `-pthread`).
fn compilers(python: &Path) -> Result<(String, String), BuildError> {
    let mut cmd = scrubbed_command(python);
    cmd.args(["-c", "import sysconfig as s; print(s.get_config_var('CC') or 'cc'); print(s.get_config_var('CXX') or 'c++')"]);
    let out = run_logged(cmd, "reading the interpreter's compiler settings")?;
    let mut configured = out.lines();
    let (conf_cc, conf_cxx) = (
        configured.next().unwrap_or("cc"),
        configured.next().unwrap_or("c++"),
    );
    let from_env = |var: &str, fallback: &str| {
        std::env::var(var)
            .ok()
            .filter(|v| !v.trim().is_empty())
            .unwrap_or_else(|| fallback.to_owned())
    };
    let (cc, cxx) = (from_env("CC", conf_cc), from_env("CXX", conf_cxx));
    Ok((cc, cxx))
}

/// Builds one wheel of the project at `options.source` and writes the normalized wheel to
/// `options.out_dir`.
pub fn build_wheel(options: &BuildOptions) -> Result<BuildOutput, BuildError> {
    let started = std::time::Instant::now();
    let given = std::fs::canonicalize(&options.source).map_err(|e| BuildError::Io {
        path: options.source.clone(),
        source: e,
    })?;
    // An sdist is unpacked first; its epoch is a property of its bytes (newest member time).
    let unpacked;
    let (source, sdist_epoch) = if given.is_file() {
        unpacked = tempfile::tempdir().map_err(|e| BuildError::Io {
            path: std::env::temp_dir(),
            source: e,
        })?;
        let (root, newest) = unpack_sdist(&given, unpacked.path())?;
        (root, Some(newest))
    } else {
        (given.clone(), None)
    };
    let build_system = BuildSystem::read(&source)?;
    let (epoch, epoch_source) = match (options.source_date_epoch, sdist_epoch) {
        (None, Some(e)) => (e, EpochSource::Sdist),
        _ => source_date_epoch(&source, options.source_date_epoch)?,
    };
    let python = Python::find(options.python.as_deref())?;
    let sealed = SealedVenv::ensure(
        &python,
        &build_system,
        options.lock.as_deref(),
        &options.trust.root(&options.cache_dir).join("venvs"),
        options.seal_key.as_deref(),
    )?;

    let work_root = options
        .work_dir
        .clone()
        .unwrap_or_else(|| options.cache_dir.join("work"));
    let work = workdir::WorkDir::lock(&work_root, &[&given, &options.out_dir])?;
    let venv = sealed.instantiate(&work.root().join("venv"))?;
    let tree = work.root().join("src");
    let dist = work.root().join("dist");
    source::copy_tree(&source, &tree)?;
    if let Some(patch) = &options.patch {
        source::apply_patch(&tree, patch)?;
    }

    let flags = prefix_map_flags(&[&tree, work.root()], &options.prefix_maps);
    let mut cmd = scrubbed_command(&venv.python);
    cmd.args(["-m", "build", "--wheel", "--no-isolation", "--outdir"])
        .arg(&dist)
        .arg(&tree)
        .current_dir(&tree)
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .env("PYTHONHASHSEED", "0")
        .env("CFLAGS", append_flags("CFLAGS", &flags))
        .env("CXXFLAGS", append_flags("CXXFLAGS", &flags))
        .envs(
            options
                .env
                .iter()
                .map(|(k, v)| (k, expand_placeholders(v, work.root(), &tree))),
        );
    if !options.path_prepend.is_empty() {
        let mut dirs = options.path_prepend.clone();
        if let Some(p) = std::env::var_os("PATH") {
            dirs.extend(std::env::split_paths(&p));
        }
        let joined = std::env::join_paths(dirs).map_err(|e| BuildError::Io {
            path: options.path_prepend[0].clone(),
            source: std::io::Error::other(e),
        })?;
        cmd.env("PATH", joined);
    }
    if let Some(launcher) = &options.launcher {
        let (cc, cxx) = compilers(&venv.python)?;
        cmd.env("CC", format!("{} {cc}", launcher.display()))
            .env("CXX", format!("{} {cxx}", launcher.display()));
    }
    run_logged(cmd, "the PEP 517 build")?;

    let wheels: Vec<PathBuf> = std::fs::read_dir(&dist)
        .map_err(|e| BuildError::Io {
            path: dist.clone(),
            source: e,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [raw] = wheels.as_slice() else {
        return Err(BuildError::WheelCount {
            found: wheels.len(),
        });
    };
    let (raw, repair) = match &options.repair {
        Some(r) => {
            let (path, outcome) = repair_wheel(raw, r, &dist)?;
            (path, Some(outcome))
        }
        None => (raw.clone(), None),
    };
    let report = vouch_wheel::normalize_wheel(
        &raw,
        &options.out_dir,
        vouch_wheel::NormalizeOptions { epoch },
    )?;
    Ok(BuildOutput {
        wheel: report.output,
        sha256: report.sha256,
        source_date_epoch: epoch,
        epoch_source,
        python: python.version,
        build_tools: venv.frozen,
        build_lock: venv.lock,
        seconds: started.elapsed().as_secs_f64(),
        repair,
    })
}

/// `auditwheel repair` when the wheel has a `linux_*` tag and auditwheel is on `PATH`; else
/// the wheel is kept as built and the outcome says why.
fn repair_wheel(
    raw: &Path,
    repair: &Repair,
    dist: &Path,
) -> Result<(PathBuf, RepairOutcome), BuildError> {
    let name = raw
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    if !name.contains("-linux_") {
        return Ok((
            raw.to_owned(),
            RepairOutcome {
                ran: false,
                detail: format!("{name}: not a linux_* wheel; nothing to repair"),
            },
        ));
    }
    let Ok(auditwheel) = which::which("auditwheel") else {
        return Ok((
            raw.to_owned(),
            RepairOutcome {
                ran: false,
                detail: "auditwheel is not on PATH: the wheel keeps its linux_* tag (not uploadable to PyPI as is)".to_owned(),
            },
        ));
    };
    let out = dist.join("repaired");
    let mut cmd = scrubbed_command(&auditwheel);
    cmd.arg("repair").arg("-w").arg(&out);
    if let Some(plat) = &repair.plat {
        cmd.args(["--plat", plat]);
    }
    for lib in &repair.exclude {
        cmd.args(["--exclude", lib]);
    }
    cmd.arg(raw);
    let log = run_logged(cmd, "auditwheel repair")?;
    let repaired: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|e| BuildError::Io {
            path: out.clone(),
            source: e,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = repaired.as_slice() else {
        return Err(BuildError::WheelCount {
            found: repaired.len(),
        });
    };
    let last = log.lines().last().unwrap_or_default().to_owned();
    Ok((
        wheel.clone(),
        RepairOutcome {
            ran: true,
            detail: last,
        },
    ))
}
