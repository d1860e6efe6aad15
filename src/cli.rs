use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::{Args, Parser, Subcommand};
use vouch_core::{ArtifactName, Platform, PythonVersion};

use crate::{demo, exit, output};

/// Reproducible Python wheel builds with signed provenance.
///
/// vouch builds wheels so that the same source gives the same bytes, and (in later commands)
/// signs what it built and verifies it before anything is installed. Start with `vouch demo`,
/// which builds the bundled sample package twice and compares the digests.
#[derive(Parser, Debug)]
#[command(
    name = "vouch",
    version,
    propagate_version = true,
    max_term_width = 100,
    after_long_help = crate::exit::long_help()
)]
pub struct Cli {
    #[command(subcommand)]
    pub command: Command,
    /// More log output on stderr (-v info, -vv debug, -vvv trace). `VOUCH_LOG` overrides.
    #[arg(short, long, global = true, action = clap::ArgAction::Count)]
    pub verbose: u8,
    /// Only errors on stderr.
    #[arg(short, long, global = true)]
    pub quiet: bool,
}

#[derive(Subcommand, Debug)]
pub enum Command {
    /// Build the bundled sample twice in two different directories and compare the digests.
    Demo(DemoArgs),
    /// Build one wheel of a PEP 517 project reproducibly, then normalize it.
    Build(BuildArgs),
    /// Generate or check the GitHub Actions workflows for a profile's matrix.
    #[command(subcommand)]
    Workflows(crate::workflows_cmd::WorkflowsCommand),
    /// Lay out a cell's CUDA toolkit in the cache directory (also done by `build --cell`).
    #[command(subcommand)]
    Toolchain(crate::build_cmd::ToolchainCommand),
    /// Repack wheels deterministically (sorted members, fixed times and modes, new RECORD).
    Normalize(NormalizeArgs),
    /// Compare two wheels member by member. Exits 0 when identical, 1 when they differ.
    Diff(DiffArgs),
    /// Sign an in-toto SLSA provenance statement for files into a Sigstore bundle.
    Attest(crate::attest_cmd::AttestArgs),
    /// Generate a local ECDSA P-256 signing key for `attest --signer key:PATH`.
    Keygen(crate::attest_cmd::KeygenArgs),
    /// Verify a file (or digest) against a Sigstore bundle, PEP 740 attestation or PyPI
    /// provenance: certificate, transparency log, signature, statement, digest and identity.
    Verify(crate::verify_cmd::VerifyArgs),
    /// Find the artifact built for a commit, pin its run, download, extract, verify; write the
    /// wheels only when everything passed.
    Fetch(crate::fetch_cmd::FetchCmd),
    /// `fetch`, then `pip install --no-deps --require-hashes` of exactly the verified wheels.
    Install(crate::fetch_cmd::InstallCmd),
    /// Put files into a local artifact store laid out like GitHub's artifact API.
    Publish(crate::fetch_cmd::PublishCmd),
    /// The scoped compiler cache: gateway, environment, counters, credential check.
    #[command(subcommand)]
    Cache(crate::cache_cmd::CacheCommand),
    /// Verify every distribution file under PATHs against the evidence next to it, offline.
    /// Exits 0 only when every file verified.
    Audit(crate::audit_cmd::AuditArgs),
    /// Rebuild a wheel from the source its provenance names and compare the bytes.
    Rebuild(crate::audit_cmd::RebuildArgs),
    /// Print the build matrix a profile defines.
    Plan(crate::plan_cmd::PlanArgs),
    /// Print a cell's build-inputs digest (what a build reads, hashed).
    Inputs(crate::plan_cmd::InputsArgs),
    /// Render or parse CI artifact names (`<dist>-py<X.Y>-<plat>[-pr<N>]-<sha>`).
    #[command(subcommand)]
    Name(NameCommand),
}

#[derive(Args, Debug)]
pub struct Common {
    /// Print a JSON report on stdout instead of plain lines.
    #[arg(long)]
    pub json: bool,
}

#[derive(Args, Debug)]
pub struct EpochArgs {
    /// Seconds since 1970 to stamp on every file. Defaults to the last git commit of the
    /// source (for `build`) or 1980-01-01 (for `normalize`).
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_name = "SECONDS")]
    pub source_date_epoch: Option<u64>,
}

/// The interpreter and cache directory, for every command that runs Python or lays out tools.
#[derive(Args, Debug)]
pub struct ToolEnvArgs {
    /// Python interpreter to build for [default: python3 on PATH].
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// Where vouch keeps its build venvs and toolkits, one root per trust level
    /// [default: $XDG_CACHE_HOME/vouch or ~/.cache/vouch].
    #[arg(long, env = "VOUCH_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// File holding a secret (32+ bytes) that authenticates the seal records of the venvs and
    /// toolkits this build reuses: give trusted builds one that untrusted builds never see, and
    /// a record an untrusted build forged is refused.
    #[arg(long, env = "VOUCH_SEAL_KEY_FILE", value_name = "FILE")]
    pub seal_key_file: Option<PathBuf>,
}

