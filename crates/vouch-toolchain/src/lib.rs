//! Lays out a CUDA toolkit (`CUDA_PATH`) for one build cell in a cache directory.
//!
//! Two sources, as a profile declares them:
//! - NVIDIA's PyPI wheels (CUDA 13: `nvidia-cuda-nvcc`, `nvidia-cuda-runtime`, ...), listed in a
//!   pip requirements file whose every line is pinned with `--hash=sha256:`; pip downloads them
//!   and vouch checks every file's sha256 against the pins again before unpacking;
//! - NVIDIA's redistributable archives (how GitHub runners get CUDA 12), by URL or path, each
//!   with its sha256.
//!
//! The tree is built in a staging directory and renamed into place only when complete, so an
//! interrupted install never leaves a half toolkit that a later build would reuse. A manifest
//! (`vouch-toolchain.json`) records what went in, and the tree is sealed
//! ([`vouch_fs::seal`]: read-only, every file's sha256 and identity recorded in
//! `vouch-toolchain.seal.json`). A later install of the same pins reuses the tree only after
//! checking it against the seal: a file rewritten in place (even at the same size), added,
//! removed or re-linked makes vouch install the toolkit again.

mod archive;
mod elfstub;
mod fixup;
pub mod layout;
mod plan;
pub mod target;

use std::path::{Path, PathBuf};
use std::process::Command;

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};
use vouch_core::Platform;
use vouch_fs::seal::Seal;
use vouch_profile::Toolchain;

pub use fixup::stub_library;
pub use plan::{Plan, PlannedFile, plan};

const MANIFEST: &str = "vouch-toolchain.json";
const SEAL: &str = "vouch-toolchain.seal.json";

