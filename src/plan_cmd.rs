//! `vouch plan` and `vouch inputs`.

use std::path::PathBuf;
use std::process::ExitCode;

use clap::Args;
use vouch_profile::Profile;

use crate::output;

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The project profile.
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// github (`{"include": [...]}` for `strategy.matrix` via `fromJson`), json, or table.
    #[arg(long, default_value = "table")]
    pub format: String,
    /// The triggering event (`push`, `pull_request`, ...): each entry then carries the cache
    /// mode its job runs with (`trusted` writes the branch scope; `pr` writes only its PR's).
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
}

#[derive(Args, Debug)]
pub struct InputsArgs {
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// The cell id (see `vouch plan`).
    #[arg(long)]
    pub cell: String,
    /// The source tree (an unpacked sdist or a checkout).
    #[arg(long, value_name = "DIR")]
    pub source: PathBuf,
    /// Override one of the cell's variables, as `vouch build --set` does.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    /// List every input that went into the digest.
    #[arg(long)]
    pub explain: bool,
    #[arg(long)]
    pub json: bool,
}

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
        other => anyhow::bail!(crate::verify_cmd::UsageError(format!(
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
    if args.json {
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

/// `KEY=VALUE` for `--set`.
pub fn parse_set(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v))
            if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            Ok((k.to_owned(), v.to_owned()))
        }
        _ => Err(format!(
            "{s:?}: expected KEY=VALUE with KEY made of letters, digits and _"
        )),
    }
}

/// The cache mode a job triggered by `event` runs with; events vouch does not build for are
/// refused rather than guessed.
fn cache_mode(event: &str) -> anyhow::Result<&'static str> {
    match event {
        "push" | "workflow_dispatch" | "schedule" => Ok("trusted"),
        "pull_request" => Ok("pr"),
        other => anyhow::bail!(crate::verify_cmd::UsageError(format!(
            "--event {other:?}: expected push, pull_request, workflow_dispatch or schedule \
             (issue_comment and pull_request_target runs never build)"
        ))),
    }
}
