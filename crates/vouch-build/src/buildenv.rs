//! The build-environment shim: `python/vouch_buildenv.py` and a `.pth` that loads it, written
//! into each build's own venv copy, so every interpreter of the build (the frontend, the
//! backend, cythonize's worker processes) runs it without the project being patched. It gives
//! the build a private `TMPDIR` with deterministic `tempfile` names (configure probes compiled
//! in `mkdtemp()` directories become compiler-cache hits) and, when the build has a scoped
//! cache, a Cython translation cache and an `auditwheel repair` cache on the gateway's
//! key/value side. The Python file says what is keyed and why; this side places it, says
//! how to run the cached repair, and reads back what it counted.

use std::ffi::OsString;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

use crate::BuildError;
use crate::venv::Venv;

const MODULE: &str = "vouch_buildenv";
const SHIM: &str = include_str!("../python/vouch_buildenv.py");

/// What the shim's caches did in one build, summed over its processes.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct ShimCacheStats {
    /// Cython's translations (`.pyx` to `.c`/`.cpp`).
    pub cython: LayerStats,
    /// `auditwheel repair` runs.
    pub repair: LayerStats,
}

/// One cache layer's counters.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct LayerStats {
    /// Results served from the store.
    pub hits: u64,
    /// Runs of the real thing (a miss, or an entry that failed its checks).
    pub misses: u64,
    /// Misses whose output went to the store (the build's write scope).
    pub stored: u64,
    /// Misses not stored: the scope is read-only, the gateway failed, Cython read a file
    /// outside the key, or the repair grafted libraries.
    pub not_stored: u64,
    /// Runs the cache did not handle (a translation started outside cythonize, an option it
    /// cannot key, a repair tool it does not know).
    pub bypassed: u64,
    /// Entries that failed their checks (digests, manifest) and were treated as misses.
    pub corrupt: u64,
    pub gateway_errors: u64,
    /// Why results were not stored or bypassed: the first few, for the log.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub notes: Vec<String>,
}

impl LayerStats {
    /// Hits / (hits + misses), when anything was translated.
    pub fn hit_rate(&self) -> Option<f64> {
        let all = self.hits + self.misses;
        (all > 0).then(|| self.hits as f64 / all as f64)
    }
}

/// The shim placed in one build's venv.
pub(crate) struct BuildEnv {
    tmp: PathBuf,
    cache: Option<PathBuf>,
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> BuildError + '_ {
    move |source| BuildError::Io {
        path: path.to_owned(),
        source,
    }
}

/// A 0700 directory the build alone may write: predictable names in it cannot be raced.
fn private_dir(dir: &Path) -> Result<(), BuildError> {
    let mut builder = std::fs::DirBuilder::new();
    #[cfg(unix)]
    std::os::unix::fs::DirBuilderExt::mode(&mut builder, 0o700);
    builder.create(dir).map_err(io(dir))
}

/// The venv's `purelib`, as its interpreter reports it.
fn site_packages(venv: &Venv) -> Result<PathBuf, BuildError> {
    let mut cmd = crate::scrubbed_command(&venv.python);
    cmd.args([
        "-I",
        "-c",
        "import sysconfig; print(sysconfig.get_path('purelib'))",
    ]);
    let out = crate::run_logged(cmd, "asking the build venv for its site-packages")?;
    Ok(PathBuf::from(out.trim()))
}

