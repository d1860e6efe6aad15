//! Builds one wheel of a PEP 517 project reproducibly: a vouch-managed venv with pinned build
//! tools, a copy of the source in a fresh directory, a scrubbed environment with
//! `SOURCE_DATE_EPOCH` and compiler path-prefix maps, then [`vouch_wheel::normalize_wheel`].

mod epoch;
mod error;
mod pyproject;
mod source;
mod venv;
mod workdir;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::Serialize;

pub use epoch::{EpochSource, parse_epoch, source_date_epoch};
pub use error::BuildError;
pub use pyproject::BuildSystem;
pub use venv::{BUILD_TOOL_PINS, Python, Venv};

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
    pub seconds: f64,
}

/// Variables a build may see from the caller's environment. Everything else is dropped, so a
/// token in the caller's environment never reaches build code, and stray settings cannot make
/// two builds differ.
const PASSTHROUGH_ENV: &[&str] = &[
    "PATH",
    "HOME",
    "TMPDIR",
    "CC",
    "CXX",
    "LD",
    "AR",
    "CFLAGS",
    "CXXFLAGS",
    "CPPFLAGS",
    "LDFLAGS",
    "PIP_INDEX_URL",
    "PIP_EXTRA_INDEX_URL",
    "PIP_FIND_LINKS",
    "PIP_CERT",
    "PIP_NO_INDEX",
    "PIP_DEFAULT_TIMEOUT",
    "SSL_CERT_FILE",
    "SSL_CERT_DIR",
    "HTTPS_PROXY",
    "HTTP_PROXY",
    "NO_PROXY",
    "https_proxy",
    "http_proxy",
    "no_proxy",
];

pub(crate) fn scrubbed_command(program: &Path) -> Command {
    let mut cmd = Command::new(program);
    cmd.env_clear();
    for key in PASSTHROUGH_ENV {
        if let Some(v) = std::env::var_os(key) {
            cmd.env(key, v);
        }
    }
    cmd.env("PIP_DISABLE_PIP_VERSION_CHECK", "1")
        .env("PYTHONDONTWRITEBYTECODE", "1")
        .env("LC_ALL", "C.UTF-8")
        .env("TZ", "UTC");
    cmd
}

/// Runs `cmd`, and on failure returns the tail of its output in the error.
pub(crate) fn run_logged(mut cmd: Command, what: &str) -> Result<String, BuildError> {
    tracing::debug!(?cmd, "running {what}");
    let out = cmd.output().map_err(|source| BuildError::Spawn {
        what: what.to_owned(),
        source,
    })?;
    let mut text = String::from_utf8_lossy(&out.stdout).into_owned();
    text.push_str(&String::from_utf8_lossy(&out.stderr));
    if !out.status.success() {
        let tail: Vec<&str> = text.lines().rev().take(40).collect();
        let tail = tail.into_iter().rev().collect::<Vec<_>>().join("\n");
        return Err(BuildError::Failed {
            what: what.to_owned(),
            status: out.status.to_string(),
            output_tail: tail,
        });
    }
    Ok(text)
}

fn prefix_map_flags(dirs: &[&Path]) -> String {
    dirs.iter()
        .map(|d| format!("-ffile-prefix-map={}=.", d.display()))
        .collect::<Vec<_>>()
        .join(" ")
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
    let source = std::fs::canonicalize(&options.source).map_err(|e| BuildError::Io {
        path: options.source.clone(),
        source: e,
    })?;
    let build_system = BuildSystem::read(&source)?;
    let (epoch, epoch_source) = source_date_epoch(&source, options.source_date_epoch)?;
    let python = Python::find(options.python.as_deref())?;
    let venv = Venv::ensure(&python, &build_system, &options.cache_dir)?;

    let work_root = options
        .work_dir
        .clone()
        .unwrap_or_else(|| options.cache_dir.join("work"));
    let work = workdir::WorkDir::lock(&work_root)?;
    let tree = work.root().join("src");
    let dist = work.root().join("dist");
    source::copy_tree(&source, &tree)?;

    let flags = prefix_map_flags(&[&tree, work.root()]);
    let mut cmd = scrubbed_command(&venv.python);
    cmd.args(["-m", "build", "--wheel", "--no-isolation", "--outdir"])
        .arg(&dist)
        .arg(&tree)
        .current_dir(&tree)
        .env("SOURCE_DATE_EPOCH", epoch.to_string())
        .env("PYTHONHASHSEED", "0")
        .env("CFLAGS", append_flags("CFLAGS", &flags))
        .env("CXXFLAGS", append_flags("CXXFLAGS", &flags))
        .envs(options.env.iter().map(|(k, v)| (k, v)));
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
    let report = vouch_wheel::normalize_wheel(
        raw,
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
        seconds: started.elapsed().as_secs_f64(),
    })
}
