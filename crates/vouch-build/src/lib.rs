//! Builds one wheel of a PEP 517 project reproducibly: a vouch-managed venv with pinned build
//! tools, a copy of the source in a fresh directory, a scrubbed environment with
//! `SOURCE_DATE_EPOCH` and compiler path-prefix maps, then [`vouch_wheel::normalize_wheel`].

mod buildenv;
mod epoch;
mod error;
pub mod lock;
mod pyproject;
mod repair;
mod sdist;
mod source;
mod venv;
mod workdir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

pub use buildenv::{LayerStats, ShimCacheStats};
pub use epoch::{EpochSource, parse_epoch, source_date_epoch};
pub use error::BuildError;
pub use lock::{BuildLock, LockError, LockedTool};
pub use pyproject::BuildSystem;
pub use repair::{Repair, RepairOutcome};
pub use sdist::{SdistOutput, build_sdist};
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
    /// Where the source is copied and built [default: [`canonical_work_dir`]]. The path is
    /// fixed (and locked while a build runs) so compiler-cache keys, which see the paths in
    /// the prefix-map flags, match from build to build, and so paths no prefix map reaches
    /// (nvcc's module ids) are the same on every machine.
    pub work_dir: Option<PathBuf>,
    /// Directories put first on the build's `PATH` (a toolkit's `bin`).
    pub path_prepend: Vec<PathBuf>,
    /// More `-ffile-prefix-map` rewrites (e.g. the toolkit directory to `/cuda`).
    pub prefix_maps: Vec<(PathBuf, String)>,
    /// Turns the source into the distribution to build (a profile's template).
    pub patch: Option<SourcePatch>,
    /// Runs between the PEP 517 build and normalization (`auditwheel`/`delvewheel repair`).
    pub repair: Option<Repair>,
    /// The hash-locked requirements file the build venv is installed from ([`lock`]); `None`
    /// installs [`BUILD_TOOL_PINS`] and the project's requirements unhashed.
    pub lock: Option<PathBuf>,
    /// Which cache root the build's venv (and toolkit) come from.
    pub trust: TrustLevel,
    /// Authenticates the seal records of what this build reuses (see [`vouch_fs::seal`]).
    pub seal_key: Option<std::sync::Arc<vouch_fs::seal::SealKey>>,
    /// A toolkit directory the build sees at [`toolkit_link`] instead of where it is
    /// installed: paths into it (in `-I` flags, nvcc's own include paths, compiler-cache keys)
    /// are then the same on every machine and for every trust level, whose toolkits live
    /// under different cache roots. Without it, a pull request's build could never hit an
    /// object main's build stored.
    pub toolkit: Option<PathBuf>,
    /// The scoped cache gateway's key/value URL (`http://127.0.0.1:<port>/<secret>/kv`) for
    /// the Cython translation cache and the repair cache; `None` runs both without one. It
    /// carries the gateway's secret, so it reaches the build in a file, not a variable.
    pub kv_cache: Option<String>,
}

impl BuildOptions {
    /// The work directory this build will use: `work_dir`, or [`canonical_work_dir`].
    pub fn work_root(&self) -> Result<PathBuf, BuildError> {
        match &self.work_dir {
            Some(w) => Ok(w.clone()),
            None => canonical_work_dir(),
        }
    }
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
    /// Where those seconds went.
    pub phases: BuildPhases,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub repair: Option<RepairOutcome>,
    /// What the Cython translation cache and the repair cache did, when the build had them.
    /// Reported in the cache's record (`cache.cython`, `cache.repair`), next to the
    /// compiler cache's counters.
    #[serde(skip)]
    pub shim_cache: Option<ShimCacheStats>,
}

