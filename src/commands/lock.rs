//! `vouch lock`: regenerate (or `--check`) a profile's hash-locked build tools.

use std::process::ExitCode;

use anyhow::Context as _;
use serde::Serialize;
use vouch_profile::Profile;

use crate::cli::LockArgs;
use crate::common::UsageError;
use crate::output;

#[derive(Serialize)]
struct Written {
    file: String,
    sha256: vouch_core::Sha256Digest,
    python: String,
    platform: vouch_core::Platform,
    /// `--check`: whether the file on disk is what the inputs resolve to now.
    up_to_date: bool,
}

/// The project's build requirements: the source's `build-system.requires`, else the profile's.
fn project_requires(args: &LockArgs, profile: &Profile) -> anyhow::Result<Vec<String>> {
    let spec = profile.lock.as_ref().ok_or_else(|| {
        UsageError(format!(
            "profile {:?} has no [lock] section: add one (README, \"Profiles\") to say where its lock files go",
            args.profile
        ))
    })?;
    let Some(source) = &args.source else {
        if spec.requires.is_empty() {
            anyhow::bail!(UsageError(format!(
                "profile {:?} lists no lock.requires: pass --source with the project's source tree",
                args.profile
            )));
        }
        return Ok(spec.requires.clone());
    };
    let unpacked;
    let dir = if source.is_file() {
        unpacked = tempfile::tempdir().context("creating a temporary directory")?;
        vouch_build::unpack_sdist(source, unpacked.path())?.0
    } else {
        source.clone()
    };
    let requires = vouch_build::BuildSystem::read(&dir)?.requires;
    if !spec.requires.is_empty() && spec.requires != requires {
        output::note(format!(
            "locking the source's build-system.requires {requires:?}, not the profile's lock.requires {:?}",
            spec.requires
        ));
    }
    Ok(requires)
}

pub fn lock(args: LockArgs) -> anyhow::Result<ExitCode> {
    let profile = Profile::load(&args.profile)?;
    let requires = project_requires(&args, &profile)?;
    let python = vouch_build::Python::find(args.python.as_deref())?;
    let cache = crate::common::default_cache_dir(args.cache_dir.clone()).join("uv");
    let spinner = output::spinner(format!(
        "installing uv {} (hash-pinned)",
        vouch_build::lock::UV_VERSION
    ));
    let uv = vouch_build::lock::Uv::install(&python.executable)?;
    drop(spinner);
    let mut report = Vec::new();
    for set in profile.lock_sets() {
        let target = vouch_build::lock::LockTarget {
            python: set.python.clone(),
            platform: set.platform,
            inputs: vouch_build::lock::tool_requirements(set.platform)
                .into_iter()
                .chain(requires.iter().cloned())
                .chain(set.extra.iter().cloned())
                .collect(),
        };
        let spinner = output::spinner(format!("locking {}", set.file.display()));
        let text = uv
            .compile(
                &target,
                Some(&set.file),
                args.upgrade,
                args.index_url.as_deref(),
                &cache,
            )
            .with_context(|| format!("locking {}", set.file.display()))?;
        drop(spinner);
        let on_disk = std::fs::read(&set.file).ok();
        let up_to_date = on_disk.as_deref() == Some(text.as_bytes());
        if !args.check && !up_to_date {
            if let Some(dir) = set.file.parent() {
                std::fs::create_dir_all(dir).with_context(|| format!("creating {dir:?}"))?;
            }
            crate::common::write_atomically(&set.file, text.as_bytes())?;
        }
        report.push(Written {
            file: set.file.display().to_string(),
            sha256: vouch_core::Sha256Digest::of(text.as_bytes()),
            python: set.python,
            platform: set.platform,
            up_to_date,
        });
    }
    let stale: Vec<&Written> = report.iter().filter(|w| !w.up_to_date).collect();
    if args.common.json() {
        output::json(&report);
    } else {
        for w in &report {
            let state = match (args.check, w.up_to_date) {
                (_, true) => "unchanged",
                (true, false) => "STALE",
                (false, false) => "written",
            };
            output::data(format!("{}  {}  {state}", w.sha256, w.file));
        }
    }
    if args.check && !stale.is_empty() {
        output::note(format!(
            "{} lock file(s) missing or stale: run `vouch lock --profile {}`",
            stale.len(),
            args.profile.display()
        ));
        return Ok(ExitCode::from(crate::exit::DIFFERENT));
    }
    Ok(ExitCode::SUCCESS)
}
