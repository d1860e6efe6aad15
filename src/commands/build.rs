//! `vouch build`: one project, or one cell of a profile's matrix (run by `vouch-cell`).

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use serde::Serialize;
use vouch_cell::CellRecord;
use vouch_profile::Profile;

use crate::cli::BuildArgs;
use crate::common::build_options;
use crate::output;

#[derive(Serialize)]
struct BuildRecord {
    #[serde(flatten)]
    build: vouch_build::BuildOutput,
    #[serde(skip_serializing_if = "Option::is_none")]
    cache: Option<vouch_cell::CacheRecord>,
}

/// Flags that only mean something together with another are refused alone: a flag vouch
/// parsed and then dropped would let a user believe it took effect.
fn refuse_unused_flags(args: &BuildArgs) -> anyhow::Result<()> {
    let usage = |flag: &str, needs: &str| {
        Err(anyhow::Error::new(crate::common::UsageError(format!(
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
            ("--password-file", args.cache.password_file.is_some()),
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

/// The build's options from the flags, at the trust level of what triggered it.
fn options(args: &BuildArgs) -> anyhow::Result<vouch_build::BuildOptions> {
    let mut options = build_options(
        &args.source,
        &args.out,
        args.epoch.source_date_epoch,
        &args.env,
    )?;
    options.trust = crate::common::trust_level(args.cache.scope.event.as_deref());
    crate::common::warn_unkeyed(options.trust, options.seal_key.is_some());
    Ok(options)
}

pub fn build(args: BuildArgs) -> anyhow::Result<ExitCode> {
    refuse_unused_flags(&args)?;
    if args.cell.is_some() {
        return build_cell(args);
    }
    let mut options = options(&args)?;
    output::note(format!("building {}", args.source.display()));
    let cache = cache_setup(&args)?
        .map(|setup| vouch_cell::RunningCache::start(setup, None, &mut options, &output::Terminal))
        .transpose()?;
    let spinner = output::spinner(format!("building {}", args.source.display()));
    let built = vouch_build::build_wheel(&options)
        .with_context(|| format!("building a wheel from {:?}", args.source))?;
    drop(spinner);
    let cache = cache
        .map(|c| c.finish(&output::Terminal, built.shim_cache.clone()))
        .transpose()?;
    if args.common.json() {
        output::json(&BuildRecord {
            build: built,
            cache,
        });
    } else {
        output::data(format!("{}  {}", built.sha256, built.wheel.display()));
    }
    Ok(ExitCode::SUCCESS)
}

/// The cache the build asked for (`--cache`), its scope decided from the flags or GitHub.
fn cache_setup(args: &BuildArgs) -> anyhow::Result<Option<vouch_cell::CacheSetup>> {
    let (Some(tool), Some(store)) = (args.cache.cache, &args.cache.cache_store) else {
        return Ok(None);
    };
    let policy = args
        .cache
        .scope
        .policy()
        .context("deciding the cache scope")?;
    let keys = crate::common::entry_keys(
        args.env.tools.seal_key_file.as_deref(),
        args.cache.public_key.as_ref(),
        &policy,
    )?;
    Ok(Some(vouch_cell::CacheSetup {
        tool,
        store: crate::common::store_spec(store, args.cache.password_file.as_deref())?,
        policy,
        keys,
    }))
}

/// The pull request number for the artifact name: the scope flags, or in GitHub Actions the
/// event payload, even when the build uses no cache (and so no scope flags).
fn pull_request(args: &BuildArgs) -> Option<u64> {
    if let Some(pr) = args.cache.scope.trigger().ok().and_then(|t| t.pr) {
        return Some(pr);
    }
    if vouch_core::ci::in_github_actions() {
        let from_github = crate::cli::ScopeArgs {
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
    vouch_core::git::head(source)
}

fn build_cell(args: BuildArgs) -> anyhow::Result<ExitCode> {
    let cell_id = args.cell.clone().expect("checked by the caller");
    let profile_path = args
        .profile
        .clone()
        .unwrap_or_else(|| PathBuf::from("vouch.toml"));
    let profile = Profile::load(&profile_path)?;
    let mut cell = profile.find_cell(&cell_id)?;
    cell.env.extend(args.set.iter().cloned());
    let commit = commit_sha(&args, &args.source);
    if commit.is_none() {
        output::note("no commit known (--sha, GITHUB_SHA or git): no artifact name");
    }
    let options = options(&args)?;
    let job = vouch_cell::CellJob {
        profile: &profile,
        cell,
        source: args.source.clone(),
        out: args.out.clone(),
        reuse_from: args.reuse_from.clone(),
        commit,
        pr: pull_request(&args),
        options,
        cache: cache_setup(&args)?,
    };
    let built = match vouch_cell::build_cell(job, &output::Terminal) {
        Err(e @ vouch_cell::CellError::WrongPython { .. }) => {
            return Err(anyhow::Error::new(e).context("pass the cell's interpreter with --python"));
        }
        other => other?,
    };
    emit(&args, &built.record, &built.wheel)
}

/// One row per cell in `$GITHUB_STEP_SUMMARY`.
fn summarize(record: &CellRecord) {
    let hit_rate = record
        .cache
        .as_ref()
        .and_then(|c| c.hit_rate)
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
    if args.common.json() {
        output::json(record);
    } else {
        if let Some(a) = &record.artifact {
            output::note(format!("artifact: {a}"));
        }
        output::data(format!("{}  {}", record.sha256, wheel.display()));
    }
    Ok(ExitCode::SUCCESS)
}
