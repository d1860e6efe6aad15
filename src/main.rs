//! The `vouch` command line. Thin: it parses arguments, calls the library crates, prints, and
//! maps error kinds to the exit codes documented in the README.

mod attest_cmd;
mod audit_cmd;
mod build_cmd;
mod cache_cmd;
mod cli;
mod demo;
mod exit;
mod fetch_cmd;
mod output;
mod plan_cmd;
mod token_files;
mod verify_cmd;
mod workflows_cmd;

use std::process::ExitCode;

use clap::Parser as _;

fn main() -> ExitCode {
    token_files::take_all(&std::env::args_os().collect::<Vec<_>>());
    let args = cli::Cli::parse();
    output::init_tracing(args.verbose, args.quiet);
    match cli::run(args) {
        Ok(code) => code,
        Err(err) => {
            output::report_error(&err);
            exit::code_for(&err)
        }
    }
}
