//! `vouch trust update` and `vouch trust status`: Sigstore's trust root, refreshed through TUF.

use std::process::ExitCode;

use vouch_verify::TrustRootSource;
use vouch_verify::tuf::TufError;

use crate::cli::{TrustArgs, TrustCommand};
use crate::common::{default_cache_dir, error_chain, runtime, tuf_repo};
use crate::output;

pub fn run(cmd: TrustCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        TrustCommand::Update(args) => update(&args),
        TrustCommand::Status(args) => status(&args),
    }
}

fn update(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let repo = tuf_repo(
        &args.tuf,
        &default_cache_dir(args.cache_dir.clone()),
        args.staging,
    )?;
    let report = runtime()?.block_on(repo.update(jiff::Timestamp::now()))?;
    if args.common.json() {
        output::json(&report);
    } else {
        output::data(format!(
            "trust root refreshed from {}: TUF root version {}, timestamp version {}, refreshed at {}",
            report.url, report.root_version, report.timestamp_version, report.refreshed_at
        ));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(serde::Serialize)]
struct Status {
    /// `tuf-cache` or `embedded`.
    source: &'static str,
    describe: String,
    url: String,
    cache: std::path::PathBuf,
    root_version: Option<u64>,
    refreshed_at: Option<String>,
    stale: bool,
    /// Why the cache is not used, when it exists but does not verify.
    problem: Option<String>,
}

fn status(args: &TrustArgs) -> anyhow::Result<ExitCode> {
    let repo = tuf_repo(
        &args.tuf,
        &default_cache_dir(args.cache_dir.clone()),
        args.staging,
    )?;
    let mut st = Status {
        source: "embedded",
        describe: TrustRootSource::choose(None, args.staging).describe(),
        url: repo.url.clone(),
        cache: repo.dir.clone(),
        root_version: None,
        refreshed_at: None,
        stale: false,
        problem: None,
    };
    match repo.load_cached() {
        Ok(c) => {
            st.source = "tuf-cache";
            st.describe = c.describe();
            st.root_version = Some(c.root_version);
            st.refreshed_at = Some(c.refreshed_at.to_string());
            st.stale = c.stale_at(jiff::Timestamp::now());
        }
        Err(TufError::NoCache { .. }) => {}
        Err(e) => st.problem = Some(error_chain(&e)),
    }
    if args.common.json() {
        output::json(&st);
    } else {
        output::data(format!("verify uses: {}", st.describe));
        if let Some(p) = &st.problem {
            output::data(format!("the refreshed root is not used: {p}"));
        }
        if st.stale {
            output::data("the refreshed root is over 30 days old: run `vouch trust update`");
        }
    }
    Ok(ExitCode::SUCCESS)
}