#[derive(Debug, thiserror::Error)]
pub enum ToolchainError {
    #[error("{path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("requirements {path:?} line {line}: {message}")]
    Requirements {
        path: PathBuf,
        line: usize,
        message: String,
    },
    #[error("{what}: sha256 is {actual}, expected {expected}")]
    Digest {
        what: String,
        expected: String,
        actual: String,
    },
    #[error("downloading {url}")]
    Download {
        url: String,
        #[source]
        source: vouch_http::HttpError,
    },
    #[error("{what} exited with {status}:\n{output_tail}")]
    Command {
        what: String,
        status: String,
        output_tail: String,
    },
    #[error("running {what}")]
    Spawn {
        what: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{archive}: member {member:?}: {message}")]
    UnsafeMember {
        archive: String,
        member: String,
        message: String,
    },
    #[error("{archive}: not a readable archive")]
    Archive {
        archive: String,
        #[source]
        source: std::io::Error,
    },
    #[error("{archive}: not a readable wheel")]
    Wheel {
        archive: String,
        #[source]
        source: zip::result::ZipError,
    },
    #[error("the toolchain declares no files to install")]
    Empty,
    #[error("toolkit layout: {0}")]
    Layout(String),
    #[error("building the lib{name}.so stub failed (a C compiler is needed):\n{output_tail}")]
    Stub { name: String, output_tail: String },
    #[error("sealing the installed toolkit")]
    Seal(#[source] vouch_fs::seal::SealError),
}

/// `tree/<root>`, or `tree` itself when the toolkit is the whole tree.
fn cuda_path_in(tree: &Path, root: &str) -> PathBuf {
    if root.is_empty() {
        tree.to_owned()
    } else {
        tree.join(root)
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> ToolchainError + '_ {
    move |source| ToolchainError::Io {
        path: path.to_owned(),
        source,
    }
}

/// One input file of the toolchain: a wheel or an archive.
#[derive(Clone, Debug, Serialize, Deserialize, PartialEq, Eq)]
pub struct Component {
    pub file: String,
    pub sha256: String,
}

#[derive(Clone, Debug, Serialize, Deserialize)]
struct Manifest {
    key: String,
    components: Vec<Component>,
    /// How many files the tree holds (the seal lists them).
    files: usize,
}

/// An installed toolkit.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct Installed {
    /// What `CUDA_PATH` should be.
    pub cuda_path: PathBuf,
    /// The cache entry (`<cache>/toolchains/<name>-<key>`).
    pub dir: PathBuf,
    /// How the reuse check went (files trusted by identity, files hashed), when reused.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub checked: Option<vouch_fs::seal::Checked>,
    /// sha256 over the pins: the same pins give the same key wherever they are installed.
    pub key: String,
    pub components: Vec<Component>,
    /// `nvcc --version`'s release line, when there is an nvcc that runs here (a toolkit for
    /// another platform than the host is laid out and checked, never run).
    pub nvcc: Option<String>,
    /// The platform the toolkit is for (`linux-aarch64`).
    #[serde(default)]
    pub platform: String,
    /// The machine `bin/nvcc` is built for, read from its header (`ELF AArch64`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub machine: Option<String>,
    pub files: usize,
    pub reused: bool,
    pub seconds: f64,
}

impl Installed {
    fn is_windows(&self) -> bool {
        self.platform == Platform::Win64.as_str()
    }

    /// The whole unpacked toolchain: the CUDA toolkit ([`Installed::cuda_path`]) and the
    /// libraries pinned beside it (cuTENSOR, NCCL). A profile names it `${TOOLCHAIN_ROOT}`.
    pub fn tree(&self) -> PathBuf {
        self.dir.join("tree")
    }

    /// Directories to put first on `PATH`. NVIDIA's Windows wheels keep their DLLs in
    /// `bin/x86_64`.
    pub fn bin_dirs(&self) -> Vec<PathBuf> {
        let bin = self.cuda_path.join("bin");
        if self.is_windows() {
            vec![bin.clone(), bin.join("x86_64")]
        } else {
            vec![bin]
        }
    }

    /// The same toolkit as a build sees it through a link at `at` (see
    /// `vouch_build::BuildOptions::toolkit`): every path rebased from [`Installed::dir`].
    pub fn seen_at(&self, at: &Path) -> Installed {
        let mut view = self.clone();
        view.cuda_path = match self.cuda_path.strip_prefix(&self.dir) {
            Ok(rel) => at.join(rel),
            Err(_) => self.cuda_path.clone(),
        };
        view.dir = at.to_owned();
        view
    }

    /// `LIBRARY_PATH` (`LIB` on Windows) for the link step: on Linux the stubs first, so
    /// `-lcuda` finds the stub.
    pub fn library_path(&self) -> Vec<PathBuf> {
        if self.is_windows() {
            return vec![self.cuda_path.join("lib").join("x64")];
        }
        vec![
            self.cuda_path.join("lib").join("stubs"),
            self.cuda_path.join("lib"),
            self.cuda_path.join("lib64"),
        ]
    }
}

pub struct Request<'a> {
    pub spec: &'a Toolchain,
    /// The platform the toolkit is for; it need not be the host's.
    pub platform: Platform,
    /// Where the profile lives: requirement files and archive paths resolve against it.
    pub profile_dir: &'a Path,
    /// `<cache>/toolchains/` is where trees go.
    pub cache_dir: &'a Path,
    /// A readable prefix for the directory name, e.g. `cuda-13.0-linux-64`.
    pub name: &'a str,
    /// The interpreter whose pip downloads wheels.
    pub python: &'a Path,
    /// Called as archive bytes arrive (bytes so far, expected total); the library never prints.
    pub progress: Option<ProgressFn>,
    /// Authenticates the tree's seal record (see [`vouch_fs::seal`]).
    pub seal_key: Option<&'a vouch_fs::seal::SealKey>,
}

pub use vouch_core::progress::ProgressFn;

/// Pinned wheel files from a requirements file: `name==version --hash=sha256:HEX` per line.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct WheelPin {
    pub requirement: String,
    pub sha256: Vec<String>,
}

