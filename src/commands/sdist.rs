//! `vouch sdist`: the project's source distribution, built and normalized.

use std::process::ExitCode;

use anyhow::Context as _;
use serde::Serialize;

use crate::cli::SdistArgs;
use crate::common::build_options;
use crate::output;

/// The report: what was built, and the variables the backend saw beyond the scrubbed set.
#[derive(Serialize)]
struct SdistRecord {
    #[serde(flatten)]
    sdist: vouch_build::SdistOutput,
    env: std::collections::BTreeMap<String, String>,
}

pub fn sdist(args: SdistArgs) -> anyhow::Result<ExitCode> {
    let mut options = build_options(
        &args.source,
        &args.out,
        args.epoch.source_date_epoch,
        &args.env,
    )?;
    let profile = args
        .profile
        .as_deref()
        .map(vouch_profile::Profile::load)
        .transpose()?;
    // The profile's build tools, locked for this interpreter on this machine.
    if let Some(p) = &profile {
        // The sdist job is the one step that has the checkout: what it names (CuPy's
        // ci/versions.yml) must be what the cells will build with.
        if args.source.is_dir() {
            p.check_cuda_versions(&args.source)?;
        }
        let python = vouch_build::Python::find(options.python.as_deref())?;
        let minor: Vec<&str> = python.version.split('.').take(2).collect();
        let tag = format!(
            "{}{}",
            minor.join("."),
            if python.free_threaded { "t" } else { "" }
        );
        options.lock = vouch_core::Platform::host().and_then(|h| p.lock_file_for(&tag, h));
        if p.lock.is_some() && options.lock.is_none() {
            anyhow::bail!(
                "the profile's build tools are locked per platform, and this machine is none of \
                 its platforms ({}): no lock applies; pass --lock FILE",
                vouch_core::Platform::names()
            );
        }
    }
    let mut env: Vec<(String, String)> = profile
        .map(|p| p.sdist.env.into_iter().collect())
        .unwrap_or_default();
    // A `--set` overrides the profile's value of the same variable.
    env.retain(|(k, _)| !args.set.iter().any(|(s, _)| s == k));
    env.extend(args.set.iter().cloned());
    options.env = env.clone();
    crate::common::warn_unkeyed(options.trust, options.seal_key.is_some());
    output::note(format!("building the sdist of {}", args.source.display()));
    let spinner = output::spinner(format!("building the sdist of {}", args.source.display()));
    let built = vouch_build::build_sdist(&options)
        .with_context(|| format!("building an sdist from {:?}", args.source))?;
    drop(spinner);
    if args.common.json() {
        output::json(&SdistRecord {
            sdist: built,
            env: env.into_iter().collect(),
        });
    } else {
        output::data(format!("{}  {}", built.sha256, built.sdist.display()));
    }
    Ok(ExitCode::SUCCESS)
}
