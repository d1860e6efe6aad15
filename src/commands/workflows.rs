//! `vouch workflows generate|check`: the GitHub Actions workflows a profile's matrix needs.

use std::path::Path;
use std::process::ExitCode;

use vouch_profile::Profile;

use crate::cli::{ExplainArgs, WorkflowsCommand};
use crate::output;

fn generated(profile_path: &Path) -> anyhow::Result<Vec<vouch_workflows::GeneratedFile>> {
    let profile = Profile::load(profile_path)?;
    let options = vouch_workflows::Options::from_profile(
        &profile,
        profile_path.to_string_lossy().replace('\\', "/"),
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
    let files = generated(&args.workflows.profile)?;
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
    scenario.pushed_after_comment = args.pushed_after_comment;
    scenario.deleted = args.deleted;
    scenario.skip_ci = args.skip_ci;
    let x = vouch_workflows::explain::explain(&files, &scenario)?;
    if args.common.json() {
        output::data(serde_json::to_string_pretty(&x)?);
    } else {
        output::data(vouch_workflows::explain::render_text(&x).trim_end());
    }
    Ok(ExitCode::SUCCESS)
}

pub fn run(cmd: WorkflowsCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        WorkflowsCommand::Explain(args) => explain(&args),
        WorkflowsCommand::Calls(args) => {
            let calls = vouch_workflows::vouch_calls(&generated(&args.profile)?)?;
            let resolved: Vec<ResolvedCall> = calls.iter().map(resolve).collect();
            if args.common.json() {
                output::json(&resolved);
            } else {
                for c in &resolved {
                    output::data(format!(
                        "{} {}: vouch {} {}",
                        c.file,
                        c.job,
                        c.command.join(" "),
                        c.flags.join(" ")
                    ));
                }
            }
            if let Some(bad) = resolved.iter().find(|c| c.command.is_empty()) {
                anyhow::bail!(
                    "{} {}: `vouch {}` is no command of this vouch",
                    bad.file,
                    bad.job,
                    bad.words.join(" ")
                );
            }
            Ok(ExitCode::SUCCESS)
        }
        WorkflowsCommand::Generate(args) => {
            let files = generated(&args.profile)?;
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
            let profile = Profile::load(&args.profile)?;
            if let Some(w) = profile
                .workflows
                .as_ref()
                .and_then(|w| vouch_workflows::pr_cache_note(&w.cache))
            {
                output::note(w);
            }
            output::note(format!(
                "limit the environment {} to these deployment refs: {}; {}",
                vouch_workflows::TRUSTED_ENVIRONMENT,
                vouch_workflows::TRUSTED_REFS.join(", "),
                vouch_workflows::TRUSTED_REFS_RULESET
            ));
            output::note(format!(
                "require the commit status `{}` (posted from the default branch); {}",
                vouch_workflows::REQUIRED_STATUS,
                vouch_workflows::REQUIRED_STATUS_SOURCE
            ));
            output::note(format!(
                "create the label `{}`; maintainers ask for a build with `/test <targets> @<sha>` (at least {} hex digits of the head they reviewed)",
                vouch_workflows::TRIGGER_LABEL,
                vouch_workflows::MIN_NAMED_DIGITS
            ));
            Ok(ExitCode::SUCCESS)
        }
        WorkflowsCommand::Check(args) => {
            let files = generated(&args.profile)?;
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

/// A workflow's `vouch` call with its command found in this CLI's grammar.
#[derive(serde::Serialize)]
struct ResolvedCall<'a> {
    file: &'a str,
    job: &'a str,
    /// The subcommand path (`["cache", "check"]`); empty when the words name no command.
    command: Vec<String>,
    /// The call's words after `vouch`, as the workflow has them.
    words: &'a [String],
    flags: &'a [String],
    /// Flags the command does not have by that (canonical, long) name.
    unknown_flags: Vec<String>,
}

fn resolve(call: &vouch_workflows::VouchCall) -> ResolvedCall<'_> {
    use clap::CommandFactory as _;
    let mut cmd = crate::cli::Cli::command();
    let mut path = Vec::new();
    for w in &call.words {
        match cmd.find_subcommand(w) {
            Some(sub) => {
                path.push(w.clone());
                cmd = sub.clone();
            }
            None => break,
        }
    }
    if cmd.has_subcommands() {
        path.clear();
    }
    let longs: Vec<String> = cmd
        .get_arguments()
        .filter_map(|a| a.get_long().map(|l| format!("--{l}")))
        .chain(["--verbose".into(), "--quiet".into()])
        .collect();
    ResolvedCall {
        file: &call.file,
        job: &call.job,
        unknown_flags: call
            .flags
            .iter()
            .filter(|f| path.is_empty() || !longs.contains(f))
            .cloned()
            .collect(),
        command: path,
        words: &call.words,
        flags: &call.flags,
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

/// Every `vouch` command line the generated workflows run (CuPy's profile, with each cache
/// store) names a command and flags this CLI has, by their canonical names: an old
/// spelling kept as an alias would break the day the alias goes, and a renamed flag the
/// day the pinned vouch is bumped. (`scripts/install-route-source.sh` holds the same calls
/// to the pinned commit's own `--help`.)
#[cfg(test)]
#[test]
fn generated_workflows_call_this_cli_by_canonical_names() {
    let template =
        Path::new(env!("CARGO_MANIFEST_DIR")).join("pyproject-templates/cupy/vouch.toml");
    let text = std::fs::read_to_string(&template).unwrap();
    let dir = tempfile::tempdir().unwrap();
    let mut problems = Vec::new();
    let mut seen = 0;
    for store in ["gha", "redis", "none"] {
        let profile = dir.path().join(format!("vouch-{store}.toml"));
        let variant = text.replace("\nstore = \"gha\"\n", &format!("\nstore = \"{store}\"\n"));
        std::fs::write(&profile, variant).unwrap();
        let profile = Profile::load(&profile).unwrap();
        let options = vouch_workflows::Options::from_profile(&profile, "vouch.toml").unwrap();
        let files = vouch_workflows::generate(&profile, &options).unwrap();
        for call in vouch_workflows::vouch_calls(&files).unwrap() {
            seen += 1;
            let r = resolve(&call);
            if r.command.is_empty() || !r.unknown_flags.is_empty() {
                problems.push(format!(
                    "{}/{} ({store}): vouch {:?}: no command, or unknown {:?}",
                    call.file, call.job, call.words, r.unknown_flags
                ));
            }
        }
    }
    assert!(seen > 20, "only {seen} calls found");
    assert!(problems.is_empty(), "{}", problems.join("\n"));
}