pub fn parse_requirements(path: &Path) -> Result<Vec<WheelPin>, ToolchainError> {
    let text = std::fs::read_to_string(path).map_err(io(path))?;
    // Join backslash continuations first, as pip does.
    let joined = text.replace("\\\r\n", " ").replace("\\\n", " ");
    let mut pins = Vec::new();
    for (i, line) in joined.lines().enumerate() {
        let line = line.split('#').next().unwrap_or("").trim();
        if line.is_empty() {
            continue;
        }
        let err = |message: String| ToolchainError::Requirements {
            path: path.to_owned(),
            line: i + 1,
            message,
        };
        let mut parts = line.split_whitespace();
        let requirement = parts.next().expect("non-empty").to_owned();
        if !requirement.contains("==") {
            return Err(err(format!("{requirement:?} is not pinned with `==`")));
        }
        let mut sha256 = Vec::new();
        for p in parts {
            match p.strip_prefix("--hash=sha256:") {
                Some(h) if h.len() == 64 && h.bytes().all(|b| b.is_ascii_hexdigit()) => {
                    sha256.push(h.to_ascii_lowercase())
                }
                _ => return Err(err(format!("{p:?}: expected --hash=sha256:<64 hex>"))),
            }
        }
        if sha256.is_empty() {
            return Err(err(format!("{requirement:?} has no --hash=sha256:")));
        }
        pins.push(WheelPin {
            requirement,
            sha256,
        });
    }
    if pins.is_empty() {
        return Err(ToolchainError::Empty);
    }
    Ok(pins)
}

/// sha256 over what the toolchain is made of, independent of where it is installed.
pub fn toolchain_key(spec: &Toolchain, profile_dir: &Path) -> Result<String, ToolchainError> {
    let mut h = Sha256::new();
    if let Some(req) = &spec.wheels {
        for pin in parse_requirements(&profile_dir.join(req))? {
            h.update(format!(
                "wheel {} {}\n",
                pin.requirement,
                pin.sha256.join(",")
            ));
        }
        h.update(format!("root {}\n", spec.root.as_deref().unwrap_or("")));
    }
    for a in &spec.archives {
        h.update(format!("archive {}\n", a.sha256.to_ascii_lowercase()));
    }
    Ok(hex::encode(h.finalize()))
}

/// Hex sha256 of `path`, as pins and manifests write it.
fn sha256_file(path: &Path) -> Result<String, ToolchainError> {
    vouch_core::Sha256Digest::of_file(path)
        .map(|d| d.hex())
        .map_err(io(path))
}

/// Installs (or reuses) the toolkit `req.spec` describes.
pub fn install(req: &Request<'_>) -> Result<Installed, ToolchainError> {
    let started = std::time::Instant::now();
    let key = toolchain_key(req.spec, req.profile_dir)?;
    let root_dir = req.cache_dir.join("toolchains");
    std::fs::create_dir_all(&root_dir).map_err(io(&root_dir))?;
    let dir = root_dir.join(format!("{}-{}", req.name, &key[..16]));
    let cuda_rel = req.spec.root.clone().unwrap_or_default();

    // One install of a given key at a time: a second waits, then reuses what the first made,
    // and never removes a tree another build is using.
    let lock_path = root_dir.join(format!("{}-{}.lock", req.name, &key[..16]));
    let _lock = vouch_fs::lock_file(&lock_path).map_err(io(&lock_path))?;

    if let Some((manifest, checked)) = reusable(&dir, &key, req.seal_key) {
        tracing::info!(
            dir = %dir.display(),
            files = checked.files,
            hashed = checked.hashed,
            seconds = started.elapsed().as_secs_f64(),
            "reusing the installed toolchain after its seal check"
        );
        let cuda_path = cuda_path_in(&dir.join("tree"), &cuda_rel);
        let machine = layout::check(&cuda_path, req.platform)?;
        return Ok(Installed {
            nvcc: nvcc_version(&cuda_path, req.platform),
            platform: req.platform.to_string(),
            machine: machine.map(target::Machine::name),
            cuda_path,
            dir,
            key,
            checked: Some(checked),
            files: manifest.files,
            components: manifest.components,
            reused: true,
            seconds: started.elapsed().as_secs_f64(),
        });
    }

    let staging = tempfile::Builder::new()
        .prefix(".staging-")
        .tempdir_in(&root_dir)
        .map_err(io(&root_dir))?;
    let tree = staging.path().join("tree");
    std::fs::create_dir_all(&tree).map_err(io(&tree))?;
    // Archives and wheels may go together: CUDA 12 from NVIDIA's archives, with the
    // cuTENSOR and NCCL a CuPy build compiles against from their PyPI wheels, in one tree.
    let mut components = Vec::new();
    if let Some(reqs) = &req.spec.wheels {
        components.extend(install_wheels(
            req,
            &req.profile_dir.join(reqs),
            staging.path(),
            &tree,
        )?);
    }
    if req.spec.wheels.is_none() || !req.spec.archives.is_empty() {
        components.extend(install_archives(req, staging.path(), &tree)?);
    }
    let cuda_path = cuda_path_in(&tree, &cuda_rel);
    if !cuda_path.is_dir() {
        return Err(ToolchainError::Layout(format!(
            "`root = {cuda_rel:?}` is not a directory in the unpacked toolkit"
        )));
    }
    fixup::fix_tree(&tree, &cuda_path, req.platform)?;
    let machine = layout::check(&cuda_path, req.platform)?;

    let _ = std::fs::remove_dir_all(staging.path().join("download"));
    let seal = Seal::make(&tree).map_err(ToolchainError::Seal)?;
    seal.write(&staging.path().join(SEAL), req.seal_key)
        .map_err(ToolchainError::Seal)?;
    let manifest = Manifest {
        key: key.clone(),
        components: components.clone(),
        files: seal.files(),
    };
    let manifest_path = staging.path().join(MANIFEST);
    std::fs::write(
        &manifest_path,
        serde_json::to_vec_pretty(&manifest).expect("serializable"),
    )
    .map_err(io(&manifest_path))?;

    // Under the lock: whatever is at `dir` failed the reuse check (incomplete, other pins), so
    // it is moved aside before the new tree takes its place.
    if dir.exists() {
        let aside = staging.path().with_extension("old");
        std::fs::rename(&dir, &aside).map_err(io(&dir))?;
        let _ = vouch_fs::seal::remove_tree(&aside);
    }
    let staged = staging.keep();
    if let Err(e) = std::fs::rename(&staged, &dir) {
        let _ = vouch_fs::seal::remove_tree(&staged);
        return Err(io(&dir)(e));
    }
    let cuda_path = cuda_path_in(&dir.join("tree"), &cuda_rel);
    Ok(Installed {
        nvcc: nvcc_version(&cuda_path, req.platform),
        platform: req.platform.to_string(),
        machine: machine.map(target::Machine::name),
        cuda_path,
        dir,
        key,
        checked: None,
        files: manifest.files,
        components,
        reused: false,
        seconds: started.elapsed().as_secs_f64(),
    })
}

