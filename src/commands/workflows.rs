//! `vouch workflows generate|check`: the GitHub Actions workflows a profile's matrix needs.

use std::path::Path;
use std::process::ExitCode;

use vouch_profile::Profile;

use crate::cli::{WorkflowsArgs, WorkflowsCommand};
use crate::output;

fn generated(args: &WorkflowsArgs) -> anyhow::Result<Vec<vouch_workflows::GeneratedFile>> {
    let profile = Profile::load(&args.profile)?;
    let spec = profile.workflows.clone();
    let version = args
        .vouch_version
        .clone()
        .or_else(|| spec.as_ref().map(|s| s.version.clone()))
        .ok_or_else(|| {
            crate::common::UsageError(format!(
                "no vouch version: pass --vouch-version or set `[workflows] version` in {:?}",
                args.profile
            ))
        })?;
    let hashes = if args.vouch_sha256.is_empty() {
        spec.as_ref().map(|s| s.sha256.clone()).unwrap_or_default()
    } else {
        args.vouch_sha256.clone()
    };
    let mut options = vouch_workflows::Options::new(
        args.profile.to_string_lossy().replace('\\', "/"),
        version,
        hashes,
    );
    if let Some(package) = spec.and_then(|s| s.package) {
        options.vouch_package = package;
    }
    let files = vouch_workflows::generate(&profile, &options)?;
    let violations = vouch_workflows::audit_trust(&files)?;
    if !violations.is_empty() {
        // A generator bug, never a user's: refuse to write workflows that break the rules.
        for v in &violations {
            output::annotate_error(&v.to_string());
        }
        anyhow::bail!(
            "the generated workflows break {} trust rule(s)",
            violations.len()
        );
    }
    Ok(files)
}

pub fn run(cmd: WorkflowsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        WorkflowsCommand::Generate(args) => {
            let files = generated(&args)?;
            vouch_workflows::write_files(&args.out, &files)?;
            for f in &files {
                output::data(args.out.join(&f.name).display());
            }
            output::note("the workflows read these repository variables and secrets:");
            for (name, why) in vouch_workflows::VARIABLES {
                output::note(format!("  vars.{name}: {why}"));
            }
            for (name, why) in vouch_workflows::SECRETS {
                output::note(format!("  secrets.{name}: {why}"));
            }
            output::note(format!(
                "require the check `{}`; create the label `{}`",
                vouch_workflows::SENTINEL_JOB,
                vouch_workflows::TRIGGER_LABEL
            ));
            Ok(ExitCode::SUCCESS)
        }
        WorkflowsCommand::Check(args) => {
            let files = generated(&args)?;
            let stale = vouch_workflows::check(&args.out, &files)?;
            let on_disk = read_on_disk(&args.out, &files)?;
            let violations = vouch_workflows::audit_trust(&on_disk)?;
            for s in &stale {
                output::annotate_error(&format!(
                    "{}: {:?}; run `vouch workflows generate`",
                    args.out.join(&s.name).display(),
                    s.kind
                ));
                output::data(&s.diff);
            }
            for v in &violations {
                output::annotate_error(&v.to_string());
            }
            if stale.is_empty() && violations.is_empty() {
                output::note(format!(
                    "{} workflows in {} are up to date",
                    files.len(),
                    args.out.display()
                ));
                Ok(ExitCode::SUCCESS)
            } else {
                Ok(ExitCode::from(crate::exit::DIFFERENT))
            }
        }
    }
}

/// The generated files as they are on disk (the missing ones are already reported stale).
fn read_on_disk(
    dir: &Path,
    files: &[vouch_workflows::GeneratedFile],
) -> anyhow::Result<Vec<vouch_workflows::GeneratedFile>> {
    let mut out = Vec::new();
    for f in files {
        let path = dir.join(&f.name);
        if let Ok(contents) = std::fs::read_to_string(&path) {
            out.push(vouch_workflows::GeneratedFile {
                name: f.name.clone(),
                contents,
            });
        } else if path.exists() {
            anyhow::bail!(std::io::Error::other(format!(
                "{path:?} is not readable text"
            )));
        }
    }
    Ok(out)
}
