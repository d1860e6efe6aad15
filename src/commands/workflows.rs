//! `vouch workflows generate|check`: the GitHub Actions workflows a profile's matrix needs.

use std::path::Path;
use std::process::ExitCode;

use vouch_profile::Profile;

use crate::cli::{ExplainArgs, WorkflowsArgs, WorkflowsCommand};
use crate::output;

fn generated(args: &WorkflowsArgs) -> anyhow::Result<Vec<vouch_workflows::GeneratedFile>> {
    let profile = Profile::load(&args.profile)?;
    let options = vouch_workflows::Options::from_profile(
        &profile,
        args.profile.to_string_lossy().replace('\\', "/"),
    )?;
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

fn explain(args: &ExplainArgs) -> anyhow::Result<ExitCode> {
    let files = generated(&args.workflows)?;
    let files = if args.on_disk {
        read_on_disk(&args.workflows.out, &files)?
    } else {
        files
    };
    let mut scenario = vouch_workflows::explain::Scenario::new(&args.event);
    scenario.action = args.action.clone();
    scenario.fork = args.fork;
    scenario.label = args.label.clone();
    scenario.actor_association = args.actor_association.clone();
    scenario.comment = args
        .comment
        .clone()
        .or_else(|| (args.event == "issue_comment").then(|| "/test".to_owned()));
    scenario.git_ref = args.git_ref.clone();
    scenario.previously_tested = args.previously_tested;
    let x = vouch_workflows::explain::explain(&files, &scenario)?;
    if args.json {
        output::data(serde_json::to_string_pretty(&x)?);
    } else {
        output::data(vouch_workflows::explain::render_text(&x).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(cmd: WorkflowsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        WorkflowsCommand::Explain(args) => explain(&args),
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
            for (name, home, why) in vouch_workflows::SECRETS {
                let home = match home {
                    vouch_workflows::SecretHome::TrustedEnvironment => {
                        format!("environment {}", vouch_workflows::TRUSTED_ENVIRONMENT)
                    }
                    vouch_workflows::SecretHome::Repository => "repository".to_owned(),
                };
                output::note(format!("  secrets.{name} ({home}): {why}"));
            }
            output::note(format!(
                "limit the environment {} to these deployment refs: {}",
                vouch_workflows::TRUSTED_ENVIRONMENT,
                vouch_workflows::TRUSTED_REFS.join(", ")
            ));
            output::note(format!(
                "require the commit status `{}` (posted from the default branch); create the label `{}`",
                vouch_workflows::REQUIRED_STATUS,
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
