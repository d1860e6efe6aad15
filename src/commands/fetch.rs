//! `vouch fetch`, `vouch install`, `vouch publish`.

use std::path::{Path, PathBuf};
use std::process::ExitCode;

use clap::Args;
use secrecy::SecretString;
use vouch_core::{ArtifactName, Platform, PythonVersion};
use vouch_fetch::{
    ArtifactSource, Expectation, FetchError, FetchReport, RejectKind, RunInfo, Trust, VerifyConfig,
};
use vouch_verify::TrustRootSource;

use crate::exit::{Status, verify_status};
use crate::output;

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// `OWNER/NAME` whose workflow must have built the artifact.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// The producing workflow file.
    #[arg(long, default_value = ".github/workflows/ci.yml", value_name = "PATH")]
    pub workflow: String,
    /// The producing run's event: `push`, `pull_request`, `workflow_dispatch` or `schedule`.
    #[arg(long)]
    pub event: Option<String>,
    /// The commit under test, 40 hex (for PR builds, the PR head).
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
    /// The pull request (with `--event pull_request`).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// The matrix cell the statement must claim.
    #[arg(long)]
    pub cell: Option<String>,
    /// Artifact name; or give --dist, --python-version and --platform to render it.
    #[arg(long, value_name = "NAME", conflicts_with_all = ["dist", "python_version", "platform"])]
    pub artifact_name: Option<String>,
    #[arg(long)]
    pub dist: Option<String>,
    #[arg(long, value_name = "X.Y")]
    pub python_version: Option<String>,
    #[arg(long)]
    pub platform: Option<String>,
    /// Take event, PR and commit from FlexCI (`FLEXCI_BRANCH`, `FLEXCI_REFERENCE_COMMIT_ID`,
    /// `FLEXCI_COMMIT_ID`, else the checkout's HEAD, its second parent for a merge).
    #[arg(long)]
    pub from_flexci: bool,
    /// GitHub API base URL (GitHub Enterprise, tests) [default: https://api.github.com].
    #[arg(long, value_name = "URL", conflicts_with = "store")]
    pub api_url: Option<String>,
    /// Read artifacts from a local store instead of GitHub.
    #[arg(long, value_name = "DIR")]
    pub store: Option<PathBuf>,
    /// File holding the GitHub token. It is read, then deleted (unless --keep-token-file), as
    /// soon as the command line is parsed: whatever fails later, and with --store, which needs
    /// no token, it does not stay behind.
    #[arg(long, env = "GH_TOKEN_FILE", value_name = "FILE", value_parser = take_token_file)]
    pub token_file: Option<TokenFile>,
    /// Leave the --token-file in place.
    #[arg(long, requires = "token_file")]
    pub keep_token_file: bool,
    /// Custom trusted_root.json.
    #[arg(long, value_name = "FILE", conflicts_with = "staging")]
    pub trust_root: Option<PathBuf>,
    #[arg(long)]
    pub staging: bool,
    /// Verify key-signed bundles with this PEM public key (checked before any API call).
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// Runner environment the build must have used (`any` to accept all).
    #[arg(long, default_value = "github-hosted")]
    pub runner: String,
    #[arg(long)]
    pub json: bool,
}

pub const DEFAULT_API_URL: &str = "https://api.github.com";

/// The events vouch builds under (see `vouch plan --event`), so the only ones a fetch can find.
const FETCH_EVENTS: &[&str] = &["push", "pull_request", "workflow_dispatch", "schedule"];
/// A `--token-file`'s token, read while the command line is parsed.
#[derive(Clone, Debug)]
pub struct TokenFile {
    pub path: PathBuf,
    pub token: SecretString,
}

/// The `--token-file` value parser. The file itself was read and removed before clap ran
/// (`token_files::take_all`), so even a usage error or `--help` leaves no token behind.
fn take_token_file(value: &str) -> Result<TokenFile, String> {
    let path = PathBuf::from(value);
    let read = crate::token_files::contents(&path);
    let token = read?.trim().to_owned();
    if token.is_empty() {
        return Err(format!("the token file {path:?} is empty"));
    }
    Ok(TokenFile {
        path,
        token: SecretString::from(token),
    })
}

