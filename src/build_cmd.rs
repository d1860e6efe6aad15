//! `vouch build` (a project, or one cell of a profile's matrix) and `vouch toolchain`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;
use std::time::Instant;

use anyhow::Context as _;
use clap::{Args, Subcommand};
use serde::{Deserialize, Serialize};
use vouch_core::{ArtifactName, Platform, PythonVersion};
use vouch_profile::{Cell, Profile};

use crate::cli::{BuildArgs, Common, ToolEnvArgs, build_options, default_cache_dir};
use crate::output;

#[derive(Subcommand, Debug)]
pub enum ToolchainCommand {
    /// Download (or reuse) and lay out the cell's CUDA toolkit; prints its CUDA_PATH.
    Install(ToolchainArgs),
}

#[derive(Args, Debug)]
pub struct ToolchainArgs {
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    #[arg(long)]
    pub cell: String,
    #[command(flatten)]
    pub env: ToolEnvArgs,
    #[command(flatten)]
    pub common: Common,
}

/// The interpreter does not match the cell (exit code 5, environment).
#[derive(Debug, thiserror::Error)]
#[error("{0}")]
pub struct WrongPython(pub(crate) String);

#[derive(Serialize)]
struct CacheRecord {
    tool: vouch_cache::Tool,
    policy: vouch_cache::ScopePolicy,
    gateway: vouch_cache::GatewayStats,
    compiler_cache: Option<vouch_cache::ToolStats>,
    /// Compiler-cache hits / (hits + misses), from the tool's own counters when it has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    hit_rate: Option<f64>,
}

#[derive(Serialize)]
struct BuildRecord {
    #[serde(flatten)]
    build: vouch_build::BuildOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<CacheRecord>,
}

/// What `vouch build --cell` writes next to the wheel (`<wheel>.build.json`), and what
/// `--reuse-from` reads back.
#[derive(Serialize, Deserialize)]
pub struct CellRecord {
    pub cell: String,
    pub package: String,
    /// `<dist>-py<X.Y>-<plat>[-pr<N>]-<sha>`, when the commit is known.
    pub artifact: Option<String>,
    pub wheel: String,
    pub sha256: String,
    pub inputs_digest: String,
    pub inputs_files: usize,
    pub source_date_epoch: u64,
    pub toolchain: Option<serde_json::Value>,
    pub cache: Option<serde_json::Value>,
    pub repair: Option<serde_json::Value>,
    /// The variables the cell set for the build (never secrets: profile values).
    pub env: std::collections::BTreeMap<String, String>,
    pub build_tools: Vec<String>,
    pub seconds: Durations,
    /// Set when the wheel was copied from an earlier build with the same inputs digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<String>,
}

#[derive(Serialize, Deserialize, Default)]
pub struct Durations {
    pub toolchain: f64,
    pub build: f64,
    pub total: f64,
}

pub fn toolchain(cmd: ToolchainCommand) -> anyhow::Result<ExitCode> {
    let ToolchainCommand::Install(args) = cmd;
    let profile = Profile::load(&args.profile)?;
    let cell = profile.find_cell(&args.cell)?;
    let cache_dir =
        crate::cli::trust_level(None).root(&default_cache_dir(args.env.cache_dir.clone()));
    let python = vouch_build::Python::find(args.env.python.as_deref())?;
    let seal_key = args.env.seal_key()?;
    let Some(installed) = install_toolchain(
        &profile,
        &cell,
        &cache_dir,
        &python.executable,
        seal_key.as_deref(),
    )?
    else {
        anyhow::bail!(crate::verify_cmd::UsageError(format!(
            "profile {:?} declares no toolchain for {} on {} (flavors.{}.toolchain.{})",
            args.profile, cell.flavor, cell.platform, cell.flavor, cell.platform
        )));
    };
    if args.common.json {
        output::json(&installed);
    } else {
        output::note(format!(
            "toolchain {} ({} files, {}, {:.1} s)",
            installed.key,
            installed.files,
            if installed.reused {
                "reused"
            } else {
                "installed"
            },
            installed.seconds
        ));
        if let Some(nvcc) = &installed.nvcc {
            output::note(format!("nvcc: {nvcc}"));
        }
        output::data(installed.cuda_path.display().to_string());
    }
    Ok(ExitCode::SUCCESS)
}

