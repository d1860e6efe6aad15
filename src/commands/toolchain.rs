//! `vouch toolchain install`: a cell's CUDA toolkit, laid out (or reused) in the cache.

use std::process::ExitCode;

use serde::Serialize;
use vouch_profile::{Cell, Profile};

use crate::cli::{ToolchainArgs, ToolchainCommand};
use crate::common::{UsageError, default_cache_dir, trust_level};
use crate::output;

pub fn toolchain(cmd: ToolchainCommand) -> anyhow::Result<ExitCode> {
    let ToolchainCommand::Install(args) = cmd;
    let profile = Profile::load(&args.profile)?;
    let cell = profile.find_cell(&args.cell)?;
    if args.dry_run {
        return dry_run(&args, &profile, &cell);
    }
    let cache_dir = trust_level(None).root(&default_cache_dir(args.env.cache_dir.clone()));
    let python = vouch_build::Python::find(args.env.python.as_deref())?;
    let seal_key = args.env.seal_key()?;
    let Some(installed) = vouch_cell::install_toolchain(
        &profile,
        &cell,
        &cache_dir,
        &python.executable,
        seal_key.as_deref(),
        &output::Terminal,
    )?
    else {
        anyhow::bail!(no_toolchain(&args, &cell));
    };
    if args.common.json() {
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

fn no_toolchain(args: &ToolchainArgs, cell: &Cell) -> UsageError {
    UsageError(format!(
        "profile {:?} declares no toolchain for {} on {} (flavors.{}.toolchain.{})",
        args.profile, cell.flavor, cell.platform, cell.flavor, cell.platform
    ))
}

/// `--dry-run --json`: the cell and the toolkit's name, then the plan's fields.
#[derive(Serialize)]
struct DryRun<'a> {
    cell: &'a str,
    toolkit: String,
    #[serde(flatten)]
    plan: vouch_toolchain::Plan,
}

/// What `install` would fetch for the cell, from the profile alone: no download, no Python.
fn dry_run(args: &ToolchainArgs, profile: &Profile, cell: &Cell) -> anyhow::Result<ExitCode> {
    let Some(spec) = profile.toolchain(cell) else {
        anyhow::bail!(no_toolchain(args, cell));
    };
    let plan = vouch_toolchain::plan(&spec, &profile.dir, cell.platform)?;
    let report = DryRun {
        cell: &cell.id,
        toolkit: format!("cuda-{}-{}", cell.cuda, cell.platform),
        plan,
    };
    if args.common.json() {
        output::json(&report);
        return Ok(ExitCode::SUCCESS);
    }
    let plan = &report.plan;
    let host = plan.host.as_deref().unwrap_or("an unknown platform");
    output::data(format!("cell      {}", report.cell));
    output::data(format!(
        "toolkit   {} from {} ({} files), key {}",
        report.toolkit,
        plan.source,
        plan.files.len(),
        plan.key
    ));
    output::data(format!(
        "host      {host}{}",
        if plan.foreign {
            ": another platform; the toolkit is laid out and checked, its nvcc not run"
        } else {
            ""
        }
    ));
    if let Some(req) = &plan.requirements {
        output::data(format!(
            "wheels    {req} (root {})",
            plan.root.as_deref().unwrap_or("")
        ));
        let tags = &plan.pip_platforms;
        output::data(match tags.as_slice() {
            [first, .., last] => format!("pip tags  {first} .. {last} ({} tags)", tags.len()),
            _ => format!("pip tags  {}", tags.join(" ")),
        });
    }
    for f in &plan.files {
        output::data(format!("fetch     {}", f.name));
        for h in &f.sha256 {
            output::data(format!("          sha256:{h}"));
        }
        if let Some(url) = &f.url {
            output::data(format!("          {url}"));
        }
    }
    Ok(ExitCode::SUCCESS)
}
