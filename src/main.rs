//! The `vouch` command line, kept thin: `cli` is the grammar (clap types only), `commands`
//! does one command each by calling the library crates, `common` holds what commands share,
//! `output` prints, and `exit` maps every error type to its documented exit status.

mod cli;
mod commands;
mod common;
mod exit;
mod output;
mod token_files;

use std::process::ExitCode;

use clap::Parser as _;

use cli::{Cli, Command};
use commands::{
    attest, audit, build, cache, demo, dispatch, docs, fetch, lock, plan, pr_run, sdist, toolchain,
    trust, verify, wheel, workflows,
};

fn main() -> ExitCode {
    let argv: Vec<_> = std::env::args_os().collect();
    token_files::take_all(&argv);
    let json = wants_json(&argv);
    let args = match Cli::try_parse() {
        Ok(args) => args,
        Err(e) => {
            // A usage error is a failure like any other: with --json it is reported as one.
            if json && e.use_stderr() {
                output::json_failure(
                    &anyhow::anyhow!(e.kind().to_string()).context(
                        e.render()
                            .to_string()
                            .lines()
                            .next()
                            .unwrap_or("usage error")
                            .to_owned(),
                    ),
                    exit::Status::Usage,
                );
            }
            e.exit()
        }
    };
    output::init_tracing(args.verbose, args.quiet);
    match run(args.command) {
        Ok(code) => code,
        Err(err) => {
            output::report_error(&err);
            let status = exit::classify(&err);
            if json {
                output::json_failure(&err, status);
            }
            status.into()
        }
    }
}

/// Whether the command line asks for JSON (`--json`, or `--format json` where `--format` is
/// the report's format, as `--json` beside it shows), read before clap so a usage error is
/// reported as JSON too. `plan --format json` and `cache env --format json` are data formats of
/// their own. Arguments after `--` are pip's.
fn wants_json(argv: &[std::ffi::OsString]) -> bool {
    let args: Vec<_> = argv
        .iter()
        .skip(1)
        .map(|a| a.to_string_lossy())
        .take_while(|a| a != "--")
        .collect();
    if args.iter().any(|a| a == "--json") {
        return true;
    }
    let format_json = args.iter().enumerate().any(|(i, a)| {
        a == "--format=json" || a == "--format" && args.get(i + 1).is_some_and(|v| v == "json")
    });
    if !format_json {
        return false;
    }
    let mut cmd = <Cli as clap::CommandFactory>::command();
    for word in args.iter().filter(|a| !a.starts_with('-')) {
        match cmd.find_subcommand(word.as_ref()) {
            Some(sub) => cmd = sub.clone(),
            None => break,
        }
    }
    cmd.get_arguments().any(|a| a.get_id() == "json")
}

fn run(command: Command) -> anyhow::Result<ExitCode> {
    match command {
        Command::Demo(args) => demo::run(args),
        Command::Build(args) => build::build(args),
        Command::Sdist(args) => sdist::sdist(args),
        Command::Toolchain(cmd) => toolchain::toolchain(cmd),
        Command::Workflows(cmd) => workflows::run(cmd),
        Command::Normalize(args) => wheel::normalize(args),
        Command::Diff(args) => wheel::diff(args),
        Command::Name(cmd) => wheel::name(cmd),
        Command::Verify(args) => verify::run(args),
        Command::Attest(args) => attest::run(args),
        Command::Keygen(args) => attest::keygen(args),
        Command::Cache(cmd) => cache::run(cmd),
        Command::Fetch(cmd) => fetch::fetch(cmd),
        Command::Install(cmd) => fetch::install(cmd),
        Command::Publish(cmd) => fetch::publish(cmd),
        Command::Dispatch(cmd) => dispatch::run(cmd),
        Command::PrRun(cmd) => pr_run::run(cmd),
        Command::Trust(cmd) => trust::run(cmd),
        Command::Audit(args) => audit::audit(args),
        Command::Rebuild(args) => audit::rebuild(args),
        Command::Lock(args) => lock::lock(args),
        Command::Plan(args) => plan::plan(args),
        Command::Inputs(args) => plan::inputs(args),
        Command::Completions(args) => docs::completions(args),
        Command::Man(args) => docs::man(args),
    }
}

#[cfg(test)]
mod tests {
    /// `--format json` asks for a JSON failure only where `--format` is the report's format.
    #[test]
    fn format_json_means_a_json_report_only_where_it_is_the_reports_format() {
        let wants = |line: &str| {
            let argv: Vec<std::ffi::OsString> = line.split(' ').map(Into::into).collect();
            crate::wants_json(&argv)
        };
        assert!(wants("vouch verify f --format json"));
        assert!(wants("vouch -v audit d --format=json"));
        assert!(wants("vouch cache check --format json"));
        assert!(wants("vouch build --json"));
        assert!(!wants("vouch verify f --format text"));
        assert!(!wants("vouch plan --format json"));
        assert!(!wants("vouch cache env --tool sccache --format json"));
        assert!(!wants("vouch install --python p -- --json"));
    }

    /// The import graph of `src/` has no edge between two command modules: what two commands
    /// share belongs in `common.rs` (or a library crate), so each command is one room.
    #[test]
    fn command_modules_never_import_each_other() {
        let dir = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("src/commands");
        let mut offenders = Vec::new();
        for entry in std::fs::read_dir(&dir).unwrap() {
            let path = entry.unwrap().path();
            let name = path.file_name().unwrap().to_string_lossy().into_owned();
            if name == "mod.rs" {
                continue;
            }
            let text = std::fs::read_to_string(&path).unwrap();
            for (n, line) in text.lines().enumerate() {
                if line.contains("crate::commands") || line.contains("super::") {
                    offenders.push(format!("{name}:{}: {}", n + 1, line.trim()));
                }
            }
        }
        assert!(offenders.is_empty(), "{}", offenders.join("\n"));
        // And the grammar stays grammar: no command logic in cli.rs.
        let cli = std::fs::read_to_string(dir.parent().unwrap().join("cli.rs")).unwrap();
        assert!(
            !cli.contains("crate::commands"),
            "cli.rs imports a command module"
        );
        assert!(!cli.contains("-> anyhow::Result"), "cli.rs runs something");
    }
}
