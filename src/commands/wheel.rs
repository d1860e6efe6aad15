//! `vouch normalize`, `vouch diff` and `vouch name`: wheels (and sdists) and artifact names.

use std::process::ExitCode;

use anyhow::Context as _;
use vouch_core::{ArtifactName, Platform, PythonVersion};

use crate::cli::{DiffArgs, NameCommand, NormalizeArgs};
use crate::{exit, output};

pub fn normalize(args: NormalizeArgs) -> anyhow::Result<ExitCode> {
    let options = vouch_wheel::NormalizeOptions {
        epoch: args
            .epoch
            .source_date_epoch
            .unwrap_or(vouch_wheel::DEFAULT_EPOCH),
    };
    let mut reports = Vec::new();
    for file in &args.wheels {
        let context = || format!("normalizing {file:?}");
        let (sha256, written, report) = if is_sdist(file) {
            let r = vouch_wheel::normalize_sdist(file, &args.out, options.epoch)
                .with_context(context)?;
            (r.sha256, r.output.clone(), serde_json::to_value(r)?)
        } else {
            let r = vouch_wheel::normalize_wheel(file, &args.out, options).with_context(context)?;
            (r.sha256, r.output.clone(), serde_json::to_value(r)?)
        };
        if !args.common.json() {
            output::data(format!("{sha256}  {}", written.display()));
        }
        reports.push(report);
    }
    if args.common.json() {
        output::json(&reports);
    }
    Ok(ExitCode::SUCCESS)
}

/// An sdist goes by its suffix; anything else is taken for a wheel (and the wheel reader says
/// what is wrong with it).
fn is_sdist(path: &std::path::Path) -> bool {
    path.to_string_lossy().ends_with(".tar.gz")
}

pub fn diff(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let d = if is_sdist(&args.a) && is_sdist(&args.b) {
        vouch_wheel::diff_sdists(&args.a, &args.b)?
    } else {
        vouch_wheel::diff_wheels(&args.a, &args.b)?
    };
    if args.common.json() {
        output::json(&d);
    } else if d.identical {
        output::data(format!("identical: {}", d.sha256[0]));
    } else {
        for m in &d.only_in_a {
            output::data(format!("only in A: {m}"));
        }
        for m in &d.only_in_b {
            output::data(format!("only in B: {m}"));
        }
        for c in &d.changed {
            let mut what = Vec::new();
            if c.content {
                what.push("content".to_owned());
            }
            if let Some([a, b]) = &c.mode {
                what.push(format!(
                    "mode {} -> {}",
                    a.as_deref().unwrap_or("none"),
                    b.as_deref().unwrap_or("none")
                ));
            }
            if let Some([a, b]) = &c.timestamp {
                what.push(format!(
                    "time {} -> {}",
                    a.as_deref().unwrap_or("none"),
                    b.as_deref().unwrap_or("none")
                ));
            }
            output::data(format!("differs: {} ({})", c.name, what.join(", ")));
        }
        if d.order_differs {
            output::data("member order differs");
        }
        if d.members_identical() {
            output::data("members identical; archive bytes differ (compression or zip metadata)");
        }
    }
    Ok(ExitCode::from(if d.identical {
        exit::SUCCESS
    } else {
        exit::DIFFERENT
    }))
}

#[derive(serde::Serialize)]
struct NameParts<'a> {
    name: String,
    dist: &'a str,
    python: String,
    platform: &'static str,
    pr: Option<u64>,
    sha: &'a str,
}

pub fn name(cmd: NameCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        NameCommand::Render {
            dist,
            python_version,
            platform,
            pr,
            sha,
        } => {
            let python: PythonVersion = python_version.parse()?;
            let platform: Platform = platform.parse()?;
            output::data(ArtifactName::new(dist, python, platform, pr, sha)?);
        }
        NameCommand::Parse { name, common } => {
            let n: ArtifactName = name
                .parse()
                .with_context(|| format!("parsing artifact name {name:?}"))?;
            let parts = NameParts {
                name: n.to_string(),
                dist: &n.dist,
                python: n.python.to_string(),
                platform: n.platform.as_str(),
                pr: n.pr,
                sha: &n.sha,
            };
            if common.json() {
                output::json(&parts);
            } else {
                output::data(format!(
                    "dist={} python={} platform={} pr={} sha={}",
                    parts.dist,
                    parts.python,
                    parts.platform,
                    parts.pr.map_or("-".to_owned(), |p| p.to_string()),
                    parts.sha
                ));
            }
        }
    }
    Ok(ExitCode::SUCCESS)
}
