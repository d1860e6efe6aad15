//! `vouch dispatch flexci|repository`: tell the test farm about a build.

use std::path::Path;
use std::process::ExitCode;

use anyhow::Context as _;
use secrecy::ExposeSecret as _;
use serde::Serialize;
use vouch_dispatch::{Decision, Endpoint, Event, RepositoryDispatch, WebhookRequest};

use crate::cli::{DispatchCommand, DispatchEvent, DispatchFlexciArgs, DispatchRepositoryArgs};
use crate::output;

pub fn run(cmd: DispatchCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        DispatchCommand::Flexci(args) => flexci(args),
        DispatchCommand::Repository(args) => repository(args),
    }
}

/// `dispatch flexci --json`.
#[derive(Serialize)]
struct Report {
    event: &'static str,
    /// `none` (no `/test` line), `skip`, `force-skip`, `dispatch` or `dry-run`.
    outcome: &'static str,
    tags: Vec<String>,
    projects: Vec<String>,
    skipped: Vec<String>,
    jobs: Vec<JobReport>,
}

#[derive(Serialize)]
struct JobReport {
    id: String,
    url: String,
}

fn flexci(args: DispatchFlexciArgs) -> anyhow::Result<ExitCode> {
    let endpoint = Endpoint::parse("--flexci-uri", &args.flexci_uri)?;
    let event = match args.event {
        DispatchEvent::IssueComment => Event::IssueComment,
        DispatchEvent::Push => Event::Push,
    };
    let payload = vouch_dispatch::load_event(&args.webhook)?;
    let projects = vouch_dispatch::load_projects(&args.projects)?;
    let mut report = Report {
        event: event.as_str(),
        outcome: "none",
        tags: Vec::new(),
        projects: Vec::new(),
        skipped: Vec::new(),
        jobs: Vec::new(),
    };
    let Some(tags) = vouch_dispatch::tags_for(event, &payload, &args.external_tag)? else {
        output::note("no line of the comment is a `/test TAGS` request: nothing dispatched");
        return finish(&args, &report);
    };
    report.tags = tags.iter().cloned().collect();
    output::note(format!("requested tags: {}", report.tags.join(", ")));
    match projects.decide(&tags)? {
        Decision::Skip { force, skipped } => {
            report.outcome = if force { "force-skip" } else { "skip" };
            report.skipped = skipped;
            output::note(format!(
                "`/test {}`: no project is dispatched ({} skipped); commit statuses are not set by vouch",
                report.outcome,
                report.skipped.len()
            ));
        }
        Decision::Dispatch {
            projects: selected,
            skipped,
        } => {
            output::note(format!(
                "dispatching {} of {} projects: {}",
                selected.len(),
                selected.len() + skipped.len(),
                selected.join(", ")
            ));
            let secret = args.password_file.as_ref();
            let request = WebhookRequest::new(&endpoint, event, &payload, &selected, secret);
            output::note(format!("request URI: {}", request.url));
            (report.projects, report.skipped) = (selected, skipped);
            match &args.out {
                Some(out) if args.dry_run => {
                    write_request(out, &request)?;
                    report.outcome = "dry-run";
                }
                _ => {
                    let jobs = crate::common::runtime()?.block_on(request.send(&endpoint))?;
                    report.outcome = "dispatch";
                    report.jobs = jobs
                        .into_iter()
                        .map(|j| JobReport {
                            id: j.id,
                            url: j.url,
                        })
                        .collect();
                }
            }
        }
    }
    finish(&args, &report)
}

fn finish(args: &DispatchFlexciArgs, report: &Report) -> anyhow::Result<ExitCode> {
    if args.common.json() {
        output::json(report);
    } else {
        for job in &report.jobs {
            output::data(&job.url);
        }
    }
    Ok(ExitCode::SUCCESS)
}

/// The dry run's record: the body's exact bytes, and the request line and headers.
fn write_request(out: &Path, request: &WebhookRequest) -> anyhow::Result<()> {
    std::fs::create_dir_all(out).with_context(|| format!("creating {out:?}"))?;
    let body = out.join("body.json");
    crate::common::write_atomically(&body, &request.body)?;
    #[derive(Serialize)]
    struct Meta<'a> {
        method: &'static str,
        url: &'a str,
        /// `[name, value]` in the order they are sent.
        headers: Vec<[&'a str; 2]>,
    }
    let meta = Meta {
        method: "POST",
        url: &request.url,
        headers: request
            .headers
            .iter()
            .map(|(n, v)| [*n, v.as_str()])
            .collect(),
    };
    let meta_path = out.join("request.json");
    let mut text = serde_json::to_string_pretty(&meta)?;
    text.push('\n');
    crate::common::write_atomically(&meta_path, text.as_bytes())?;
    output::note(format!("dry run: nothing sent; the request is in {out:?}"));
    Ok(())
}

fn repository(args: DispatchRepositoryArgs) -> anyhow::Result<ExitCode> {
    let api = Endpoint::parse("--api-url", &args.api_url)?;
    let payload = vouch_dispatch::load_json(&args.payload_file)?;
    let dispatch = RepositoryDispatch::new(&args.repo, &args.event_type, payload)?;
    let token = &args.token_file.token;
    if token.expose_secret().contains(['\r', '\n']) {
        return Err(crate::common::usage(format!(
            "the token file {:?} holds more than one line",
            args.token_file.path
        )));
    }
    crate::common::runtime()?.block_on(dispatch.send(&api, token))?;
    output::note(format!(
        "created a {:?} repository_dispatch event in {}",
        args.event_type, args.repo
    ));
    Ok(ExitCode::SUCCESS)
}