#[derive(Args, Debug)]
pub struct FetchCmd {
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// Where the verified wheels (and their bundles) go.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct InstallCmd {
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// The Python whose pip installs the wheels.
    #[arg(long, default_value = "python3", value_name = "PYTHON")]
    pub python: PathBuf,
    /// Keep the verified wheels here instead of a temporary directory.
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    /// Arguments after `--` go to `pip install`.
    #[arg(last = true)]
    pub pip_args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct PublishCmd {
    /// Files to put in the artifact (wheels and their bundles).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    #[arg(long, value_name = "DIR")]
    pub store: PathBuf,
    #[arg(long, value_name = "NAME")]
    pub name: String,
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: String,
    #[arg(long, default_value = ".github/workflows/ci.yml")]
    pub workflow: String,
    #[arg(long, default_value_t = 1)]
    pub workflow_id: u64,
    #[arg(long)]
    pub run_id: u64,
    #[arg(long, default_value = "push")]
    pub event: String,
    #[arg(long)]
    pub sha: String,
    #[arg(long)]
    pub pr: Option<u64>,
}

impl FetchArgs {
    fn expectation(&self) -> anyhow::Result<Expectation> {
        let usage = |m: String| crate::common::UsageError(m);
        let (mut event, mut pr, mut sha) = (self.event.clone(), self.pr, self.sha.clone());
        let mut sha_from = "--sha";
        if self.from_flexci {
            let Some(job) = vouch_fetch::flexci::FlexciJob::detect() else {
                anyhow::bail!(usage(format!(
                    "--from-flexci: none of {} is set; is this a FlexCI job? (elsewhere give --event, --sha and --pr)",
                    vouch_fetch::flexci::VARS.join(", ")
                )));
            };
            pr = pr.or(job.pr);
            event = event.or(Some(job.event().into()));
            if sha.is_none() {
                (sha, sha_from) = job.commit();
            }
        }
        let repo = self
            .repo
            .clone()
            .ok_or_else(|| usage("--repo OWNER/NAME is required".into()))?;
        let event = event.ok_or_else(|| usage("--event is required (or --from-flexci)".into()))?;
        if !FETCH_EVENTS.contains(&event.as_str()) {
            anyhow::bail!(usage(format!(
                "--event {event:?}: expected one of {} (the events vouch builds under)",
                FETCH_EVENTS.join(", ")
            )));
        }
        let sha = sha.ok_or_else(|| {
            usage(if self.from_flexci {
                "--from-flexci: neither FLEXCI_REFERENCE_COMMIT_ID nor FLEXCI_COMMIT_ID is set, and the current directory is not a git checkout; give --sha".into()
            } else {
                "--sha is required (or --from-flexci)".into()
            })
        })?;
        if !vouch_verify::is_commit_sha(&sha) {
            anyhow::bail!(usage(format!(
                "{sha_from} {sha:?} is not a full commit SHA (40 lowercase hex digits)"
            )));
        }
        match (event.as_str(), pr) {
            ("pull_request", None) => {
                anyhow::bail!(usage("a pull_request build needs --pr".into()))
            }
            ("pull_request", Some(_)) | (_, None) => {}
            (other, Some(n)) => anyhow::bail!(usage(format!(
                "--pr {n} names a pull request, but --event is {other:?}; PR builds run under pull_request"
            ))),
        }
        let artifact_name = match &self.artifact_name {
            Some(n) => n.clone(),
            None => {
                let (Some(d), Some(py), Some(pl)) =
                    (&self.dist, &self.python_version, &self.platform)
                else {
                    anyhow::bail!(usage(
                        "give --artifact-name, or --dist, --python-version and --platform".into()
                    ));
                };
                let py: PythonVersion = py.parse()?;
                let pl: Platform = pl.parse()?;
                ArtifactName::new(
                    d.clone(),
                    py,
                    pl,
                    if event == "pull_request" { pr } else { None },
                    sha.clone(),
                )?
                .to_string()
            }
        };
        Ok(Expectation {
            repo,
            workflow: self.workflow.clone(),
            event,
            sha,
            pr,
            artifact_name,
            cell: self.cell.clone(),
        })
    }

