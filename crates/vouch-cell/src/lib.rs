//! One cell of a profile's build matrix, end to end: resolve the cell, check the interpreter,
//! digest the inputs (and reuse an earlier wheel with the same digest), install the toolkit,
//! start the scoped compiler cache, apply the template, build, repair, normalize, and write
//! the typed build record ([`CellRecord`]) next to the wheel.
//!
//! The command line decides the context (which commit, which pull request, which trust
//! level, which cache store) and passes it in a [`CellJob`]; this crate decides everything
//! that follows from the profile. It never prints: what a user should see goes to the
//! caller's [`Reporter`].

mod cache;
mod env;
mod record;

use std::path::{Path, PathBuf};
use std::time::Instant;

use vouch_core::{ArtifactName, PythonVersion};
use vouch_profile::{Cell, Profile};

pub use cache::{CacheSetup, RunningCache};
pub use env::expand;
pub use record::{CacheRecord, CellRecord, Durations, Reusable, SCHEMA, find_reusable};
pub use vouch_core::progress::{Reporter, Step};

#[derive(Debug, thiserror::Error)]
pub enum CellError {
    #[error(transparent)]
    Profile(#[from] vouch_profile::ProfileError),
    /// The interpreter is not the cell's Python.
    #[error(
        "cell {cell} is for Python {want}, but the interpreter is Python {found}{}",
        if *free_threaded { " (free-threaded)" } else { "" }
    )]
    WrongPython {
        cell: String,
        want: String,
        found: String,
        free_threaded: bool,
    },
    /// A cell variable needs the toolkit, and the profile declares none for the cell.
    #[error(
        "cell {cell}: {var} uses ${{{placeholder}}}, but the profile declares no toolchain for {flavor} on {platform} (flavors.{flavor}.toolchain.{platform})"
    )]
    NoToolchain {
        cell: String,
        var: String,
        /// `CUDA_PATH` or `TOOLCHAIN_ROOT`.
        placeholder: &'static str,
        flavor: String,
        platform: String,
    },
    #[error("unpacking {path:?}")]
    Unpack {
        path: PathBuf,
        #[source]
        source: Box<vouch_build::BuildError>,
    },
    #[error("installing the {name} toolchain")]
    Toolchain {
        name: String,
        #[source]
        source: Box<vouch_toolchain::ToolchainError>,
    },
    #[error("building cell {cell} from {source_path:?}")]
    Build {
        cell: String,
        source_path: PathBuf,
        #[source]
        source: Box<vouch_build::BuildError>,
    },
    /// Finding the interpreter (before anything is built).
    #[error(transparent)]
    Python(Box<vouch_build::BuildError>),
    #[error(transparent)]
    Name(#[from] vouch_core::NameError),
    #[error("the reuse directory {path:?}")]
    ReuseDir {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{what} {path:?}")]
    Io {
        what: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("the toolkit's library directories do not form a search path")]
    LibraryPath(#[from] vouch_core::host::PathListError),
    #[error(transparent)]
    Gateway(#[from] vouch_cache::GatewayError),
    #[error(transparent)]
    Tool(#[from] vouch_cache::ToolError),
}

fn io(what: &'static str, path: &Path) -> impl FnOnce(std::io::Error) -> CellError {
    let path = path.to_owned();
    move |source| CellError::Io { what, path, source }
}

/// Everything a cell build needs that the profile does not say.
pub struct CellJob<'a> {
    pub profile: &'a Profile,
    /// The cell, with any command-line overrides already in its `env`.
    pub cell: Cell,
    /// A source tree or an sdist.
    pub source: PathBuf,
    pub out: PathBuf,
    /// A directory of earlier builds to reuse a wheel from.
    pub reuse_from: Option<PathBuf>,
    /// The commit the artifact is named by; no name without one.
    pub commit: Option<String>,
    pub pr: Option<u64>,
    /// The build's options: interpreter, cache directory, work directory, trust, seal key,
    /// epoch override. `source` and `out_dir` are set here.
    pub options: vouch_build::BuildOptions,
    pub cache: Option<CacheSetup>,
}

/// What a cell build produced.
pub struct CellOutcome {
    pub record: CellRecord,
    /// The wheel in the output directory.
    pub wheel: PathBuf,
}

/// The cell's toolkit under `cache_root` (a trust level's root), installed with `python`'s
/// pip; `None` when the profile declares no toolkit for the cell.
pub fn install_toolchain(
    profile: &Profile,
    cell: &Cell,
    cache_root: &Path,
    python: &Path,
    seal_key: Option<&vouch_fs::seal::SealKey>,
    reporter: &dyn Reporter,
) -> Result<Option<vouch_toolchain::Installed>, CellError> {
    let Some(spec) = profile.toolchain(cell) else {
        return Ok(None);
    };
    let name = format!("cuda-{}-{}", cell.cuda, cell.platform);
    reporter.note(&format!("toolchain: {name}"));
    let step = reporter.step(&format!("installing the {name} toolchain"));
    let installed = vouch_toolchain::install(&vouch_toolchain::Request {
        spec: &spec,
        platform: cell.platform,
        profile_dir: &profile.dir,
        cache_dir: cache_root,
        name: &name,
        python,
        progress: step.bytes_progress(),
        seal_key,
    })
    .map_err(|source| CellError::Toolchain {
        name: name.clone(),
        source: Box::new(source),
    })?;
    Ok(Some(installed))
}

/// The artifact name for a cell at `commit`. A source-routed cell shares its dist, Python and
/// platform with a wheel cell, so it is named by its cell id, as the generated workflows do.
pub fn artifact_name(cell: &Cell, commit: &str, pr: Option<u64>) -> Result<String, CellError> {
    if cell.route == vouch_profile::Route::Source {
        return Ok(match pr {
            Some(n) => format!("{}-pr{n}-{commit}", cell.id),
            None => format!("{}-{commit}", cell.id),
        });
    }
    Ok(ArtifactName::new(
        cell.package.clone(),
        cell.python.parse::<PythonVersion>()?,
        cell.platform,
        pr,
        commit.to_owned(),
    )?
    .to_string())
}

fn check_python(cell: &Cell, python: &vouch_build::Python) -> Result<(), CellError> {
    let want = cell.python.trim_end_matches('t');
    if !python.version.starts_with(&format!("{want}."))
        || cell.python.ends_with('t') != python.free_threaded
    {
        return Err(CellError::WrongPython {
            cell: cell.id.clone(),
            want: cell.python.clone(),
            found: python.version.clone(),
            free_threaded: python.free_threaded,
        });
    }
    Ok(())
}

fn write_record(out: &Path, record: &CellRecord) -> Result<(), CellError> {
    let path = out.join(record.file_name());
    let json = serde_json::to_vec_pretty(record).expect("a build record always serializes");
    vouch_fs::write_atomically(&path, &json, vouch_fs::Mode::Public)
        .map_err(io("writing the build record", &path))
}

/// Builds one cell (or reuses an earlier wheel of it) into `job.out`.
pub fn build_cell(job: CellJob<'_>, reporter: &dyn Reporter) -> Result<CellOutcome, CellError> {
    let started = Instant::now();
    let CellJob {
        profile,
        cell,
        source: given_source,
        out,
        reuse_from,
        commit,
        pr,
        mut options,
        cache,
    } = job;

    // An sdist is unpacked once here: the inputs digest reads the same files the build does.
    let unpacked;
    let (source, sdist_epoch) =
        if given_source.is_file() {
            unpacked = tempfile::tempdir()
                .map_err(io("creating a directory in", &std::env::temp_dir()))?;
            let (root, newest) = vouch_build::unpack_sdist(&given_source, unpacked.path())
                .map_err(|source| CellError::Unpack {
                    path: given_source.clone(),
                    source: Box::new(source),
                })?;
            (root, Some(newest))
        } else {
            (given_source.clone(), None)
        };
    let python = vouch_build::Python::find(options.python.as_deref())
        .map_err(|e| CellError::Python(Box::new(e)))?;
    check_python(&cell, &python)?;
    let inputs = vouch_profile::inputs_digest(profile, &cell, &source)?;
    reporter.note(&format!(
        "cell {}: inputs {} ({} files)",
        cell.id, inputs.digest, inputs.files
    ));
    std::fs::create_dir_all(&out).map_err(io("creating", &out))?;

    let artifact = commit
        .as_deref()
        .map(|sha| artifact_name(&cell, sha, pr))
        .transpose()?;

    if let Some(dir) = &reuse_from
        && let Some(found) =
            find_reusable(dir, &cell.id, &inputs.digest.to_string()).map_err(|source| {
                CellError::ReuseDir {
                    path: dir.clone(),
                    source,
                }
            })?
    {
        let Reusable {
            wheel,
            bytes,
            mut record,
        } = found;
        let dest = out.join(&record.wheel);
        let same_file = match (std::fs::canonicalize(&wheel), std::fs::canonicalize(&dest)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same_file {
            // The bytes already checked, through a temporary file: never a partial wheel.
            vouch_fs::write_atomically(&dest, &bytes, vouch_fs::Mode::Public)
                .map_err(io("writing", &dest))?;
        }
        record.reused_from = Some(dir.display().to_string());
        // The earlier record's name carries its own commit; this build's is ours (or none).
        record.artifact = artifact;
        record.seconds = Durations {
            total: started.elapsed().as_secs_f64(),
            ..Durations::default()
        };
        write_record(&out, &record)?;
        reporter.note(&format!(
            "reused {} from {} (same inputs digest)",
            record.wheel,
            dir.display()
        ));
        return Ok(CellOutcome {
            record,
            wheel: dest,
        });
    }

    options.source = source.clone();
    options.out_dir = out.clone();
    options.lock = profile.lock_file(&cell).or(options.lock.take());
    options.source_date_epoch = options.source_date_epoch.or(sdist_epoch);
    let toolchain_started = Instant::now();
    let installed = install_toolchain(
        profile,
        &cell,
        &options.trust.root(&options.cache_dir),
        &python.executable,
        options.seal_key.as_deref(),
        reporter,
    )?;
    let toolchain_seconds = toolchain_started.elapsed().as_secs_f64();

    let cache = cache
        .map(|setup| {
            RunningCache::start(
                setup,
                installed.as_ref().map(|i| i.key.as_str()),
                &mut options,
                reporter,
            )
        })
        .transpose()?;
    // The build sees the toolkit through a link in its work directory: the same path for
    // every trust level and machine, so cached objects carry over (see BuildOptions::toolkit).
    let seen = match &installed {
        Some(i) => {
            let work_root = options.work_root().map_err(|e| CellError::Build {
                cell: cell.id.clone(),
                source_path: given_source.clone(),
                source: Box::new(e),
            })?;
            options.toolkit = Some(i.dir.clone());
            Some(i.seen_at(&vouch_build::toolkit_link(&work_root, &i.dir)))
        }
        None => None,
    };
    let cell_env = env::cell_env(&cell, seen.as_ref(), options.launcher.as_deref())?;
    if let Some(i) = &seen {
        options.path_prepend = i.bin_dirs();
        // The toolkit's location is the builder's business, not the wheel's.
        options
            .prefix_maps
            .push((i.dir.clone(), "/opt/vouch-toolchain".to_owned()));
    }
    options
        .env
        .extend(cell_env.iter().map(|(k, v)| (k.clone(), v.clone())));
    if let Some(t) = profile.template(&cell) {
        options.patch = Some(vouch_build::SourcePatch {
            project: t.project.clone(),
            files: profile.template_files(&cell),
        });
    }
    if let Some(r) = &profile.repair {
        options.repair = Some(vouch_build::Repair {
            plat: profile.repair_plat(cell.platform).map(str::to_owned),
            exclude: r.exclude.clone(),
            // A profile that says how to repair is a release profile: no silent linux_* wheel.
            required: true,
        });
    }
    reporter.note(&format!(
        "building {} for cell {}",
        source.display(),
        cell.id
    ));
    let build_started = Instant::now();
    let step = reporter.step(&format!("building {}", cell.id));
    let built = vouch_build::build_wheel(&options).map_err(|source| CellError::Build {
        cell: cell.id.clone(),
        source_path: given_source.clone(),
        source: Box::new(source),
    })?;
    drop(step);
    let build_seconds = build_started.elapsed().as_secs_f64();
    let cache = cache
        .map(|c| c.finish(reporter, built.shim_cache.clone()))
        .transpose()?;
    if let Some(r) = &built.repair {
        if r.ran {
            reporter.note(&format!("repair: {}", r.detail));
        } else {
            reporter.warning(&format!("{}: {}", cell.id, r.detail));
        }
    }

    let wheel_name = built
        .wheel
        .file_name()
        .expect("a wheel file")
        .to_string_lossy()
        .into_owned();
    let record = CellRecord {
        schema: SCHEMA.to_owned(),
        cell: cell.id.clone(),
        package: cell.package.clone(),
        artifact,
        wheel: wheel_name,
        sha256: built.sha256.to_string(),
        inputs_digest: inputs.digest.to_string(),
        inputs_files: inputs.files,
        source_date_epoch: built.source_date_epoch,
        toolchain: installed,
        cache,
        repair: built.repair.clone(),
        env: cell_env,
        build_tools: built.build_tools.clone(),
        build_lock: built.build_lock.clone(),
        seconds: Durations {
            toolchain: toolchain_seconds,
            build: build_seconds,
            total: started.elapsed().as_secs_f64(),
            phases: Some(built.phases.clone()),
        },
        reused_from: None,
    };
    write_record(&out, &record)?;
    Ok(CellOutcome {
        record,
        wheel: built.wheel,
    })
}
