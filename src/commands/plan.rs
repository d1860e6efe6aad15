//! `vouch plan` and `vouch inputs`.

use std::process::ExitCode;

use vouch_profile::Profile;

use crate::cli::{InputsArgs, PlanArgs};
use crate::output;

pub fn plan(args: PlanArgs) -> anyhow::Result<ExitCode> {
    let profile = Profile::load(&args.profile)?;
    let cells = profile.plan();
    match args.format.as_str() {
        "github" => {
            let mut matrix = vouch_profile::github_matrix(&cells);
            if let Some(event) = &args.event {
                let mode = cache_mode(event)?;
                for entry in matrix["include"].as_array_mut().expect("include array") {
                    entry["cache_mode"] = serde_json::Value::from(mode);
                }
            }
            output::data(serde_json::to_string(&matrix)?)
        }
        "json" => output::json(&cells),
        "table" => {
            output::data(format!(
                "{:<40} {:<18} {:<6} {:<6} {}",
                "cell", "runner", "route", "cuda", "artifact"
            ));
            for c in &cells {
                output::data(format!(
                    "{:<40} {:<18} {:<6} {:<6} {}",
                    c.id, c.runner, c.route, c.cuda, c.artifact_stem
                ));
            }
        }
        other => anyhow::bail!(crate::common::UsageError(format!(
            "--format {other:?}: expected github, json or table"
        ))),
    }
    Ok(ExitCode::SUCCESS)
}

pub fn inputs(args: InputsArgs) -> anyhow::Result<ExitCode> {
    let profile = Profile::load(&args.profile)?;
    let mut cell = profile.find_cell(&args.cell)?;
    cell.env.extend(args.set.iter().cloned());
    let d = vouch_profile::inputs_digest(&profile, &cell, &args.source)?;
    if args.common.json() {
        output::json(&d);
    } else {
        if args.explain {
            for line in &d.explain {
                output::data(line);
            }
        }
        output::data(format!(
            "{}  {} files, {} bytes",
            d.digest, d.files, d.bytes
        ));
    }
    Ok(ExitCode::SUCCESS)
}

/// The cache mode a job triggered by `event` runs with; events vouch does not build for are
/// refused rather than guessed.
fn cache_mode(event: &str) -> anyhow::Result<&'static str> {
    match event {
        "pull_request" => Ok("pr"),
        e if vouch_core::ci::BUILD_EVENTS.contains(&e) => Ok("trusted"),
        other => anyhow::bail!(crate::common::UsageError(format!(
            "--event {other:?}: expected push, pull_request, workflow_dispatch or schedule \
             (issue_comment and pull_request_target runs never build)"
        ))),
    }
}