    fn token(&self) -> Option<SecretString> {
        if let Some(f) = &self.token_file {
            return Some(f.token.clone());
        }
        for var in ["GH_TOKEN", "GITHUB_TOKEN"] {
            if let Ok(t) = std::env::var(var)
                && !t.is_empty()
            {
                output::note(format!(
                    "warning: using the token from ${var}; prefer --token-file (environment variables leak into child processes)"
                ));
                return Some(SecretString::from(t));
            }
        }
        None
    }

    fn source(&self, spinner: &output::Spinner) -> anyhow::Result<Box<dyn ArtifactSource>> {
        Ok(match &self.store {
            Some(dir) => Box::new(vouch_fetch::LocalStore { root: dir.clone() }),
            None => {
                let api = self.api_url.as_deref().unwrap_or(DEFAULT_API_URL);
                let mut client = vouch_github::GithubClient::new(api, self.token())?;
                if let Some(f) = spinner.bytes_progress() {
                    client = client.with_progress(f);
                }
                Box::new(client)
            }
        })
    }

    fn verify_config(&self) -> anyhow::Result<VerifyConfig> {
        let trust = match &self.key {
            // A wrong file must fail here, not after the API calls and the download.
            Some(k) => Trust::Key(crate::commands::verify::read_public_key(k)?),
            None => Trust::Keyless,
        };
        let root = match (&self.trust_root, self.staging) {
            (Some(r), _) => TrustRootSource::File(r.clone()),
            (None, true) => TrustRootSource::Staging,
            (None, false) => TrustRootSource::Production,
        };
        Ok(VerifyConfig {
            trust,
            root,
            runner: (self.runner != "any").then(|| self.runner.clone()),
        })
    }
}

/// Carries the exit status a fetch failure maps to.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FetchFailed {
    pub status: Status,
    pub message: String,
}

pub(crate) fn failure_status(e: &FetchError) -> Status {
    match e {
        // The candidate that got furthest decides: a decoy artifact that fails pinning must not
        // hide the real one's verification failure.
        FetchError::NoCandidate { rejected, .. } => match rejected.iter().max_by_key(|r| r.kind) {
            Some(r) => match (r.kind, r.verify_kind) {
                (RejectKind::Verify, Some(k)) => verify_status(k),
                (RejectKind::Verify, None) => Status::Bundle,
                (RejectKind::Pin, _) => Status::NoRun,
                (RejectKind::Download, _) => Status::Download,
                (RejectKind::Archive, _) => Status::UnsafeArchive,
            },
            None => Status::NoRun,
        },
        FetchError::Github(_) | FetchError::Store { .. } | FetchError::Source { .. } => {
            Status::Download
        }
        FetchError::Trust(e) => verify_status(e.kind),
        FetchError::Io { .. } => Status::Io,
    }
}