impl BuildEnv {
    /// Writes the shim into `venv` and makes the build's private directories under `work`.
    /// `kv_cache` is the gateway's key/value URL (`…/<secret>/kv`): it goes into a 0600
    /// file, never into the environment.
    pub(crate) fn install(
        venv: &Venv,
        work: &Path,
        kv_cache: Option<&str>,
    ) -> Result<BuildEnv, BuildError> {
        let site = site_packages(venv)?;
        let module = site.join(format!("{MODULE}.py"));
        vouch_fs::write_atomically(&module, SHIM.as_bytes(), vouch_fs::Mode::Public)
            .map_err(io(&module))?;
        let pth = site.join(format!("{MODULE}.pth"));
        // site.py runs a `.pth` line that starts with `import`.
        let line = format!("import {MODULE}; {MODULE}.install()\n");
        vouch_fs::write_atomically(&pth, line.as_bytes(), vouch_fs::Mode::Public)
            .map_err(io(&pth))?;

        let tmp = work.join("tmp");
        private_dir(&tmp)?;
        let cache = match kv_cache {
            Some(url) => {
                let dir = work.join("build-cache");
                private_dir(&dir)?;
                let file = dir.join("url");
                vouch_fs::write_atomically(&file, url.as_bytes(), vouch_fs::Mode::Private)
                    .map_err(io(&file))?;
                Some(dir)
            }
            None => None,
        };
        Ok(BuildEnv { tmp, cache })
    }

    /// The variables that switch the shim on for the build's processes.
    pub(crate) fn env(&self) -> Vec<(&'static str, OsString)> {
        let mut env = vec![("VOUCH_DETERMINISTIC_TEMP", "1".into())];
        // Python's tempfile reads TMPDIR, TEMP, TMP; compilers and Windows read the others.
        for var in ["TMPDIR", "TEMP", "TMP"] {
            env.push((var, self.tmp.clone().into_os_string()));
        }
        if let Some(dir) = &self.cache {
            env.push(("VOUCH_BUILD_CACHE", dir.clone().into_os_string()));
        }
        env
    }

    /// The arguments that make the venv's python run `auditwheel repair` through the repair
    /// cache (`python -m vouch_buildenv auditwheel-repair RAW OUT [options]`), or `None`
    /// when the build has no cache and auditwheel runs as itself.
    pub(crate) fn cached_auditwheel(&self) -> Option<[&'static str; 3]> {
        self.cache
            .is_some()
            .then_some(["-m", MODULE, "auditwheel-repair"])
    }

    /// The caches' counters from every process's event file; `None` without a cache.
    pub(crate) fn stats(&self) -> Result<Option<ShimCacheStats>, BuildError> {
        let Some(dir) = &self.cache else {
            return Ok(None);
        };
        let mut all = ShimCacheStats::default();
        for entry in std::fs::read_dir(dir).map_err(io(dir))? {
            let path = entry.map_err(io(dir))?.path();
            let name = path.file_name().unwrap_or_default().to_string_lossy();
            if !(name.starts_with("events-") && name.ends_with(".jsonl")) {
                continue;
            }
            let text = std::fs::read_to_string(&path).map_err(io(&path))?;
            for line in text.lines() {
                let Ok(event) = serde_json::from_str::<Event>(line) else {
                    tracing::warn!(file = %path.display(), "unreadable build cache event");
                    continue;
                };
                let stats = match event.layer.as_str() {
                    "cython" => &mut all.cython,
                    "repair" => &mut all.repair,
                    _ => continue,
                };
                let counter = match event.event.as_str() {
                    "hit" => &mut stats.hits,
                    "miss" => &mut stats.misses,
                    "stored" => &mut stats.stored,
                    "not-stored" => &mut stats.not_stored,
                    "bypass" => &mut stats.bypassed,
                    "corrupt" => &mut stats.corrupt,
                    "gateway-error" => &mut stats.gateway_errors,
                    _ => continue,
                };
                *counter += 1;
                if matches!(
                    event.event.as_str(),
                    "not-stored" | "bypass" | "gateway-error"
                ) && stats.notes.len() < 8
                {
                    stats.notes.push(format!(
                        "{} {}: {}",
                        event.event, event.module, event.detail
                    ));
                }
            }
        }
        tracing::debug!(?all, "build cache events");
        Ok(Some(all))
    }
}

#[derive(Deserialize)]
struct Event {
    layer: String,
    event: String,
    module: String,
    #[serde(default)]
    detail: String,
}
