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
    /// The commit the body names as vouched for (`vouch.commit`); none for a push, whose
    /// `after` is its commit.
    vouched_commit: Option<String>,
    jobs: Vec<JobReport>,
    /// The commit statuses set (with --token-file), in order.
    statuses: Vec<String>,
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
        vouched_commit: None,
        jobs: Vec::new(),
        statuses: Vec::new(),
    };
    let Some(tags) = vouch_dispatch::tags_for(event, &payload, &args.external_tag)? else {
        output::note("no line of the comment is a `/test TAGS` request: nothing dispatched");
        return finish(&args, &report);
    };
    report.tags = tags.iter().cloned().collect();
    output::note(format!("requested tags: {}", report.tags.join(", ")));
    let mut force_skip = false;
    match projects.decide(&tags)? {
        Decision::Skip { force, skipped } => {
            report.outcome = if force { "force-skip" } else { "skip" };
            report.skipped = skipped;
            force_skip = force;
            output::note(format!(
                "`/test {}`: no project is dispatched ({} skipped)",
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
            let payload = match event {
                Event::IssueComment => {
                    let (stamped, vouched) = vouch_for(&args.webhook, &payload)?;
                    report.vouched_commit = vouched;
                    stamped
                }
                Event::Push => payload.clone(),
            };
            let secret = args.password_file.as_ref();
            if secret.is_none() && !args.dry_run {
                return Err(crate::common::usage(
                    "dispatching projects needs --password-file (only a dry run or a `/test skip` sends nothing)",
                ));
            }
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
    if report.outcome != "dry-run" {
        set_statuses(&args, &endpoint, &payload, &mut report, force_skip)?;
    }
    finish(&args, &report)
}

/// With --token-file: the commit statuses CuPy's dispatcher sets after a dispatch or a skip,
/// on --commit (never on the pull request's head as it is by then).
fn set_statuses(
    args: &DispatchFlexciArgs,
    endpoint: &Endpoint,
    payload: &vouch_dispatch::PyValue,
    report: &mut Report,
    force: bool,
) -> anyhow::Result<()> {
    let (Some(token), Some(repo), Some(commit)) = (&args.token_file, &args.repo, &args.commit)
    else {
        return Ok(());
    };
    let is_sha = commit.len() == 40 && commit.bytes().all(|b| b.is_ascii_hexdigit());
    if !is_sha || commit.bytes().any(|b| b.is_ascii_uppercase()) {
        return Err(crate::common::usage(format!(
            "--commit {commit:?}: expected 40 lower-case hex digits"
        )));
    }
    // A pull request's dispatch names its vouched commit; the statuses go on that one alone.
    if let Some(vouched) = &report.vouched_commit
        && vouched != commit
    {
        return Err(crate::common::usage(format!(
            "--commit {commit} is not the commit the request vouched for ({vouched})"
        )));
    }
    let pr = match payload.at(&["issue", "number"]) {
        Some(vouch_dispatch::PyValue::Int(n)) => u64::try_from(*n).ok(),
        _ => None,
    };
    let gh = vouch_github::GithubClient::new(&args.api_url, Some(token.token.clone()))?;
    let target = vouch_dispatch::statuses::Target {
        gh: &gh,
        repo,
        sha: commit,
        pr,
        prefix: &args.flexci_context,
        flexci_base: endpoint.as_str(),
    };
    let set = crate::common::runtime()?.block_on(vouch_dispatch::statuses::report(
        &target,
        &report.skipped,
        force,
    ))?;
    output::note(format!("set {} commit statuses on {commit}", set.len()));
    report.statuses = set;
    Ok(())
}

/// The request record `vouch pr-run pin --request-out DIR` writes next to the event it
/// dispatches: it names the commit the signer vouched for.
const REQUEST_FILE: &str = "request.json";

/// `payload` with the commit the request beside `webhook` vouched for (see
/// [`vouch_dispatch::vouched`]); unchanged, with a note, when there is no request beside it
/// (an event recorded some other way), since the farm then has nothing to check against.
fn vouch_for(
    webhook: &Path,
    payload: &vouch_dispatch::PyValue,
) -> anyhow::Result<(vouch_dispatch::PyValue, Option<String>)> {
    let path = webhook.with_file_name(REQUEST_FILE);
    let bytes = match std::fs::read(&path) {
        Ok(b) => b,
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            output::note(format!(
                "no {REQUEST_FILE} beside {webhook:?}: the webhook names no vouched commit, so the test farm cannot check its checkout against one"
            ));
            return Ok((payload.clone(), None));
        }
        Err(e) => return Err(e).with_context(|| format!("reading {path:?}")),
    };
    let request = vouch_prrun::TestRequest::parse(&bytes).map_err(|reason| {
        vouch_dispatch::DispatchError::Field {
            field: "vouched commit".into(),
            problem: format!("cannot be read from {path:?}: {reason}"),
        }
    })?;
    let vouched = vouch_dispatch::Vouched {
        repository: request.repository,
        pr: request.pr,
        commit: request.head_sha,
    };
    let stamped = vouched
        .stamp(payload)
        .with_context(|| format!("the event {webhook:?} and the request {path:?} disagree"))?;
    output::note(format!(
        "vouched commit: {} (pull request {})",
        vouched.commit, vouched.pr
    ));
    Ok((stamped, Some(vouched.commit)))
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