/// The manifest of an installed tree when it matches `key` and passes its seal check. A tree
/// that fails is reinstalled (a warning says why): never run, never repaired in place.
fn reusable(
    dir: &Path,
    key: &str,
    seal_key: Option<&vouch_fs::seal::SealKey>,
) -> Option<(Manifest, vouch_fs::seal::Checked)> {
    let path = dir.join(MANIFEST);
    let bytes = std::fs::read(&path).ok()?;
    let Ok(manifest) = serde_json::from_slice::<Manifest>(&bytes) else {
        tracing::warn!(path = %path.display(), "unreadable toolchain manifest; reinstalling");
        return None;
    };
    if manifest.key != key {
        return None;
    }
    let checked =
        Seal::read(&dir.join(SEAL), seal_key).and_then(|seal| seal.check(&dir.join("tree"), false));
    match checked {
        Ok(c) => Some((manifest, c)),
        Err(e) => {
            tracing::warn!(dir = %dir.display(), error = %e, "installed toolchain failed its seal check; reinstalling");
            None
        }
    }
}

fn install_wheels(
    req: &Request<'_>,
    requirements: &Path,
    staging: &Path,
    tree: &Path,
) -> Result<Vec<Component>, ToolchainError> {
    let pins = parse_requirements(requirements)?;
    let download = staging.join("download");
    std::fs::create_dir_all(&download).map_err(io(&download))?;
    let mut cmd = scrubbed(req.python);
    cmd.args([
        "-m",
        "pip",
        "download",
        "--disable-pip-version-check",
        "--no-deps",
        "--only-binary",
        ":all:",
        "--require-hashes",
        "--progress-bar",
        "off",
        "--dest",
    ])
    .arg(&download);
    // The target's tags, on every host: pip picks the same pinned files wherever it runs.
    for tag in target::pip_platforms(req.platform) {
        cmd.arg("--platform").arg(tag);
    }
    cmd.arg("-r").arg(requirements);
    tracing::info!(
        requirements = %requirements.display(),
        platform = %req.platform,
        "downloading toolkit wheels"
    );
    run(cmd, "pip download of the toolkit wheels")?;

    let mut wheels: Vec<PathBuf> = std::fs::read_dir(&download)
        .map_err(io(&download))?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    wheels.sort();
    let allowed: std::collections::BTreeSet<&str> = pins
        .iter()
        .flat_map(|p| p.sha256.iter().map(String::as_str))
        .collect();
    let mut components = Vec::new();
    for wheel in &wheels {
        let name = wheel
            .file_name()
            .expect("file")
            .to_string_lossy()
            .into_owned();
        let actual = sha256_file(wheel)?;
        if !allowed.contains(actual.as_str()) {
            return Err(ToolchainError::Digest {
                what: name,
                expected: format!("one of the hashes in {}", requirements.display()),
                actual,
            });
        }
        archive::unpack_wheel(wheel, tree)?;
        components.push(Component {
            file: name,
            sha256: actual,
        });
    }
    if components.len() != pins.len() {
        return Err(ToolchainError::Requirements {
            path: requirements.to_owned(),
            line: 0,
            message: format!(
                "pinned {} wheels, pip downloaded {}",
                pins.len(),
                components.len()
            ),
        });
    }
    Ok(components)
}