/// The cell's toolkit under `cache_root` (a trust level's root), with `python`'s pip.
fn install_toolchain(
    profile: &Profile,
    cell: &Cell,
    cache_root: &Path,
    python: &Path,
    seal_key: Option<&vouch_fs::seal::SealKey>,
) -> anyhow::Result<Option<vouch_toolchain::Installed>> {
    let Some(spec) = profile.toolchain(cell) else {
        return Ok(None);
    };
    let name = format!("cuda-{}-{}", cell.cuda, cell.platform);
    output::note(format!("toolchain: {name}"));
    let spinner = output::spinner(format!("installing the {name} toolchain"));
    let installed = vouch_toolchain::install(&vouch_toolchain::Request {
        spec,
        profile_dir: &profile.dir,
        cache_dir: cache_root,
        name: &name,
        python,
        progress: spinner.bytes_progress(),
        seal_key,
    })
    .with_context(|| format!("installing the {name} toolchain"))?;
    Ok(Some(installed))
}

/// Flags that only mean something together with another are refused alone: a flag vouch
/// parsed and then dropped would let a user believe it took effect.
fn refuse_unused_flags(args: &BuildArgs) -> anyhow::Result<()> {
    let usage = |flag: &str, needs: &str| {
        Err(anyhow::Error::new(crate::verify_cmd::UsageError(format!(
            "{flag} applies only with {needs}"
        ))))
    };
    if args.cell.is_none() {
        if args.sha.is_some() {
            return usage("--sha (the artifact name's commit)", "--cell");
        }
        if args.profile.is_some() {
            return usage("--profile", "--cell");
        }
    }
    if args.cache.cache.is_none() {
        let s = &args.cache.scope;
        let given = [
            ("--cache-store", args.cache.cache_store.is_some()),
            (
                "--cache-password-file",
                args.cache.cache_password_file.is_some(),
            ),
            ("--scope-from-github", s.scope_from_github),
            ("--event", s.event.is_some()),
            ("--ref", s.git_ref.is_some()),
            ("--pr", s.pr.is_some()),
            ("--base-ref", s.base_ref.is_some()),
            ("--default-branch", s.default_branch != "main"),
        ];
        if let Some((flag, _)) = given.iter().find(|(_, g)| *g) {
            return usage(flag, "--cache ccache|sccache");
        }
    }
    Ok(())
}

pub fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    refuse_unused_flags(&args)?;
    if args.cell.is_some() {
        return build_cell(args);
    }
    let mut options = build_options(
        &args.source,
        &args.out,
        args.epoch.source_date_epoch,
        &args.env,
    )?;
    options.trust = crate::cli::trust_level(args.cache.scope.event.as_deref());
    crate::cli::warn_unkeyed(options.trust, options.seal_key.is_some());
    output::note(format!("building {}", args.source.display()));
    let cache = start_cache(&args, &mut options)?;
    let spinner = output::spinner(format!("building {}", args.source.display()));
    let built = vouch_build::build_wheel(&options)
        .with_context(|| format!("building a wheel from {:?}", args.source))?;
    drop(spinner);
    let cache = finish_cache(cache)?;
    if args.common.json {
        output::json(&BuildRecord {
            build: built,
            cache,
        });
    } else {
        output::data(format!("{}  {}", built.sha256, built.wheel.display()));
    }
    Ok(ExitCode::SUCCESS)
}

type RunningCache = (
    vouch_cache::Tool,
    vouch_cache::ScopePolicy,
    vouch_cache::RunningGateway,
    vouch_cache::ToolSession,
);

fn start_cache(
    args: &BuildArgs,
    options: &mut vouch_build::BuildOptions,
) -> anyhow::Result<Option<RunningCache>> {
    let (Some(tool), Some(store)) = (args.cache.cache, &args.cache.cache_store) else {
        return Ok(None);
    };
    let policy = args
        .cache
        .scope
        .policy()
        .context("deciding the cache scope")?;
    output::note(format!(
        "cache: {} via {} ({})",
        tool.name(),
        crate::cli::store_display(store),
        policy.reason
    ));
    let store =
        crate::cache_cmd::store_with_password(store, args.cache.cache_password_file.as_deref())?;
    let gateway = vouch_cache::RunningGateway::start(
        &store,
        policy.clone(),
        "127.0.0.1:0".parse().expect("address"),
        vouch_cache::DEFAULT_MAX_ENTRY,
    )?;
    output::mask(&gateway.url);
    let session = vouch_cache::ToolSession::start(tool, &gateway.url)?;
    options.env.extend(session.env.iter().cloned());
    options.launcher = Some(session.binary.clone());
    Ok(Some((tool, policy, gateway, session)))
}

