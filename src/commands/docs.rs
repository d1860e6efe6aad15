//! `vouch completions` and `vouch man`: both generated from the clap grammar itself, so they
//! cannot drift from the flags `vouch` accepts.

use std::process::ExitCode;

use anyhow::Context as _;
use clap::CommandFactory as _;

use crate::cli::{Cli, CompletionsArgs, ManArgs};
use crate::output;

pub fn completions(args: CompletionsArgs) -> anyhow::Result<ExitCode> {
    let mut script = Vec::new();
    clap_complete::generate(args.shell, &mut Cli::command(), "vouch", &mut script);
    output::data(String::from_utf8(script).context("the completion script is not UTF-8")?);
    Ok(ExitCode::SUCCESS)
}

pub fn man(args: ManArgs) -> anyhow::Result<ExitCode> {
    std::fs::create_dir_all(&args.out).with_context(|| format!("creating {:?}", args.out))?;
    // A page per command and subcommand (`vouch-verify.1`, `vouch-cache-serve.1`, ...).
    clap_mangen::generate_to(Cli::command(), &args.out)
        .with_context(|| format!("writing the man pages to {:?}", args.out))?;
    let mut pages: Vec<String> = std::fs::read_dir(&args.out)?
        .filter_map(|e| e.ok()?.file_name().into_string().ok())
        .filter(|n| n.ends_with(".1"))
        .collect();
    pages.sort();
    output::note(format!(
        "{} man pages in {}",
        pages.len(),
        args.out.display()
    ));
    for p in pages {
        output::data(args.out.join(p).display());
    }
    Ok(ExitCode::SUCCESS)
}
