//! The command line's grammar: every clap type, and nothing else. What a command does lives
//! in `commands/`, helpers they share in `common.rs`, exit statuses in `exit.rs`.

use std::path::PathBuf;

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand, ValueEnum};
use vouch_cache::{GatewayUrl, Tool};

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
    Workflows(WorkflowsCommand),
    /// Lay out a cell's CUDA toolkit in the cache directory (also done by `build --cell`).
    #[command(subcommand)]
    Toolchain(ToolchainCommand),
    /// Repack wheels deterministically (sorted members, fixed times and modes, new RECORD).
    Normalize(NormalizeArgs),
    /// Compare two wheels member by member. Exits 0 when identical, 1 when they differ.
    Diff(DiffArgs),
    /// Sign an in-toto SLSA provenance statement for files into a Sigstore bundle.
    Attest(crate::commands::attest::AttestArgs),
    /// Generate a local ECDSA P-256 signing key for `attest --signer key:PATH`.
    Keygen(crate::commands::attest::KeygenArgs),
    /// Verify a file (or digest) against a Sigstore bundle, PEP 740 attestation or PyPI
    /// provenance: certificate, transparency log, signature, statement, digest and identity.
    Verify(crate::commands::verify::VerifyArgs),
    /// Find the artifact built for a commit, pin its run, download, extract, verify; write the
    /// wheels only when everything passed.
    Fetch(crate::commands::fetch::FetchCmd),
    /// `fetch`, then `pip install --no-deps --require-hashes` of exactly the verified wheels.
    Install(crate::commands::fetch::InstallCmd),
    /// Put files into a local artifact store laid out like GitHub's artifact API.
    Publish(crate::commands::fetch::PublishCmd),
    /// The scoped compiler cache: gateway, environment, counters, credential check.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Verify every distribution file under PATHs against the evidence next to it, offline.
    /// Exits 0 only when every file verified.
    Audit(crate::commands::audit::AuditArgs),
    /// Rebuild a wheel from the source its provenance names and compare the bytes.
    Rebuild(crate::commands::audit::RebuildArgs),
    /// Print the build matrix a profile defines.
    Plan(PlanArgs),
    /// Print a cell's build-inputs digest (what a build reads, hashed).
    Inputs(InputsArgs),
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
    pub cache: Option<Tool>,
    /// The cache's backing store: a directory or redis://[user@]host:port.
    #[arg(long, value_name = "DIR|URL")]
    pub cache_store: Option<String>,
    /// File holding the Redis password (never put it in the URL on a shared runner).
    #[arg(long, value_name = "FILE")]
    pub cache_password_file: Option<PathBuf>,
    #[command(flatten)]
    pub scope: ScopeArgs,
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
    #[arg(long = "set", value_name = "KEY=VALUE", requires = "cell", value_parser = parse_set)]
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

#[derive(Subcommand, Debug)]
pub enum ToolchainCommand {
    /// Download (or reuse) and lay out the cell's CUDA toolkit; prints its CUDA_PATH.
    Install(ToolchainArgs),
}

#[derive(Args, Debug)]
pub struct ToolchainArgs {
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    #[arg(long)]
    pub cell: String,
    #[command(flatten)]
    pub env: ToolEnvArgs,
    #[command(flatten)]
    pub common: Common,
}

/// `--listen`: loopback only, so neither the network nor a container next door reaches it.
fn loopback_listen(s: &str) -> Result<SocketAddr, String> {
    let addr: SocketAddr = s
        .parse()
        .map_err(|e| format!("{s:?} is not an IP:PORT address ({e})"))?;
    if addr.ip().is_loopback() {
        Ok(addr)
    } else {
        Err(format!(
            "{addr} is not a loopback address; the gateway listens on 127.0.0.0/8 or [::1] only"
        ))
    }
}

/// `cache env` output formats.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum EnvFormat {
    /// `export NAME=value` lines, each value quoted for POSIX sh where it needs it.
    Sh,
    /// `NAME=value` lines for `$GITHUB_ENV`.
    GithubEnv,
    Json,
}

/// Where a `cache env`/`cache stats` command finds the gateway.
#[derive(Args, Debug, Clone)]
#[group(required = true, multiple = false)]
pub struct UrlArgs {
    /// The gateway URL `cache serve` printed (it carries the gateway's secret; on a shared
    /// host prefer --url-file, since a command line is visible to every local user).
    #[arg(long, value_name = "URL")]
    pub url: Option<GatewayUrl>,
    /// File holding the gateway URL (what `cache serve --url-file` wrote).
    #[arg(long, value_name = "FILE")]
    pub url_file: Option<PathBuf>,
}

#[derive(Args, Debug, Clone)]
pub struct ScopeArgs {
    /// Take the trigger from GitHub Actions (`GITHUB_EVENT_NAME`, `GITHUB_REF`,
    /// `GITHUB_BASE_REF`, the event payload's PR number and default branch).
    #[arg(long)]
    pub scope_from_github: bool,
    /// Event that triggered the build (push, pull_request, ...).
    #[arg(long, value_name = "EVENT", conflicts_with = "scope_from_github")]
    pub event: Option<String>,
    #[arg(long = "ref", value_name = "REF", conflicts_with = "scope_from_github")]
    pub git_ref: Option<String>,
    #[arg(long, value_name = "N", conflicts_with = "scope_from_github")]
    pub pr: Option<u64>,
    #[arg(long, value_name = "BRANCH", conflicts_with = "scope_from_github")]
    pub base_ref: Option<String>,
    /// The repository's default branch (with --scope-from-github: when the event payload
    /// does not name it).
    #[arg(long, default_value = "main", value_name = "BRANCH")]
    pub default_branch: String,
}