/// An archive's file name from its URL's path (a query such as `?sig=...` is not part of it),
/// or from a path.
pub(crate) fn archive_file_name(url: &str) -> String {
    url::Url::parse(url)
        .ok()
        .and_then(|u| u.path_segments()?.next_back().map(str::to_owned))
        .or_else(|| url.rsplit('/').next().map(str::to_owned))
        .filter(|n| !n.is_empty())
        .unwrap_or_else(|| "archive".to_owned())
}

fn install_archives(
    req: &Request<'_>,
    staging: &Path,
    tree: &Path,
) -> Result<Vec<Component>, ToolchainError> {
    if req.spec.archives.is_empty() {
        return Err(ToolchainError::Empty);
    }
    let download = staging.join("download");
    std::fs::create_dir_all(&download).map_err(io(&download))?;
    let mut components = Vec::new();
    for (i, a) in req.spec.archives.iter().enumerate() {
        let file_name = archive_file_name(&a.url);
        let local = if a.url.starts_with("https://") || a.url.starts_with("http://") {
            let dest = download.join(format!("{i}-{file_name}"));
            archive::download(&a.url, &dest, req.progress.as_ref())?;
            dest
        } else {
            req.profile_dir.join(&a.url)
        };
        let actual = sha256_file(&local)?;
        if actual != a.sha256.to_ascii_lowercase() {
            return Err(ToolchainError::Digest {
                what: a.url.clone(),
                expected: a.sha256.to_ascii_lowercase(),
                actual,
            });
        }
        archive::unpack_archive(&local, &file_name, tree)?;
        components.push(Component {
            file: file_name,
            sha256: actual,
        });
    }
    Ok(components)
}

/// pip, nvcc and the C compiler see only what [`vouch_core::command::BUILD`] lets through:
/// a token in vouch's own environment (GITHUB_TOKEN, a cache password) never reaches them.
pub(crate) fn scrubbed(program: impl AsRef<std::ffi::OsStr>) -> Command {
    vouch_core::command::scrubbed(program, vouch_core::command::BUILD)
}

fn run(cmd: Command, what: &str) -> Result<String, ToolchainError> {
    use vouch_core::command::RunError;
    vouch_core::command::run(cmd, what, 30).map_err(|e| match e {
        RunError::Spawn(source) => ToolchainError::Spawn {
            what: what.to_owned(),
            source,
        },
        RunError::Exited {
            status,
            output_tail,
        } => ToolchainError::Command {
            what: what.to_owned(),
            status,
            output_tail,
        },
    })
}

fn nvcc_version(cuda_path: &Path, platform: Platform) -> Option<String> {
    let nvcc = cuda_path.join("bin").join(target::nvcc_name(platform));
    if Platform::host() != Some(platform) || !nvcc.exists() {
        return None;
    }
    let out = scrubbed(&nvcc).arg("--version").output().ok()?;
    String::from_utf8_lossy(&out.stdout)
        .lines()
        .find(|l| l.contains("release"))
        .map(|l| l.trim().to_owned())
}
