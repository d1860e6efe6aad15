//! `vouch toolchain install`: a cell's CUDA toolkit, laid out (or reused) in the cache.

use std::process::ExitCode;

use vouch_profile::Profile;

use crate::cli::ToolchainCommand;
use crate::common::{UsageError, default_cache_dir, trust_level};
use crate::output;

pub fn toolchain(cmd: ToolchainCommand) -> anyhow::Result<ExitCode> {
    let ToolchainCommand::Install(args) = cmd;
    let profile = Profile::load(&args.profile)?;
    let cell = profile.find_cell(&args.cell)?;
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
        anyhow::bail!(UsageError(format!(
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