/// Seconds per phase of one build: what a rebuild still pays once every cache hits.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize, PartialEq)]
pub struct BuildPhases {
    /// The venv copy, the source copy and the work directory.
    pub prepare: f64,
    /// The PEP 517 backend (configure, Cython, compile, link).
    pub backend: f64,
    /// auditwheel or delvewheel.
    pub repair: f64,
    pub normalize: f64,
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

/// `PATH` with `first` ahead of this process's own entries.
pub(crate) fn path_with_first(first: &[PathBuf]) -> Result<std::ffi::OsString, BuildError> {
    let mut dirs = first.to_vec();
    if let Some(p) = std::env::var_os("PATH") {
        dirs.extend(std::env::split_paths(&p));
    }
    std::env::join_paths(dirs).map_err(|e| BuildError::Io {
        path: first.first().cloned().unwrap_or_default(),
        source: std::io::Error::other(e),
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

/// The parent of [`canonical_work_dir`]: fixed, not derived from the user, the cache
/// directory or the checkout.
#[cfg(unix)]
const CANONICAL_ROOT: &str = "/tmp/vouch-build";
#[cfg(windows)]
const CANONICAL_ROOT: &str = r"C:\vouch-build";

/// Where a build in `work_root` sees [`BuildOptions::toolkit`]: a link inside its work
/// directory on Unix (nvcc and gcc keep the path as given, they do not resolve it). Windows
/// builds see the toolkit where it is installed (a directory link there needs a privilege
/// runners may not have).
pub fn toolkit_link(work_root: &Path, toolkit: &Path) -> PathBuf {
    if cfg!(unix) {
        work_root.join("toolkit")
    } else {
        toolkit.to_owned()
    }
}

/// The directory every build uses unless told otherwise: `/tmp/vouch-build/work`
/// (`C:\vouch-build\work` on Windows), locked while a build runs.
///
/// It is one fixed path because not every path in a build can be mapped away. nvcc names a
/// `.cu` file's anonymous-namespace and `static` symbols after a hash of the source's
/// absolute path (`_ZN36_GLOBAL__N__3cd2de6e_4_k_cu_…`; cudafe++ gets it as
/// `--orig_src_path_name`), and `-ffile-prefix-map` does not reach it. Measured with nvcc
/// 13.0: one `.cu` compiled from two directories gives two objects; compiled from one
/// directory by two copies of the toolkit in different places, one object. So the source's
/// location decides, and only a build directory that is the same for every user, cache
/// directory and machine makes a CUDA wheel anyone can rebuild. The parent is made 0700 and
/// must belong to this user (see [`vouch_fs::owned_private_dir`]).
pub fn canonical_work_dir() -> Result<PathBuf, BuildError> {
    let root = Path::new(CANONICAL_ROOT);
    vouch_fs::owned_private_dir(root).map_err(|source| BuildError::Io {
        path: root.to_owned(),
        source,
    })?;
    Ok(root.join("work"))
}

/// What every PEP 517 build of a project shares (wheel or sdist): the source resolved (an
/// sdist unpacked), the epoch, the sealed venv instantiated in the locked work directory, and
/// the source copied (and patched) there.
struct Prepared {
    epoch: u64,
    epoch_source: EpochSource,
    python: Python,
    venv: Venv,
    /// Where the build's copy of the source is.
    tree: PathBuf,
    /// Where the build backend writes its distribution.
    dist: PathBuf,
    /// The shim in the venv: the private TMPDIR, the Cython cache.
    buildenv: buildenv::BuildEnv,
    /// Held while the build runs: the lock, and the unpacked sdist.
    work: workdir::WorkDir,
    _unpacked: Option<tempfile::TempDir>,
}

impl Prepared {
    fn new(options: &BuildOptions) -> Result<Prepared, BuildError> {
        let given = std::fs::canonicalize(&options.source).map_err(|e| BuildError::Io {
            path: options.source.clone(),
            source: e,
        })?;
        // An sdist is unpacked first; its epoch is a property of its bytes (newest member time).
        let (source, sdist_epoch, unpacked) = if given.is_file() {
            let unpacked = tempfile::tempdir().map_err(|e| BuildError::Io {
                path: std::env::temp_dir(),
                source: e,
            })?;
            let (root, newest) = unpack_sdist(&given, unpacked.path())?;
            (root, Some(newest), Some(unpacked))
        } else {
            (given.clone(), None, None)
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

        let work_root = options.work_root()?;
        let work = workdir::WorkDir::lock(&work_root, &[&given, &options.out_dir])?;
        let venv = sealed.instantiate(&work.root().join("venv"))?;
        #[cfg(unix)]
        if let Some(toolkit) = &options.toolkit {
            let link = toolkit_link(&work_root, toolkit);
            std::os::unix::fs::symlink(toolkit, &link)
                .map_err(|source| BuildError::Io { path: link, source })?;
        }
        let buildenv =
            buildenv::BuildEnv::install(&venv, work.root(), options.kv_cache.as_deref())?;
        let tree = work.root().join("src");
        let dist = work.root().join("dist");
        source::copy_tree(&source, &tree)?;
        if let Some(patch) = &options.patch {
            source::apply_patch(&tree, patch)?;
        }
        Ok(Prepared {
            epoch,
            epoch_source,
            python,
            venv,
            buildenv,
            tree,
            dist,
            work,
            _unpacked: unpacked,
        })
    }

    /// `python -m build --<kind> --no-isolation` (and, from a lock, `--skip-dependency-check`)
    /// in the scrubbed environment every build child
    /// gets: the epoch, the hash seed, the prefix maps, the caller's variables and `PATH`.
    fn pep517_command(&self, options: &BuildOptions, kind: &str) -> Result<Command, BuildError> {
        let (tree, work) = (&self.tree, self.work.root());
        let flags = prefix_map_flags(&[tree, work], &options.prefix_maps);
        let mut cmd = scrubbed_command(&self.venv.python);
        cmd.args(["-m", "build", kind, "--no-isolation"]);
        // A locked venv holds exactly the lock: a requirement the backend asks for on top
        // could not be installed anyway, and asking (`get_requires_for_build_*`) runs the
        // project's setup a second time: for CuPy, every configure probe again, compiled,
        // linked and run, about a fifth of a rebuild whose compiles all hit.
        if self.venv.lock.is_some() {
            cmd.arg("--skip-dependency-check");
        }
        cmd.arg("--outdir")
            .arg(&self.dist)
            .arg(tree)
            .current_dir(tree)
            .env("SOURCE_DATE_EPOCH", self.epoch.to_string())
            .env("PYTHONHASHSEED", "0")
            .envs(self.buildenv.env())
            .env("CFLAGS", append_flags("CFLAGS", &flags))
            .env("CXXFLAGS", append_flags("CXXFLAGS", &flags))
            .envs(
                options
                    .env
                    .iter()
                    .map(|(k, v)| (k, expand_placeholders(v, work, tree))),
            );
        if !options.path_prepend.is_empty() {
            cmd.env("PATH", path_with_first(&options.path_prepend)?);
        }
        Ok(cmd)
    }

    /// The one file with `suffix` the build backend wrote.
    fn single_output(&self, suffix: &str) -> Result<PathBuf, BuildError> {
        single_file(&self.dist, suffix)
    }
}

/// The one file in `dir` whose name ends with `suffix`.
fn single_file(dir: &Path, suffix: &str) -> Result<PathBuf, BuildError> {
    let found: Vec<PathBuf> = std::fs::read_dir(dir)
        .map_err(|e| BuildError::Io {
            path: dir.to_owned(),
            source: e,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.to_string_lossy().ends_with(suffix))
        .collect();
    match found.as_slice() {
        [one] => Ok(one.clone()),
        _ if suffix == ".whl" => Err(BuildError::WheelCount { found: found.len() }),
        _ => Err(BuildError::SdistCount { found: found.len() }),
    }
}

/// Builds one wheel of the project at `options.source` and writes the normalized wheel to
/// `options.out_dir`.
pub fn build_wheel(options: &BuildOptions) -> Result<BuildOutput, BuildError> {
    let started = std::time::Instant::now();
    let mut phases = BuildPhases::default();
    let mut lap = {
        let mut last = started;
        move || {
            let now = std::time::Instant::now();
            let seconds = (now - last).as_secs_f64();
            last = now;
            seconds
        }
    };
    let prepared = Prepared::new(options)?;
    let mut cmd = prepared.pep517_command(options, "--wheel")?;
    if let Some(launcher) = &options.launcher {
        let (cc, cxx) = compilers(&prepared.venv.python)?;
        cmd.env("CC", format!("{} {cc}", launcher.display()))
            .env("CXX", format!("{} {cxx}", launcher.display()));
    }
    phases.prepare = lap();
    run_logged(cmd, "the PEP 517 build")?;
    phases.backend = lap();

    let raw = prepared.single_output(".whl")?;
    let (raw, repair) = match &options.repair {
        Some(r) => {
            let (path, outcome) = repair::repair_wheel(
                &raw,
                r,
                &prepared.venv.python,
                &prepared.buildenv,
                &prepared.dist,
            )?;
            (path, Some(outcome))
        }
        None => (raw, None),
    };
    phases.repair = lap();
    let report = vouch_wheel::normalize_wheel(
        &raw,
        &options.out_dir,
        vouch_wheel::NormalizeOptions {
            epoch: prepared.epoch,
        },
    )?;
    phases.normalize = lap();
    let shim_cache = prepared.buildenv.stats()?;
    Ok(BuildOutput {
        wheel: report.output,
        sha256: report.sha256,
        source_date_epoch: prepared.epoch,
        epoch_source: prepared.epoch_source,
        python: prepared.python.version,
        build_tools: prepared.venv.frozen,
        build_lock: prepared.venv.lock,
        seconds: started.elapsed().as_secs_f64(),
        phases,
        repair,
        shim_cache,
    })
}