fn finish_cache(cache: Option<RunningCache>) -> anyhow::Result<Option<CacheRecord>> {
    let Some((tool, policy, gateway, session)) = cache else {
        return Ok(None);
    };
    let compiler_cache = session
        .stats()
        .map_err(|e| tracing::warn!(error = %e, "no compiler-cache stats"))
        .ok();
    session.finish()?;
    let gateway = gateway.stats();
    output::note(format!(
        "cache: {} hits, {} misses, {} writes to {}, {} refused",
        gateway.hits,
        gateway.misses,
        gateway.writes,
        gateway.write_scope.as_deref().unwrap_or("-"),
        gateway.refused_writes
    ));
    let hit_rate = compiler_cache
        .as_ref()
        .and_then(|s| match (s.hits, s.misses) {
            (Some(h), Some(m)) if h + m > 0 => Some(h as f64 / (h + m) as f64),
            _ => None,
        });
    if let (Some(rate), Some(s)) = (hit_rate, &compiler_cache) {
        output::note(format!(
            "compiler cache: {} hits, {} misses ({:.1}% hits)",
            s.hits.unwrap_or(0),
            s.misses.unwrap_or(0),
            rate * 100.0
        ));
    }
    Ok(Some(CacheRecord {
        tool,
        policy,
        gateway,
        compiler_cache,
        hit_rate,
    }))
}

/// `${CUDA_PATH}` and `${COMPILER_LAUNCHER}` in a profile value.
fn expand(value: &str, cuda_path: Option<&Path>, launcher: Option<&Path>) -> String {
    let cuda = cuda_path
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let launcher = launcher
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    value
        .replace("${CUDA_PATH}", &cuda)
        .replace("${COMPILER_LAUNCHER}", &launcher)
        .trim()
        .to_owned()
}

/// The pull request number for the artifact name: the scope flags, or in GitHub Actions the
/// event payload, even when the build uses no cache (and so no scope flags).
fn pull_request(args: &BuildArgs) -> Option<u64> {
    if let Some(pr) = args.cache.scope.trigger().ok().and_then(|t| t.pr) {
        return Some(pr);
    }
    if std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true") {
        let from_github = crate::cache_cmd::ScopeArgs {
            scope_from_github: true,
            event: None,
            git_ref: None,
            pr: None,
            base_ref: None,
            default_branch: args.cache.scope.default_branch.clone(),
        };
        return from_github.trigger().ok().and_then(|t| t.pr);
    }
    None
}

fn commit_sha(args: &BuildArgs, source: &Path) -> Option<String> {
    if let Some(s) = &args.sha {
        return Some(s.clone());
    }
    if let Some(s) = std::env::var("GITHUB_SHA").ok().filter(|s| !s.is_empty()) {
        return Some(s);
    }
    let out = std::process::Command::new("git")
        .arg("-C")
        .arg(source)
        .args(["rev-parse", "HEAD"])
        .output()
        .ok()?;
    out.status
        .success()
        .then(|| String::from_utf8_lossy(&out.stdout).trim().to_owned())
}

/// A wheel from an earlier build with the same cell and inputs digest: its path, bytes (already
/// checked against the record) and record.
fn find_reusable(
    dir: &Path,
    cell: &str,
    digest: &str,
) -> anyhow::Result<Option<(PathBuf, Vec<u8>, CellRecord)>> {
    let entries =
        std::fs::read_dir(dir).with_context(|| format!("reading --reuse-from {dir:?}"))?;
    for e in entries.flatten() {
        let path = e.path();
        if !path.to_string_lossy().ends_with(".build.json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(record) = serde_json::from_slice::<CellRecord>(&bytes) else {
            tracing::warn!(file = %path.display(), "not a build record; skipped");
            continue;
        };
        if record.cell != cell || record.inputs_digest != digest {
            continue;
        }
        // The record is data from a directory we do not control: its wheel must be a plain
        // file name next to it, never a path.
        let plain =
            Path::new(&record.wheel).file_name() == Some(std::ffi::OsStr::new(&record.wheel));
        if !plain || !record.wheel.ends_with(".whl") {
            tracing::warn!(file = %path.display(), wheel = %record.wheel, "record names no plain wheel file; skipped");
            continue;
        }
        let wheel = dir.join(&record.wheel);
        let Ok(bytes) = std::fs::read(&wheel) else {
            tracing::warn!(wheel = %wheel.display(), "recorded wheel missing; not reused");
            continue;
        };
        if vouch_core::Sha256Digest::of(&bytes).to_string() != record.sha256 {
            tracing::warn!(wheel = %wheel.display(), "recorded wheel changed; not reused");
            continue;
        }
        return Ok(Some((wheel, bytes, record)));
    }
    Ok(None)
}