fn do_fetch(args: &FetchArgs, out: &Path) -> anyhow::Result<FetchReport> {
    let exp = args.expectation()?;
    let cfg = args.verify_config()?;
    output::note(format!(
        "looking for {} from {} ({} of {})",
        exp.artifact_name, exp.workflow, exp.event, exp.repo
    ));
    let spinner = output::spinner(format!("fetching {}", exp.artifact_name));
    let source = args.source(&spinner)?;
    let rt = crate::common::runtime()?;
    let fetched = rt.block_on(vouch_fetch::fetch(source.as_ref(), &exp, &cfg, out));
    drop(spinner);
    match fetched {
        Ok(r) => Ok(r),
        Err(e) => {
            let status = failure_status(&e);
            let mut message = e.to_string();
            let mut cur = std::error::Error::source(&e);
            while let Some(c) = cur {
                message.push_str(": ");
                message.push_str(&c.to_string());
                cur = c.source();
            }
            if let FetchError::Github(vouch_github::GithubError::Status { status: 401, .. }) = &e {
                message.push_str(&if let Some(f) = &args.token_file {
                    format!(
                        " (the token from --token-file {:?} was refused: is it expired, or for another host?)",
                        f.path
                    )
                } else if ["GH_TOKEN", "GITHUB_TOKEN"]
                    .iter()
                    .any(|v| std::env::var(v).is_ok_and(|t| !t.is_empty()))
                {
                    " (the token from GH_TOKEN/GITHUB_TOKEN was refused; give a valid one with --token-file FILE)".to_owned()
                } else {
                    " (no token was given: pass one with --token-file FILE, or set GH_TOKEN)".to_owned()
                });
            }
            if args.json {
                output::json(
                    &serde_json::json!({ "fetched": false, "exit_code": status.code(), "message": message }),
                );
            }
            Err(FetchFailed { status, message }.into())
        }
    }
}

fn print_report(r: &FetchReport) {
    for rej in &r.rejected {
        output::note(format!(
            "rejected artifact {} (run {}): {}",
            rej.artifact_id,
            rej.run_id.map_or("?".into(), |x| x.to_string()),
            rej.reason
        ));
    }
    for w in &r.wheels {
        output::data(format!("{}  {}", w.sha256, w.path.display()));
    }
    output::note(format!(
        "verified artifact {} from run {} ({} API calls)",
        r.artifact_id, r.run_id, r.api_calls
    ));
    let mut md = format!(
        "### vouch fetch: artifact {} from run {} verified\n\n| wheel | sha256 |\n|---|---|\n",
        r.artifact_id, r.run_id
    );
    for w in &r.wheels {
        md.push_str(&format!(
            "| `{}` | `{}` |\n",
            w.path.file_name().unwrap_or_default().to_string_lossy(),
            w.sha256
        ));
    }
    output::step_summary(&md);
}

pub fn fetch(cmd: FetchCmd) -> anyhow::Result<ExitCode> {
    let report = do_fetch(&cmd.fetch, &cmd.out)?;
    if cmd.fetch.json {
        output::json(&report);
    } else {
        print_report(&report);
    }
    Ok(ExitCode::SUCCESS)
}

pub fn install(cmd: InstallCmd) -> anyhow::Result<ExitCode> {
    let scratch = tempfile::Builder::new()
        .prefix("vouch-install-")
        .tempdir()?;
    let out = cmd
        .out
        .clone()
        .unwrap_or_else(|| scratch.path().join("wheels"));
    let report = do_fetch(&cmd.fetch, &out)?;
    vouch_fetch::pip_install_verified(&cmd.python, &report, scratch.path(), &cmd.pip_args)?;
    if cmd.fetch.json {
        output::json(&serde_json::json!({ "installed": true, "fetch": report }));
    } else {
        print_report(&report);
        output::data(format!(
            "installed {} verified wheel(s)",
            report.wheels.len()
        ));
    }
    Ok(ExitCode::SUCCESS)
}

pub fn publish(cmd: PublishCmd) -> anyhow::Result<ExitCode> {
    let run = RunInfo {
        repo: cmd.repo,
        run_id: cmd.run_id,
        workflow_id: cmd.workflow_id,
        workflow_path: cmd.workflow,
        event: cmd.event,
        head_sha: cmd.sha,
        pr: cmd.pr,
    };
    let id = vouch_fetch::publish(&cmd.store, &cmd.name, &run, &cmd.files)?;
    output::data(format!(
        "published artifact {id} {:?} to {}",
        cmd.name,
        cmd.store.display()
    ));
    Ok(ExitCode::SUCCESS)
}