impl ToolEnvArgs {
    /// The seal key from `--seal-key-file`, when given.
    pub fn seal_key(&self) -> anyhow::Result<Option<std::sync::Arc<vouch_fs::seal::SealKey>>> {
        let Some(path) = &self.seal_key_file else {
            return Ok(None);
        };
        let bytes =
            std::fs::read(path).with_context(|| format!("reading --seal-key-file {path:?}"))?;
        let secret = bytes.trim_ascii_end();
        let key = vouch_fs::seal::SealKey::new(secret)
            .map_err(|e| crate::verify_cmd::UsageError(format!("--seal-key-file {path:?}: {e}")))?;
        Ok(Some(std::sync::Arc::new(key)))
    }
}

/// A trusted build without a seal key reuses records any same-user process could have
/// rewritten: say so where the build's log is read.
pub fn warn_unkeyed(trust: vouch_build::TrustLevel, key: bool) {
    if trust == vouch_build::TrustLevel::Trusted && !key {
        output::annotate_warning(
            "a trusted build without --seal-key-file: the venvs and toolkits it reuses are checked against records that code of an untrusted build on this machine could rewrite",
        );
    }
}

#[derive(Args, Debug)]
pub struct BuildEnvArgs {
    #[command(flatten)]
    pub tools: ToolEnvArgs,
    /// Fixed directory the source is copied to and built in [default: <cache-dir>/work];
    /// locked while a build runs. vouch empties it only if it made it (or it is empty), and
    /// never when it holds or lies inside the source or the output.
    #[arg(long, env = "VOUCH_WORK_DIR", value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CacheArgs {
    /// Compile through this compiler cache, via a scoped gateway started for the build.
    #[arg(long, value_name = "ccache|sccache", requires = "cache_store")]
    pub cache: Option<vouch_cache::Tool>,
    /// The cache's backing store: a directory or redis://[user@]host:port.
    #[arg(long, value_name = "DIR|URL")]
    pub cache_store: Option<String>,
    /// File holding the Redis password (never put it in the URL on a shared runner).
    #[arg(long, value_name = "FILE")]
    pub cache_password_file: Option<PathBuf>,
    #[command(flatten)]
    pub scope: crate::cache_cmd::ScopeArgs,
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The project: a directory (with pyproject.toml or setup.py) or an sdist (.tar.gz).
    #[arg(long, value_name = "DIR|SDIST")]
    pub source: PathBuf,
    /// Where to write the normalized wheel (and, with --cell, its build record).
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    /// Build one cell of a profile's matrix: its toolchain, template, environment.
    #[arg(long, value_name = "CELL")]
    pub cell: Option<String>,
    /// The project profile (with --cell) [default: vouch.toml].
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// Skip the build when DIR holds a wheel with this cell's build-inputs digest (from an
    /// earlier build record); copy it instead.
    #[arg(long, value_name = "DIR", requires = "cell")]
    pub reuse_from: Option<PathBuf>,
    /// The commit being built, for the artifact name [default: GITHUB_SHA, else the source's
    /// git HEAD].
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
    /// Override one of the cell's variables (recorded, and part of the inputs digest), e.g.
    /// `--set CUPY_NVCC_GENERATE_CODE=arch=compute_75,code=sm_75`.
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "cell", value_parser = crate::plan_cmd::parse_set)]
    pub set: Vec<(String, String)>,
    #[command(flatten)]
    pub epoch: EpochArgs,
    #[command(flatten)]
    pub env: BuildEnvArgs,
    #[command(flatten)]
    pub cache: CacheArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct NormalizeArgs {
    /// Wheels to normalize.
    #[arg(required = true, value_name = "WHEEL")]
    pub wheels: Vec<PathBuf>,
    /// Output directory; each wheel keeps its file name. May be the input's own directory.
    #[arg(long, value_name = "DIR")]
    pub out: PathBuf,
    #[command(flatten)]
    pub epoch: EpochArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    pub a: PathBuf,
    pub b: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// Where to leave the two wheels [default: a temporary directory, removed afterwards].
    #[arg(long, value_name = "DIR")]
    pub out: Option<PathBuf>,
    #[command(flatten)]
    pub env: BuildEnvArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Subcommand, Debug)]
pub enum NameCommand {
    /// Print the artifact name for a build.
    Render {
        /// Normalized distribution name, e.g. cupy-cuda13x.
        #[arg(long)]
        dist: String,
        /// Python version, e.g. 3.12 or 3.14t.
        #[arg(long)]
        python: String,
        /// linux-64, linux-aarch64 or win-64.
        #[arg(long)]
        platform: String,
        /// Pull request number, for PR builds.
        #[arg(long)]
        pr: Option<u64>,
        /// Full 40-hex commit SHA.
        #[arg(long)]
        sha: String,
    },
    /// Check an artifact name and print its parts.
    Parse {
        name: String,
        #[command(flatten)]
        common: Common,
    },
}