fn build_cell(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let started = Instant::now();
    let cell_id = args.cell.clone().expect("checked by the caller");
    let profile_path = args
        .profile
        .clone()
        .unwrap_or_else(|| PathBuf::from("vouch.toml"));
    let profile = Profile::load(&profile_path)?;
    let mut cell = profile.find_cell(&cell_id)?;
    cell.env.extend(args.set.iter().cloned());
    let cache_dir = default_cache_dir(args.env.tools.cache_dir.clone());

    // An sdist is unpacked once here: the inputs digest reads the same files the build does.
    let unpacked;
    let (source, sdist_epoch) = if args.source.is_file() {
        unpacked = tempfile::tempdir()?;
        let (root, newest) = vouch_build::unpack_sdist(&args.source, unpacked.path())
            .with_context(|| format!("unpacking {:?}", args.source))?;
        (root, Some(newest))
    } else {
        (args.source.clone(), None)
    };
    let python = vouch_build::Python::find(args.env.tools.python.as_deref())?;
    let want = cell.python.trim_end_matches('t');
    let free_threaded = python.free_threaded;
    if !python.version.starts_with(&format!("{want}."))
        || cell.python.ends_with('t') != free_threaded
    {
        anyhow::bail!(WrongPython(format!(
            "cell {} is for Python {}, but the interpreter is Python {}{}; pass --python",
            cell.id,
            cell.python,
            python.version,
            if free_threaded {
                " (free-threaded)"
            } else {
                ""
            }
        )));
    }
    let inputs = vouch_profile::inputs_digest(&profile, &cell, &source)?;
    output::note(format!(
        "cell {}: inputs {} ({} files)",
        cell.id, inputs.digest, inputs.files
    ));
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {:?}", args.out))?;

    let sha = commit_sha(&args, &source);
    let pr = pull_request(&args);
    let artifact = match &sha {
        // A source-routed cell shares its dist/python/platform with a wheel cell: its artifact
        // is named by the cell id, as the generated workflows name it.
        Some(sha) if cell.route == "source" => Some(match pr {
            Some(n) => format!("{}-pr{n}-{sha}", cell.id),
            None => format!("{}-{sha}", cell.id),
        }),
        Some(sha) => Some(
            ArtifactName::new(
                cell.package.clone(),
                cell.python.parse::<PythonVersion>()?,
                cell.platform.parse::<Platform>()?,
                pr,
                sha.clone(),
            )?
            .to_string(),
        ),
        None => {
            output::note("no commit known (--sha, GITHUB_SHA or git): no artifact name");
            None
        }
    };

    if let Some(dir) = &args.reuse_from
        && let Some((wheel, bytes, mut record)) =
            find_reusable(dir, &cell.id, &inputs.digest.to_string())?
    {
        let dest = args.out.join(&record.wheel);
        let same_file = match (std::fs::canonicalize(&wheel), std::fs::canonicalize(&dest)) {
            (Ok(a), Ok(b)) => a == b,
            _ => false,
        };
        if !same_file {
            // The bytes already checked, through a temporary file: never a partial wheel in --out.
            crate::attest_cmd::write_atomically(&dest, &bytes)?;
        }
        record.reused_from = Some(dir.display().to_string());
        // The earlier record's name carries its own commit; this build's is ours (or none).
        record.artifact = artifact;
        record.seconds = Durations {
            total: started.elapsed().as_secs_f64(),
            ..Durations::default()
        };
        crate::attest_cmd::write_atomically(
            &args.out.join(format!("{}.build.json", record.wheel)),
            &serde_json::to_vec_pretty(&record)?,
        )?;
        output::note(format!(
            "reused {} from {} (same inputs digest)",
            record.wheel,
            dir.display()
        ));
        return emit(&args, &record, &dest);
    }

    let trust = crate::cli::trust_level(args.cache.scope.event.as_deref());
    let mut options = build_options(
        &source,
        &args.out,
        args.epoch.source_date_epoch.or(sdist_epoch),
        &args.env,
    )?;
    options.trust = trust;
    crate::cli::warn_unkeyed(trust, options.seal_key.is_some());
    let toolchain_started = Instant::now();
    let installed = install_toolchain(
        &profile,
        &cell,
        &trust.root(&cache_dir),
        &python.executable,
        options.seal_key.as_deref(),
    )?;
    let toolchain_seconds = toolchain_started.elapsed().as_secs_f64();

    let cache = start_cache(&args, &mut options)?;
    let cuda_path = installed.as_ref().map(|i| i.cuda_path.clone());
    let mut cell_env = std::collections::BTreeMap::new();
    for (k, v) in &cell.env {
        if cuda_path.is_none() && v.contains("${CUDA_PATH}") {
            anyhow::bail!(crate::verify_cmd::UsageError(format!(
                "cell {}: {k} uses ${{CUDA_PATH}}, but the profile declares no toolchain for \
                 {} on {} (flavors.{}.toolchain.{})",
                cell.id, cell.flavor, cell.platform, cell.flavor, cell.platform
            )));
        }
        let v = expand(v, cuda_path.as_deref(), options.launcher.as_deref());
        cell_env.insert(k.clone(), v);
    }
    if let Some(i) = &installed {
        cell_env.insert("CUDA_PATH".to_owned(), i.cuda_path.display().to_string());
        let lib = std::env::join_paths(i.library_path())?;
        cell_env.insert(
            "LIBRARY_PATH".to_owned(),
            lib.to_string_lossy().into_owned(),
        );
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
            files: t
                .files
                .iter()
                .map(|(dest, from)| (dest.clone(), profile.resolve(from)))
                .collect(),
        });
    }
    if let Some(r) = &profile.repair {
        options.repair = Some(vouch_build::Repair {
            plat: r.plat.get(&cell.platform).cloned(),
            exclude: r.exclude.clone(),
        });
    }
    output::note(format!(
        "building {} for cell {}",
        source.display(),
        cell.id
    ));
    let build_started = Instant::now();
    let spinner = output::spinner(format!("building {}", cell.id));
    let built = vouch_build::build_wheel(&options)
        .with_context(|| format!("building cell {} from {:?}", cell.id, args.source))?;
    drop(spinner);
    let build_seconds = build_started.elapsed().as_secs_f64();
    let cache = finish_cache(cache)?;
    if let Some(r) = &built.repair {
        if r.ran {
            output::note(format!("repair: {}", r.detail));
        } else {
            output::annotate_warning(&format!("{}: {}", cell.id, r.detail));
        }
    }

    let wheel_name = built
        .wheel
        .file_name()
        .expect("a wheel file")
        .to_string_lossy()
        .into_owned();
    let record = CellRecord {
        cell: cell.id.clone(),
        package: cell.package.clone(),
        artifact,
        wheel: wheel_name.clone(),
        sha256: built.sha256.to_string(),
        inputs_digest: inputs.digest.to_string(),
        inputs_files: inputs.files,
        source_date_epoch: built.source_date_epoch,
        toolchain: installed.as_ref().map(serde_json::to_value).transpose()?,
        cache: cache.as_ref().map(serde_json::to_value).transpose()?,
        repair: built
            .repair
            .as_ref()
            .map(serde_json::to_value)
            .transpose()?,
        env: cell_env,
        build_tools: built.build_tools.clone(),
        seconds: Durations {
            toolchain: toolchain_seconds,
            build: build_seconds,
            total: started.elapsed().as_secs_f64(),
        },
        reused_from: None,
    };
    crate::attest_cmd::write_atomically(
        &args.out.join(format!("{wheel_name}.build.json")),
        &serde_json::to_vec_pretty(&record)?,
    )?;
    emit(&args, &record, &built.wheel)
}