#[derive(Subcommand, Debug)]
pub enum CacheCommand {
    /// Run the scoped gateway on loopback until killed; prints its URL.
    Serve {
        /// A directory, or redis://[user@]host:port.
        #[arg(long, value_name = "DIR|URL")]
        store: String,
        /// File holding the Redis password.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        #[command(flatten)]
        scope: ScopeArgs,
        /// A loopback address (127.0.0.0/8 or [::1]); any other is refused.
        #[arg(long, default_value = "127.0.0.1:0", value_parser = loopback_listen)]
        listen: SocketAddr,
        /// Also write the URL to this file (mode 0600: the URL carries the gateway's secret).
        #[arg(long, value_name = "FILE")]
        url_file: Option<PathBuf>,
        /// Largest entry accepted (bytes); larger PUTs get 413.
        #[arg(long, default_value_t = vouch_cache::DEFAULT_MAX_ENTRY)]
        max_entry_bytes: usize,
    },
    /// Print the environment that points a compiler cache at a gateway.
    Env {
        #[arg(long)]
        tool: Tool,
        #[command(flatten)]
        url: UrlArgs,
        /// The tool's local state directory.
        #[arg(long, value_name = "DIR", default_value = ".vouch-cache-local")]
        local_dir: PathBuf,
        #[arg(long, value_enum, default_value_t = EnvFormat::Sh)]
        format: EnvFormat,
    },
    /// Print a gateway's counters (and the compiler cache's own, with --tool).
    Stats {
        #[command(flatten)]
        url: UrlArgs,
        /// Also the compiler cache's own counters (asked in this environment).
        #[arg(long)]
        tool: Option<Tool>,
        /// Markdown table for $GITHUB_STEP_SUMMARY.
        #[arg(long)]
        markdown: bool,
    },
    /// Probe whether the store credential can write scopes this build must not; fail closed.
    Check {
        /// redis://user@host:port — the credential this job holds (password in --password-file).
        #[arg(long, value_name = "URL")]
        store: String,
        /// File holding the store password.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        #[command(flatten)]
        scope: ScopeArgs,
        #[arg(long)]
        json: bool,
    },
}

#[derive(Args, Debug)]
pub struct PlanArgs {
    /// The project profile.
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// github (`{"include": [...]}` for `strategy.matrix` via `fromJson`), json, or table.
    #[arg(long, default_value = "table")]
    pub format: String,
    /// The triggering event (`push`, `pull_request`, ...): each entry then carries the cache
    /// mode its job runs with (`trusted` writes the branch scope; `pr` writes only its PR's).
    #[arg(long, value_name = "EVENT")]
    pub event: Option<String>,
}

#[derive(Args, Debug)]
pub struct InputsArgs {
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// The cell id (see `vouch plan`).
    #[arg(long)]
    pub cell: String,
    /// The source tree (an unpacked sdist or a checkout).
    #[arg(long, value_name = "DIR")]
    pub source: PathBuf,
    /// Override one of the cell's variables, as `vouch build --set` does.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    /// List every input that went into the digest.
    #[arg(long)]
    pub explain: bool,
    #[arg(long)]
    pub json: bool,
}

/// `KEY=VALUE` for `--set`.
pub fn parse_set(s: &str) -> Result<(String, String), String> {
    match s.split_once('=') {
        Some((k, v))
            if !k.is_empty() && k.bytes().all(|b| b.is_ascii_alphanumeric() || b == b'_') =>
        {
            Ok((k.to_owned(), v.to_owned()))
        }
        _ => Err(format!(
            "{s:?}: expected KEY=VALUE with KEY made of letters, digits and _"
        )),
    }
}

/// The cache mode a job triggered by `event` runs with; events vouch does not build for are
/// refused rather than guessed.

#[derive(Subcommand, Debug)]
pub enum WorkflowsCommand {
    /// Write the trigger, build and dispatch workflows for the profile.
    Generate(WorkflowsArgs),
    /// Exit 1 (printing a diff) when the workflows on disk are not what `generate` writes, or
    /// when they break a trust rule.
    Check(WorkflowsArgs),
}

#[derive(Args, Debug)]
pub struct WorkflowsArgs {
    /// The profile, as the workflows pass it to `vouch plan` and `vouch build` (a path relative
    /// to the repository root).
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// The workflows directory.
    #[arg(long, default_value = ".github/workflows", value_name = "DIR")]
    pub out: PathBuf,
    /// The vouch version the workflows install [default: the profile's `workflows.version`].
    #[arg(long, value_name = "VERSION")]
    pub vouch_version: Option<String>,
    /// sha256 of a vouch wheel of that version, once per platform wheel [default: the
    /// profile's `workflows.sha256`].
    #[arg(long = "vouch-sha256", value_name = "HEX")]
    pub vouch_sha256: Vec<String>,
}
