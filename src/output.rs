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
    tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(std::io::stderr)
        .without_time()
        .with_target(false)
        .init();
}

/// Prints the error and its whole cause chain.
pub fn report_error(err: &anyhow::Error) {
    eprintln!("error: {err}");
    for cause in err.chain().skip(1) {
        eprintln!("  caused by: {cause}");
    }
}

pub fn json<T: Serialize>(value: &T) {
    data(serde_json::to_string_pretty(value).expect("our reports always serialize"));
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
