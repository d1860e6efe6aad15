//! Everything the CLI writes. stdout carries data (`--json`, digests); stderr is for people.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use std::sync::atomic::{AtomicBool, Ordering};

use serde::Serialize;

static QUIET: AtomicBool = AtomicBool::new(false);

pub fn init_tracing(verbose: u8, quiet: bool) {
    let default = match (quiet, verbose) {
        (true, _) => "error",
        (false, 0) => "warn",
        (false, 1) => "info",
        (false, 2) => "debug",
        _ => "trace",
    };
    QUIET.store(quiet, Ordering::Relaxed);
    let filter = tracing_subscriber::EnvFilter::try_from_env("VOUCH_LOG")
        .unwrap_or_else(|_| tracing_subscriber::EnvFilter::new(default));
    // Colour only for a person at a terminal: escape codes in a CI log or a file are noise,
    // and NO_COLOR (no-color.org) turns them off anywhere.
    let colour = std::io::IsTerminal::is_terminal(&std::io::stderr())
        && std::env::var_os("NO_COLOR").is_none_or(|v| v.is_empty());
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(colour)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
}

/// Prints the error and its whole cause chain; in GitHub Actions also as one `::error::`
/// annotation, so the failure shows on the run's summary page.
pub fn report_error(err: &anyhow::Error) {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
    if in_actions() {
        let chain: Vec<String> = err.chain().map(|c| c.to_string()).collect();
        eprintln!(
            "::error title=vouch::{}",
            escape_annotation(&chain.join(": "))
        );
    }
}

/// In GitHub Actions, asks the runner to mask `secret` in every later log line (on stderr:
/// the runner reads workflow commands there too, and stdout may be `--json` data).
pub fn mask(secret: &str) {
    if in_actions() && !secret.contains(['\n', '\r']) {
        eprintln!("::add-mask::{secret}");
    }
}

fn in_actions() -> bool {
    vouch_core::ci::in_github_actions()
}

/// Workflow-command escaping (`%`, CR, LF), so a message cannot end the annotation early or
/// smuggle in another workflow command.
fn escape_annotation(s: &str) -> String {
    s.replace('%', "%25")
        .replace('\r', "%0D")
        .replace('\n', "%0A")
}

/// An error line for people; in GitHub Actions an `::error::` annotation instead.
pub fn annotate_error(message: &str) {
    if in_actions() {
        eprintln!("::error title=vouch::{}", escape_annotation(message));
    } else {
        eprintln!("error: {message}");
    }
}

/// A warning line; in GitHub Actions a `::warning::` annotation.
pub fn annotate_warning(message: &str) {
    if in_actions() {
        eprintln!("::warning title=vouch::{}", escape_annotation(message));
    } else if !QUIET.load(Ordering::Relaxed) {
        eprintln!("warning: {message}");
    }
}

/// Appends Markdown to `$GITHUB_STEP_SUMMARY` when Actions provides one; a no-op elsewhere.
pub fn step_summary(markdown: &str) {
    let Some(path) = std::env::var_os("GITHUB_STEP_SUMMARY").filter(|p| !p.is_empty()) else {
        return;
    };
    let written = std::fs::OpenOptions::new()
        .append(true)
        .create(true)
        .open(&path)
        .and_then(|mut f| std::io::Write::write_all(&mut f, markdown.as_bytes()));
    if let Err(e) = written {
        tracing::warn!(error = %e, "cannot append to GITHUB_STEP_SUMMARY");
    }
}

pub fn json<T: Serialize>(value: &T) {
    JSON_PRINTED.store(true, Ordering::Relaxed);
    data(serde_json::to_string_pretty(value).expect("our reports always serialize"));
}

/// Whether the command printed its JSON report (its own failure report included).
static JSON_PRINTED: AtomicBool = AtomicBool::new(false);

/// With `--json`, a failure the command did not report itself still gets one JSON object on
/// stdout, so a script reading it never parses an empty stream: `ok: false`, the exit status
/// by code and name, the message and its causes (the same text stderr shows).
pub fn json_failure(err: &anyhow::Error, status: crate::exit::Status) {
    if JSON_PRINTED.load(Ordering::Relaxed) {
        return;
    }
    json(&serde_json::json!({
        "ok": false,
        "exit_code": status.code(),
        "status": status.name(),
        "message": err.to_string(),
        "causes": err.chain().skip(1).map(|c| c.to_string()).collect::<Vec<_>>(),
    }));
}

/// A line of data on stdout. When the reader has gone (`vouch plan | head`), exit quietly as
/// Unix tools do instead of panicking.
pub fn data(line: impl std::fmt::Display) {
    use std::io::Write as _;
    let mut out = std::io::stdout().lock();
    if let Err(e) = writeln!(out, "{line}")
        && e.kind() == std::io::ErrorKind::BrokenPipe
    {
        std::process::exit(0);
    }
}

/// A line for people on stderr; silenced by `--quiet`.
pub fn note(line: impl std::fmt::Display) {
    if !QUIET.load(Ordering::Relaxed) {
        eprintln!("{line}");
    }
}

/// A spinner with elapsed time on stderr for a long step (a build, a toolkit download), drawn
/// only when stderr is a terminal and not `--quiet`; cleared when dropped.
pub struct Spinner(Option<indicatif::ProgressBar>);

pub fn spinner(message: impl Into<String>) -> Spinner {
    use std::io::IsTerminal as _;
    if QUIET.load(Ordering::Relaxed) || !std::io::stderr().is_terminal() {
        return Spinner(None);
    }
    let bar = indicatif::ProgressBar::new_spinner();
    if let Ok(style) = indicatif::ProgressStyle::with_template("{spinner} {msg} [{elapsed}]") {
        bar.set_style(style);
    }
    bar.set_message(message.into());
    bar.enable_steady_tick(std::time::Duration::from_millis(120));
    Spinner(Some(bar))
}

impl Spinner {
    /// A callback that turns the spinner into a byte progress bar once a download reports its
    /// size; `None` when nothing is drawn.
    pub fn bytes_progress(&self) -> Option<vouch_core::progress::ProgressFn> {
        let bar = self.0.clone()?;
        let styled = AtomicBool::new(false);
        Some(std::sync::Arc::new(move |done, total| {
            if let Some(total) = total
                && !styled.swap(true, Ordering::Relaxed)
            {
                bar.set_length(total);
                if let Ok(style) = indicatif::ProgressStyle::with_template(
                    "{msg} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} eta {eta}",
                ) {
                    bar.set_style(style.progress_chars("=> "));
                }
            }
            bar.set_position(done);
        }))
    }
}

impl Drop for Spinner {
    fn drop(&mut self) {
        if let Some(bar) = self.0.take() {
            bar.finish_and_clear();
        }
    }
}

impl vouch_core::progress::Step for Spinner {
    fn bytes_progress(&self) -> Option<vouch_core::progress::ProgressFn> {
        Spinner::bytes_progress(self)
    }
}

/// How the libraries' progress reaches the terminal (and Actions' annotations and masks).
pub struct Terminal;

impl vouch_core::progress::Reporter for Terminal {
    fn note(&self, message: &str) {
        note(message);
    }
    fn warning(&self, message: &str) {
        annotate_warning(message);
    }
    fn secret(&self, value: &str) {
        mask(value);
    }
    fn step(&self, label: &str) -> Box<dyn vouch_core::progress::Step> {
        Box::new(spinner(label))
    }
}