/// The cache directory, absolute: a relative `--cache-dir`/`VOUCH_CACHE_DIR` is taken
/// against the current directory once, here, so every path derived from it (the work
/// directory, toolkit paths in prefix maps) means the same place.
pub fn default_cache_dir(explicit: Option<PathBuf>) -> PathBuf {
    let dir = explicit
        .or_else(|| std::env::var_os("XDG_CACHE_HOME").map(|d| PathBuf::from(d).join("vouch")))
        .or_else(|| std::env::var_os("HOME").map(|h| PathBuf::from(h).join(".cache").join("vouch")))
        .unwrap_or_else(|| std::env::temp_dir().join("vouch-cache"));
    std::path::absolute(&dir).unwrap_or(dir)
}

/// The trust a build runs with, which picks the cache root its venv and toolkit come from.
/// In GitHub Actions only the event GitHub reports counts (a flag cannot raise it); elsewhere
/// `--event push` does. Everything else (pull requests, local builds, rebuilds) is untrusted.
pub fn trust_level(event: Option<&str>) -> vouch_build::TrustLevel {
    let in_actions = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
    let event = if in_actions {
        std::env::var("GITHUB_EVENT_NAME").ok()
    } else {
        event.map(str::to_owned)
    };
    if event.as_deref() == Some("push") {
        vouch_build::TrustLevel::Trusted
    } else {
        vouch_build::TrustLevel::Untrusted
    }
}

pub fn run(cli: Cli) -> anyhow::Result<ExitCode> {
    match cli.command {
        Command::Demo(args) => demo::run(args),
        Command::Build(args) => crate::build_cmd::build(args),
        Command::Toolchain(cmd) => crate::build_cmd::toolchain(cmd),
        Command::Workflows(cmd) => crate::workflows_cmd::run(cmd),
        Command::Normalize(args) => normalize(args),
        Command::Diff(args) => diff(args),
        Command::Name(cmd) => name(cmd),
        Command::Verify(args) => crate::verify_cmd::run(args),
        Command::Attest(args) => crate::attest_cmd::run(args),
        Command::Cache(cmd) => crate::cache_cmd::run(cmd),
        Command::Fetch(cmd) => crate::fetch_cmd::fetch(cmd),
        Command::Audit(args) => crate::audit_cmd::audit(args),
        Command::Plan(args) => crate::plan_cmd::plan(args),
        Command::Inputs(args) => crate::plan_cmd::inputs(args),
        Command::Rebuild(args) => crate::audit_cmd::rebuild(args),
        Command::Install(cmd) => crate::fetch_cmd::install(cmd),
        Command::Publish(cmd) => crate::fetch_cmd::publish(cmd),
        Command::Keygen(args) => crate::attest_cmd::keygen(args),
    }
}

pub fn build_options(
    source: &Path,
    out: &Path,
    epoch: Option<u64>,
    env: &BuildEnvArgs,
) -> anyhow::Result<vouch_build::BuildOptions> {
    Ok(vouch_build::BuildOptions {
        source: source.to_owned(),
        out_dir: out.to_owned(),
        source_date_epoch: epoch,
        python: env.tools.python.clone(),
        cache_dir: default_cache_dir(env.tools.cache_dir.clone()),
        env: Vec::new(),
        launcher: None,
        work_dir: env
            .work_dir
            .clone()
            .map(|w| std::path::absolute(&w).unwrap_or(w)),
        path_prepend: Vec::new(),
        prefix_maps: Vec::new(),
        patch: None,
        repair: None,
        trust: trust_level(None),
        seal_key: env.tools.seal_key()?,
    })
}

/// A store spec without any password.
pub fn store_display(spec: &str) -> String {
    match spec.split_once("://").and_then(|(scheme, rest)| {
        rest.rsplit_once('@')
            .map(|(_, host)| format!("{scheme}://{host}"))
    }) {
        Some(s) => s,
        None => spec.to_owned(),
    }
}

fn normalize(args: NormalizeArgs) -> anyhow::Result<ExitCode> {
    let options = vouch_wheel::NormalizeOptions {
        epoch: args
            .epoch
            .source_date_epoch
            .unwrap_or(vouch_wheel::DEFAULT_EPOCH),
    };
    let mut reports = Vec::new();
    for wheel in &args.wheels {
        let report = vouch_wheel::normalize_wheel(wheel, &args.out, options)
            .with_context(|| format!("normalizing {wheel:?}"))?;
        if !args.common.json {
            output::data(format!("{}  {}", report.sha256, report.output.display()));
        }
        reports.push(report);
    }
    if args.common.json {
        output::json(&reports);
    }
    Ok(ExitCode::SUCCESS)
}

fn diff(args: DiffArgs) -> anyhow::Result<ExitCode> {
    let d = vouch_wheel::diff_wheels(&args.a, &args.b)?;
    if args.common.json {
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

fn name(cmd: NameCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        NameCommand::Render {
            dist,
            python,
            platform,
            pr,
            sha,
        } => {
            let python: PythonVersion = python.parse()?;
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
            if common.json {
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