/// One row per cell in `$GITHUB_STEP_SUMMARY`.
fn summarize(record: &CellRecord) {
    let hit_rate = record
        .cache
        .as_ref()
        .and_then(|c| c.get("hit_rate"))
        .and_then(serde_json::Value::as_f64)
        .map_or("-".to_owned(), |r| format!("{:.1}%", r * 100.0));
    output::step_summary(&format!(
        "| cell | wheel | sha256 | inputs | cache hits | build |\n|---|---|---|---|---|---|\n\
         | `{}` | `{}` | `{}` | `{}` | {} | {} |\n\n",
        record.cell,
        record.wheel,
        record.sha256,
        record.inputs_digest,
        hit_rate,
        match &record.reused_from {
            Some(from) => format!("reused from `{from}`"),
            None => format!("{:.0} s", record.seconds.build),
        }
    ));
}

fn emit(args: &BuildArgs, record: &CellRecord, wheel: &Path) -> anyhow::Result<ExitCode> {
    summarize(record);
    if args.common.json {
        output::json(record);
    } else {
        if let Some(a) = &record.artifact {
            output::note(format!("artifact: {a}"));
        }
        output::data(format!("{}  {}", record.sha256, wheel.display()));
    }
    Ok(ExitCode::SUCCESS)
}
