//! The command line's grammar: every clap type, and nothing else. What a command does lives
//! in `commands/`, helpers they share in `common.rs`, exit statuses in `exit.rs`.

use std::path::PathBuf;

use std::net::SocketAddr;

use clap::{Args, Parser, Subcommand, ValueEnum};
use secrecy::SecretString;
use vouch_cache::{GatewayUrl, Tool};
use vouch_core::Sha256Digest;

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
    /// Build the sdist of a PEP 517 project reproducibly, then normalize it (sorted members,
    /// fixed times, owners and modes, a gzip header without time or name).
    Sdist(SdistArgs),
    /// Generate or check the GitHub Actions workflows for a profile's matrix.
    #[command(subcommand)]
    Workflows(WorkflowsCommand),
    /// Lay out a cell's CUDA toolkit in the cache directory (also done by `build --cell`).
    #[command(subcommand)]
    Toolchain(ToolchainCommand),
    /// Repack wheels (or sdists, `.tar.gz`) deterministically (sorted members, fixed times,
    /// owners and modes; a wheel gets a new RECORD).
    Normalize(NormalizeArgs),
    /// Compare two wheels (or two sdists) member by member. Exits 0 when identical, 1 when they
    /// differ.
    Diff(DiffArgs),
    /// Sign an in-toto SLSA provenance statement for files into a Sigstore bundle.
    Attest(AttestArgs),
    /// Generate a local ECDSA P-256 signing key for `attest --signer key:PATH`.
    Keygen(KeygenArgs),
    /// Verify a file (or digest) against a Sigstore bundle, PEP 740 attestation or PyPI
    /// provenance: certificate, transparency log, signature, statement, digest and identity.
    Verify(VerifyArgs),
    /// Find the artifact built for a commit, pin its run, download, extract, verify; write the
    /// wheels only when everything passed.
    Fetch(FetchCmd),
    /// `fetch`, then `pip install --no-deps --require-hashes` of exactly the verified wheels.
    Install(InstallCmd),
    /// Put files into a local artifact store laid out like GitHub's artifact API.
    Publish(PublishCmd),
    /// Tell a test farm about a build: FlexCI's signed webhook, as CuPy's dispatcher sends it,
    /// or a GitHub `repository_dispatch`.
    #[command(subcommand)]
    Dispatch(DispatchCommand),
    /// The trusted signer of pull-request builds (what vouch-sign.yml runs): pin a finished
    /// build run and its /test request through the GitHub API, then sign its cells' wheels.
    #[command(subcommand, name = "pr-run")]
    PrRun(PrRunCommand),
    /// The scoped compiler cache: gateway, environment, counters, credential check.
    #[command(subcommand)]
    Cache(CacheCommand),
    /// Sigstore's trust root: refresh it through TUF (`update`, the only step that uses the
    /// network), or show which root verification would use (`status`).
    #[command(subcommand)]
    Trust(TrustCommand),
    /// Verify every distribution file under PATHs against the evidence next to it, offline (or,
    /// with --pypi, a release's files on an index against their PEP 740 provenance). Exits 0
    /// only when every file verified.
    Audit(AuditArgs),
    /// Rebuild a wheel or sdist from the source its provenance names and compare the bytes.
    Rebuild(RebuildArgs),
    /// Regenerate a profile's hash-locked build tools: one lock file per Python version and
    /// platform of the matrix, one per cell with extra build requirements (`uv pip compile
    /// --generate-hashes`, with uv installed by its pinned wheel hash).
    Lock(LockArgs),
    /// Print the build matrix a profile defines.
    Plan(PlanArgs),
    /// Print a cell's build-inputs digest (what a build reads, hashed).
    Inputs(InputsArgs),
    /// Render or parse CI artifact names (`<dist>-py<X.Y>-<plat>[-pr<N>]-<sha>`).
    #[command(subcommand)]
    Name(NameCommand),
    /// Print the shell completion script for SHELL, e.g.
    /// `vouch completions bash > ~/.local/share/bash-completion/completions/vouch`.
    Completions(CompletionsArgs),
    /// Write the man pages (`vouch.1` and one per command, e.g. `vouch-verify.1`) to a
    /// directory, e.g. `vouch man --out /usr/local/share/man/man1`.
    Man(ManArgs),
}

/// How a command prints its report. `--json` and `--format json` (gh's spelling) are one
/// switch; a failure is then a JSON object on stdout too.
#[derive(Args, Debug, Default)]
pub struct Common {
    /// Print a JSON report on stdout instead of plain lines (failures too).
    #[arg(long)]
    json: bool,
    /// `json` is the same as --json; `text` (the default) is plain lines.
    #[arg(long, value_enum, value_name = "FORMAT", conflicts_with = "json")]
    format: Option<OutputFormat>,
}

impl Common {
    /// Whether the report is JSON.
    pub fn json(&self) -> bool {
        self.json || self.format == Some(OutputFormat::Json)
    }
}

/// `--format` of the commands that print a report.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum OutputFormat {
    /// Plain lines for people.
    Text,
    /// One JSON document on stdout.
    Json,
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
    /// toolkits this build reuses, and the compiler-cache entries it writes and reads: give
    /// trusted builds one that untrusted builds never see, and a record or cache entry that
    /// anything else wrote is refused. A trusted build's cache needs it.
    #[arg(long, env = "VOUCH_SEAL_KEY_FILE", value_name = "FILE")]
    pub seal_key_file: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct BuildEnvArgs {
    #[command(flatten)]
    pub tools: ToolEnvArgs,
    /// Fixed directory the source is copied to and built in [default: /tmp/vouch-build/work,
    /// the same for every user and machine, which CUDA wheels need to reproduce]; locked
    /// while a build runs. vouch empties it only if it made it (or it is empty), and
    /// never when it holds or lies inside the source or the output.
    #[arg(long, env = "VOUCH_WORK_DIR", value_name = "DIR")]
    pub work_dir: Option<PathBuf>,
    /// Install the build tools from this hash-locked file (`vouch lock` writes them; a cell
    /// build takes its own from the profile): what an auditor's rebuild needs to run the
    /// release's exact tools.
    #[arg(long, value_name = "FILE")]
    pub lock: Option<PathBuf>,
}

#[derive(Args, Debug)]
pub struct CacheArgs {
    /// Compile through this compiler cache, via a scoped gateway started for the build.
    #[arg(long, value_name = "ccache|sccache", requires = "cache_store")]
    pub cache: Option<Tool>,
    /// The cache's backing store: a directory, redis://[user@]host:port, s3://bucket/prefix,
    /// gs://bucket/prefix or gha (see README: stores).
    #[arg(long, value_name = "DIR|URL")]
    pub cache_store: Option<String>,
    /// File holding the cache store's secret: a Redis password, an S3 secret access key, a
    /// GCS key or token (never put it in the URL on a shared runner). Left in place.
    #[arg(long, alias = "cache-password-file", value_name = "FILE")]
    pub password_file: Option<PathBuf>,
    /// The trusted builds' cache public key (`ed25519:<base64>`, from `vouch cache
    /// public-key`): an entry is served only when its signature verifies with it. A build
    /// without --seal-key-file (a pull request's) needs it; with one, it must match.
    #[arg(
        long = "cache-public-key",
        env = "VOUCH_CACHE_PUBLIC_KEY",
        value_name = "KEY"
    )]
    pub public_key: Option<vouch_cache::EntryVerifier>,
    #[command(flatten)]
    pub scope: ScopeArgs,
}

#[derive(Args, Debug)]
pub struct BuildArgs {
    /// The project: a directory (with pyproject.toml or setup.py) or an sdist (.tar.gz).
    #[arg(long, value_name = "DIR|SDIST")]
    pub source: PathBuf,
    /// The directory the normalized wheel (and, with --cell, its build record) is written to.
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
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
pub struct SdistArgs {
    /// The project's source directory (with pyproject.toml or setup.py).
    #[arg(long, value_name = "DIR")]
    pub source: PathBuf,
    /// The directory the normalized sdist (`<name>-<version>.tar.gz`) is written to.
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
    pub out: PathBuf,
    /// A project profile whose `[sdist] env` the backend gets (before any `--set`).
    #[arg(long, value_name = "FILE")]
    pub profile: Option<PathBuf>,
    /// A variable for the build backend (recorded in the report, so never a secret), e.g.
    /// `--set CUPY_INSTALL_USE_STUB=1` so CuPy's setup.py lists its sources without CUDA.
    #[arg(long = "set", value_name = "KEY=VALUE", value_parser = parse_set)]
    pub set: Vec<(String, String)>,
    #[command(flatten)]
    pub epoch: EpochArgs,
    #[command(flatten)]
    pub env: BuildEnvArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct NormalizeArgs {
    /// Wheels or sdists (`.tar.gz`) to normalize.
    #[arg(required = true, value_name = "WHEEL|SDIST")]
    pub wheels: Vec<PathBuf>,
    /// The directory the files are written to, each keeping its name (may be the input's
    /// own directory).
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
    pub out: PathBuf,
    #[command(flatten)]
    pub epoch: EpochArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct DiffArgs {
    /// The first wheel or sdist.
    pub a: PathBuf,
    /// The second, compared member by member with the first.
    pub b: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct DemoArgs {
    /// The directory the two wheels are left in [default: a temporary directory, removed
    /// afterwards].
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
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
        /// The cell's Python version, e.g. 3.12 or 3.14t (`--python` names an interpreter
        /// elsewhere; the old spelling here still works).
        #[arg(long, alias = "python", value_name = "X.Y")]
        python_version: String,
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
        /// The artifact name, e.g. `cupy-cuda13x-py3.12-linux-64-pr7-<sha>`.
        name: String,
        #[command(flatten)]
        common: Common,
    },
}

#[derive(Subcommand, Debug)]
pub enum TrustCommand {
    /// Fetch and verify Sigstore's newest trusted root through TUF, starting from the embedded
    /// TUF root, and keep the verified metadata in the cache for `verify` to use offline.
    Update(TrustArgs),
    /// Print which trust root `verify` would use, its TUF root version and when it was
    /// refreshed.
    Status(TrustArgs),
}

#[derive(Args, Debug)]
pub struct TrustArgs {
    /// Cache directory the TUF metadata is kept in (under `trust-root/`).
    #[arg(long, env = "VOUCH_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    /// Sigstore's staging instance (its own TUF repository, embedded root and cache) instead
    /// of production: what `verify --staging` then uses.
    #[arg(long)]
    pub staging: bool,
    #[command(flatten)]
    pub tuf: TufRepoArgs,
    #[command(flatten)]
    pub common: Common,
}

/// A TUF repository other than Sigstore's, for tests and private instances: its URL and the
/// `root.json` trust in it starts from. Hidden: the embedded production root is the default.
#[derive(Args, Debug, Clone, Default)]
pub struct TufRepoArgs {
    /// Base URL of a custom TUF repository (https, or http on a loopback address).
    #[arg(
        long,
        value_name = "URL",
        env = "VOUCH_TUF_URL",
        hide = true,
        requires = "tuf_root"
    )]
    pub tuf_url: Option<String>,
    /// The initial `root.json` of the `--tuf-url` repository.
    #[arg(
        long,
        value_name = "FILE",
        env = "VOUCH_TUF_ROOT",
        hide = true,
        requires = "tuf_url"
    )]
    pub tuf_root: Option<PathBuf>,
}

#[derive(Subcommand, Debug)]
pub enum ToolchainCommand {
    /// Download (or reuse) and lay out the cell's CUDA toolkit; prints its CUDA_PATH.
    Install(ToolchainArgs),
}

#[derive(Args, Debug)]
pub struct ToolchainArgs {
    /// The project profile.
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// The cell whose toolkit to lay out (see `vouch plan`).
    #[arg(long)]
    pub cell: String,
    /// Print what would be fetched, with every sha256 pin, and fetch nothing: any cell, on any
    /// host, without Python.
    #[arg(long)]
    pub dry_run: bool,
    #[command(flatten)]
    pub env: ToolEnvArgs,
    #[command(flatten)]
    pub common: Common,
}

/// `--out` of a command that writes into a directory (created if missing): an existing file
/// there is refused before anything runs, naming what `--out` is for this command.
fn out_dir(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if path.exists() && !path.is_dir() {
        return Err(format!(
            "{s:?} is not a directory; this command's --out is the directory it writes into"
        ));
    }
    Ok(path)
}

/// `--out` of a command that writes one file: an existing directory there is refused.
fn out_file(s: &str) -> Result<PathBuf, String> {
    let path = PathBuf::from(s);
    if path.is_dir() {
        return Err(format!(
            "{s:?} is a directory; this command's --out is the file it writes"
        ));
    }
    Ok(path)
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
    /// The ref that was pushed (`refs/heads/main`, `refs/tags/v14.0.0`): a push writes its
    /// branch's scope.
    #[arg(long = "ref", value_name = "REF", conflicts_with = "scope_from_github")]
    pub git_ref: Option<String>,
    /// The pull request being built (with --event pull_request): it reads the base and
    /// default branches' scopes and writes nothing.
    #[arg(long, value_name = "N", conflicts_with = "scope_from_github")]
    pub pr: Option<u64>,
    /// The pull request's base branch: the scope its build reads besides its own.
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
        /// The cache store: a directory, redis://[user@]host:port, s3://bucket/prefix,
        /// gs://bucket/prefix or gha.
        #[arg(long = "cache-store", alias = "store", value_name = "DIR|URL")]
        store: String,
        /// File holding the store's secret (Redis password, S3 secret key, GCS key or token).
        /// Left in place.
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
        /// File holding the trusted builds' seal key (32+ bytes): it signs the entries this
        /// gateway writes (a gateway without it writes nothing).
        #[arg(long, env = "VOUCH_SEAL_KEY_FILE", value_name = "FILE")]
        seal_key_file: Option<PathBuf>,
        /// The trusted builds' cache public key (`ed25519:<base64>`): every entry served must
        /// verify with it.
        #[arg(
            long = "cache-public-key",
            env = "VOUCH_CACHE_PUBLIC_KEY",
            value_name = "KEY"
        )]
        public_key: Option<vouch_cache::EntryVerifier>,
    },
    /// Print the public key that checks cache entries signed with a seal key, for the
    /// profile's `[workflows.cache] public_key` and `--cache-public-key`.
    PublicKey {
        /// File holding the trusted builds' seal key (the `VOUCH_SEAL_KEY` secret).
        #[arg(long, env = "VOUCH_SEAL_KEY_FILE", value_name = "FILE")]
        seal_key_file: PathBuf,
    },
    /// Print the environment that points a compiler cache at a gateway.
    Env {
        /// The compiler cache the environment is for.
        #[arg(long)]
        tool: Tool,
        #[command(flatten)]
        url: UrlArgs,
        /// The tool's local state directory.
        #[arg(long, value_name = "DIR", default_value = ".vouch-cache-local")]
        local_dir: PathBuf,
        /// How the variables are printed.
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
        /// The cache store with the credential this job holds (its secret in --password-file).
        #[arg(long = "cache-store", alias = "store", value_name = "URL")]
        store: String,
        /// File holding the store's secret. Left in place: the build reads it after the check.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        #[command(flatten)]
        scope: ScopeArgs,
        #[command(flatten)]
        common: Common,
    },
    /// A read-only credential for one pull request's build (the branch scopes it reads; it
    /// writes nothing): a Redis ACL user that expires (its URL on stdout, its password in
    /// --out), or for s3:// and gs:// the IAM policy to attach (JSON on stdout).
    Grant {
        /// The cache store with an admin credential (redis://admin@host:port), or the s3://
        /// or gs:// store the policy is for.
        #[arg(long = "cache-store", alias = "store", value_name = "URL")]
        store: String,
        /// File holding the admin credential's secret. Left in place.
        #[arg(long, value_name = "FILE")]
        password_file: Option<PathBuf>,
        /// The pull request the credential is for: it may read, never write.
        #[arg(long, value_name = "N")]
        pr: u64,
        /// The pull request's base branch (its builds read that scope).
        #[arg(long, default_value = "main", value_name = "BRANCH")]
        base_ref: String,
        /// The repository's default branch (its scope is readable too).
        #[arg(long, default_value = "main", value_name = "BRANCH")]
        default_branch: String,
        /// How long the Redis user lives: `90s`, `30m`, `6h`, `1d`.
        #[arg(long, default_value = "6h", value_parser = parse_ttl)]
        ttl: std::time::Duration,
        /// The file the Redis user's password is written to (mode 0600); required for
        /// redis:// stores.
        #[arg(long, value_name = "FILE", value_parser = out_file)]
        out: Option<PathBuf>,
    },
}

#[derive(Args, Debug)]
pub struct LockArgs {
    /// The project profile (its `[lock]` section says where the lock files go).
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// The project's source tree or sdist, whose `build-system.requires` are locked
    /// [default: the profile's `lock.requires`].
    #[arg(long, value_name = "DIR|SDIST")]
    pub source: Option<PathBuf>,
    /// The package index to resolve against, instead of PyPI (a mirror, a test index).
    #[arg(long, value_name = "URL")]
    pub index_url: Option<String>,
    /// Resolve every requirement to its newest allowed version; otherwise the pins of the
    /// existing lock files are kept where they still satisfy the inputs.
    #[arg(long)]
    pub upgrade: bool,
    /// Write nothing; exit 1 when a lock file is missing or would change.
    #[arg(long, conflicts_with = "upgrade")]
    pub check: bool,
    /// The interpreter whose pip installs uv [default: python3 on PATH].
    #[arg(long, value_name = "PATH")]
    pub python: Option<PathBuf>,
    /// uv's cache goes to `<DIR>/uv` [default: $XDG_CACHE_HOME/vouch or ~/.cache/vouch].
    #[arg(long, env = "VOUCH_CACHE_DIR", value_name = "DIR")]
    pub cache_dir: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
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
    /// The project profile.
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
    #[command(flatten)]
    pub common: Common,
}

/// `6h`, `30m`, `90s`, `1d` for `cache grant --ttl`.
pub fn parse_ttl(s: &str) -> Result<std::time::Duration, String> {
    let (n, unit) = s.split_at(s.find(|c: char| !c.is_ascii_digit()).unwrap_or(s.len()));
    let n: u64 = n
        .parse()
        .map_err(|_| format!("{s:?}: expected a number and a unit (s, m, h, d), e.g. 6h"))?;
    let secs = match unit {
        "s" => 1,
        "m" => 60,
        "h" => 3600,
        "d" => 86400,
        _ => return Err(format!("{s:?}: expected a unit of s, m, h or d, e.g. 6h")),
    };
    if n == 0 {
        return Err(format!("{s:?}: a grant must live longer than 0"));
    }
    Ok(std::time::Duration::from_secs(n * secs))
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

#[derive(Subcommand, Debug)]
pub enum WorkflowsCommand {
    /// Write the trigger, build and sign workflows for the profile.
    Generate(WorkflowsArgs),
    /// Exit 1 (printing a diff) when the workflows on disk are not what `generate` writes, or
    /// when they break a trust rule.
    Check(WorkflowsArgs),
    /// Show which workflows and jobs an event starts, with what token, secrets and OIDC, and
    /// what they cause in turn (GitHub's documented rules applied to the workflow files).
    Explain(ExplainArgs),
    /// List every `vouch` command line the generated workflows run, with the flags each
    /// passes: what the pinned vouch (`[workflows.source] rev`) must accept.
    Calls(CallsArgs),
}

#[derive(Args, Debug)]
pub struct CallsArgs {
    /// The profile the workflows are generated from.
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct ExplainArgs {
    #[command(flatten)]
    pub workflows: WorkflowsArgs,
    /// Read the files in --out instead of what `generate` would write.
    #[arg(long)]
    pub on_disk: bool,
    /// The event: `issue_comment`, `pull_request` (delivered to pull_request_target
    /// workflows too), `push`, ...
    #[arg(long, value_name = "EVENT", value_parser = parse_event_name)]
    pub event: String,
    /// The activity type (`created`, `labeled`, `synchronize`, ...) [default: per event].
    #[arg(long, value_name = "TYPE")]
    pub action: Option<String>,
    /// The pull request comes from a fork.
    #[arg(long)]
    pub fork: bool,
    /// The label a `labeled` event adds.
    #[arg(long, value_name = "LABEL")]
    pub label: Option<String>,
    /// The commenter's author association (OWNER, MEMBER, CONTRIBUTOR, ...).
    #[arg(long, value_name = "ASSOCIATION")]
    pub actor_association: Option<String>,
    /// The comment's text [default: /test].
    #[arg(long, value_name = "TEXT")]
    pub comment: Option<String>,
    /// A push's ref [default: refs/heads/main].
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,
    /// The pull request was labelled after a /test of its previous head.
    #[arg(long)]
    pub previously_tested: bool,
    /// A new head is pushed after the comment, before the record job reads the pull request.
    #[arg(long)]
    pub pushed_after_comment: bool,
    /// The push deletes its branch.
    #[arg(long)]
    pub deleted: bool,
    /// The push merged a pull request labelled skip-ci.
    #[arg(long)]
    pub skip_ci: bool,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct WorkflowsArgs {
    /// The profile, as the workflows pass it to `vouch plan` and `vouch build` (a path relative
    /// to the repository root).
    #[arg(long, default_value = "vouch.toml", value_name = "FILE")]
    pub profile: PathBuf,
    /// The workflows directory the files are written to (or read from).
    #[arg(long, default_value = ".github/workflows", value_name = "DIR", value_parser = out_dir)]
    pub out: PathBuf,
}

#[derive(Args, Debug, Clone)]
pub struct PolicyArgs {
    /// Source repository `OWNER/NAME` the certificate must name (OID .1.12).
    #[arg(long, short = 'R', value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// The organization or user whose repository must have signed (OID .1.12 names one of
    /// theirs), as gh's `--owner`. Alone it accepts a build by any of the owner's repositories;
    /// `verify` without other evidence then looks the digest up in the owner's attestation
    /// store.
    #[arg(long, value_name = "OWNER")]
    pub owner: Option<String>,
    /// Workflow that signed (OID .1.9): `PATH`, `OWNER/REPO/PATH`, optionally `@REF`. For
    /// reusable workflows this is the called workflow.
    #[arg(long, value_name = "WORKFLOW")]
    pub signer_workflow: Option<String>,
    /// Top-level workflow of the run (OID .1.18, the caller of a reusable workflow).
    #[arg(long, value_name = "WORKFLOW")]
    pub build_workflow: Option<String>,
    /// Source ref (OID .1.14); a trailing `*` matches any suffix, e.g. `refs/tags/v*`.
    #[arg(long = "ref", visible_alias = "source-ref", value_name = "REF")]
    pub git_ref: Option<String>,
    /// Source commit, 40 hex (OID .1.13).
    #[arg(long, visible_alias = "source-digest", value_name = "SHA", value_parser = parse_commit_sha)]
    pub sha: Option<String>,
    /// Build trigger, e.g. `push`, `pull_request` (OID .1.20).
    #[arg(long, value_name = "EVENT", value_parser = parse_event_name)]
    pub event: Option<String>,
    /// Workflow run id (OID .1.21).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<u64>,
    /// OIDC issuer (OID .1.8).
    /// [default: GitHub Actions' issuer]
    #[arg(long, visible_alias = "cert-oidc-issuer", value_name = "URL")]
    pub issuer: Option<String>,
    /// Runner environment (OID .1.11): `github-hosted`, `self-hosted`, or `any`.
    /// [default: github-hosted]
    #[arg(long, value_name = "KIND", conflicts_with = "deny_self_hosted_runners")]
    pub runner: Option<String>,
    /// gh's spelling of `--runner github-hosted` (vouch's default already).
    #[arg(long)]
    pub deny_self_hosted_runners: bool,
    /// Predicate type: `slsa` (SLSA provenance v1), `pep740` (PyPI publish v1), `pr-build`
    /// (a pull-request build signed by the signer workflow: give --signer-workflow with its
    /// @ref, and --pr, --pr-head-sha, --pr-build-workflow), or a URI.
    /// [default: slsa]
    #[arg(long, value_name = "TYPE")]
    pub predicate_type: Option<String>,
    /// With `--predicate-type pr-build`: the PR head commit the build run must have built
    /// (40 hex).
    #[arg(long, value_name = "SHA", value_parser = parse_commit_sha)]
    pub pr_head_sha: Option<String>,
    /// With `--predicate-type pr-build`: the workflow file that must have run the build, e.g.
    /// `.github/workflows/vouch-build.yml`.
    #[arg(long, value_name = "PATH")]
    pub pr_build_workflow: Option<String>,
    /// A TOML policy file: defaults, and `[[project]]` entries per distribution name. Flags
    /// given on the command line win.
    #[arg(long, value_name = "FILE")]
    pub policy: Option<PathBuf>,
    /// Pull request the build must be for: the certificate's ref must be `refs/pull/N/merge`
    /// and the vouch statement must claim N (pr-build: the statement's request must be for N).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// Matrix cell the vouch statement must claim.
    #[arg(long, value_name = "CELL")]
    pub cell: Option<String>,
    /// Custom `trusted_root.json` instead of Sigstore's production root (the one `vouch trust
    /// update` refreshed, else the embedded one).
    #[arg(
        long,
        visible_alias = "custom-trusted-root",
        value_name = "FILE",
        conflicts_with = "staging"
    )]
    pub trust_root: Option<PathBuf>,
    /// Use the embedded Sigstore staging root.
    #[arg(long)]
    pub staging: bool,
    /// No network: the root from the last `vouch trust update` (the embedded one when there is
    /// none). Verification of a local bundle never uses the network either way.
    #[arg(long)]
    pub offline: bool,
    #[command(flatten)]
    pub tuf: TufRepoArgs,
    /// Verify a key-signed bundle with this PEM public key instead of a certificate.
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
}

/// `--sha`: a full commit, as certificates and statements carry it; a short one never matches.
pub fn parse_commit_sha(s: &str) -> Result<String, String> {
    if vouch_verify::is_commit_sha(s) {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a full commit SHA (40 lowercase hex digits, e.g. 0123456789abcdef0123456789abcdef01234567)"
        ))
    }
}

/// `--event`: a GitHub Actions event name (`push`, `pull_request`, `workflow_dispatch`, ...).
pub fn parse_event_name(s: &str) -> Result<String, String> {
    if !s.is_empty() && s.bytes().all(|b| b.is_ascii_lowercase() || b == b'_') {
        Ok(s.to_owned())
    } else {
        Err(format!(
            "{s:?} is not a GitHub Actions event name (lowercase letters and _, e.g. push, pull_request)"
        ))
    }
}

#[derive(Args, Debug)]
#[command(group(clap::ArgGroup::new("subject").required(true).args(["file", "digest"])))]
// The evidence is one of these, or with none of them `--owner`'s store (checked by `verify`).
#[command(group(clap::ArgGroup::new("evidence").args(["bundle", "attestation", "provenance", "github_attestations"])))]
pub struct VerifyArgs {
    /// The file to verify (wheel, sdist, anything).
    pub file: Option<PathBuf>,
    /// Verify a digest instead of a file (`sha256:HEX`).
    #[arg(long, value_name = "sha256:HEX")]
    pub digest: Option<Sha256Digest>,
    /// Sigstore bundle (`.sigstore.json`).
    #[arg(long, short = 'b', value_name = "FILE")]
    pub bundle: Option<PathBuf>,
    /// PEP 740 attestation (`.publish.attestation`); its predicate type is then PyPI's
    /// publish attestation unless --predicate-type says otherwise.
    #[arg(long, value_name = "FILE")]
    pub attestation: Option<PathBuf>,
    /// PyPI provenance object (the integrity API's response).
    #[arg(long, value_name = "FILE")]
    pub provenance: Option<PathBuf>,
    /// Look the evidence up by digest in this repository's GitHub attestation store; every
    /// stored attestation is verified, the first that passes is used, and the others are
    /// reported.
    #[arg(long, value_name = "OWNER/NAME")]
    pub github_attestations: Option<String>,
    #[command(flatten)]
    pub github: GithubAccessArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct AttestArgs {
    /// Files to attest (one subject each, by file name and sha256).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// The file the Sigstore bundle (`.sigstore.json`) is written to.
    #[arg(long, value_name = "BUNDLE", value_parser = out_file)]
    pub out: PathBuf,
    #[command(flatten)]
    pub signer: SignerArgs,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub claims: ClaimArgs,
    #[command(flatten)]
    pub record: RecordArgs,
    #[command(flatten)]
    pub common: Common,
}

/// Recording a bundle in GitHub's attestation store, where `gh attestation verify` and
/// `vouch verify --github-attestations` find it by digest.
#[derive(Args, Debug)]
pub struct RecordArgs {
    /// Also record the bundle in the run's repository's attestation store
    /// (`POST /repos/{owner}/{repo}/attestations`, as actions/attest-build-provenance does).
    /// Needs a keyless bundle whose certificate names that repository, and a token with
    /// `attestations: write`.
    #[arg(long)]
    pub record_github: bool,
    #[command(flatten)]
    pub github: GithubAccessArgs,
}

/// How `attest --record-github` and `verify --github-attestations` reach GitHub's API.
#[derive(Args, Debug)]
pub struct GithubAccessArgs {
    /// GitHub API base URL [default: $GITHUB_API_URL, else https://api.github.com].
    #[arg(long, value_name = "URL")]
    pub api_url: Option<String>,
    /// File holding the GitHub token. It is read, then deleted (unless --keep-token-file), as
    /// soon as the command line is parsed. Reading a public repository's attestations needs
    /// none; recording one needs `attestations: write`.
    #[arg(long, env = "GH_TOKEN_FILE", value_name = "FILE", value_parser = take_token_file)]
    pub token_file: Option<TokenFile>,
    /// Leave the --token-file in place.
    #[arg(long, requires = "token_file")]
    pub keep_token_file: bool,
}

/// Who signs, for `attest` and `pr-run sign`.
#[derive(Args, Debug)]
pub struct SignerArgs {
    /// `sigstore` (keyless: OIDC token -> Fulcio -> Rekor) or `key:PATH` (PKCS#8 P-256 PEM).
    #[arg(long, default_value = "sigstore")]
    pub signer: String,
    /// Fulcio for keyless signing [default: https://fulcio.sigstore.dev].
    #[arg(long, value_name = "URL")]
    pub fulcio_url: Option<String>,
    /// Rekor for keyless signing [default: https://rekor.sigstore.dev].
    #[arg(long, value_name = "URL")]
    pub rekor_url: Option<String>,
    /// Read the OIDC token from this file instead of the ambient GitHub Actions token. The file
    /// is read and deleted as soon as the command line is parsed, whatever fails later.
    #[arg(long, value_name = "FILE", value_parser = take_oidc_token_file)]
    pub oidc_token_file: Option<OidcTokenFile>,
}

/// An OIDC token read from `--oidc-token-file` (the file is gone by then).
#[derive(Clone, Debug)]
pub struct OidcTokenFile {
    pub path: PathBuf,
    pub jwt: SecretString,
}

/// One use per token file: it is removed while the command line is parsed, so neither a later
/// usage error nor a later step of the job leaves it to be reused.
fn take_oidc_token_file(value: &str) -> Result<OidcTokenFile, String> {
    let path = PathBuf::from(value);
    let jwt = crate::token_files::contents(&path)?;
    Ok(OidcTokenFile {
        path,
        jwt: SecretString::from(jwt),
    })
}

/// The run context outside GitHub Actions (in Actions it comes from `GITHUB_*`, and these flags
/// are refused unless --local).
#[derive(Args, Debug)]
pub struct ContextArgs {
    /// `OWNER/NAME` (required outside GitHub Actions).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Source commit, 40 hex (required outside GitHub Actions, unless --merge-sha gives it).
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
    /// Source ref [default: local].
    #[arg(long = "ref", value_name = "REF")]
    pub git_ref: Option<String>,
    /// Workflow path [default: local].
    #[arg(long, value_name = "PATH")]
    pub workflow: Option<String>,
    /// Event name [default: local; pull_request when --pr is given].
    #[arg(long)]
    pub event: Option<String>,
    /// The workflow run id (required outside GitHub Actions to name the invocation).
    #[arg(long, value_name = "ID")]
    pub run_id: Option<u64>,
    /// Runner environment [default: local].
    #[arg(long)]
    pub runner: Option<String>,
    /// Ignore `GITHUB_*` and use only these flags.
    #[arg(long)]
    pub local: bool,
}

#[derive(Args, Debug)]
pub struct ClaimArgs {
    /// Matrix cell id recorded in the statement.
    #[arg(long)]
    pub cell: Option<String>,
    /// Pull request number (in Actions, read from the event payload).
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// The pull request's head commit, 40 hex (in Actions, read from the event payload). Under
    /// `pull_request` the built commit (--sha) is the merge commit, not the head.
    #[arg(long, value_name = "SHA", requires = "pr")]
    pub pr_head_sha: Option<String>,
    /// The merge commit that was built, 40 hex (in Actions, GITHUB_SHA); the statement's commit.
    #[arg(long, value_name = "SHA", requires = "pr")]
    pub merge_sha: Option<String>,
    /// The CI artifact the files travel in, recorded as a signed claim (a consumer that finds
    /// an artifact by run holds it to this).
    #[arg(long, value_name = "NAME")]
    pub artifact_name: Option<String>,
    /// The build-inputs digest `vouch inputs` gave for the cell, recorded for `rebuild`.
    #[arg(long, value_name = "DIGEST")]
    pub build_inputs_digest: Option<String>,
    /// The compiler-cache scope the build wrote (`main`, `pr/7`), recorded as reported.
    #[arg(long, value_name = "SCOPE")]
    pub cache_scope: Option<String>,
    /// The epoch the build used, recorded so `vouch rebuild` can use it too.
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_name = "SECONDS")]
    pub source_date_epoch: Option<u64>,
}

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// The file the private key (PKCS#8 PEM, mode 0600) is written to; the public key goes
    /// to `<out>.pub`.
    #[arg(long, value_name = "FILE", value_parser = out_file)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct AuditArgs {
    /// Files or directories (walked) of wheels, sdists, conda packages.
    #[arg(required_unless_present = "pypi", conflicts_with = "pypi")]
    pub paths: Vec<PathBuf>,
    /// Audit a release on the index instead of local files: every wheel and sdist of
    /// NAME==VERSION, each with its PEP 740 provenance from the index's integrity API. A file
    /// without provenance is "no evidence" and is not downloaded; one whose bytes differ from
    /// the published sha256 is refused.
    #[arg(long, value_name = "NAME==VERSION")]
    pub pypi: Option<vouch_audit::Release>,
    /// The simple index for --pypi, e.g. a mirror [default: https://pypi.org/simple/]; https,
    /// or plain http on loopback only. Its scheme and host also serve the integrity API.
    #[arg(long, value_name = "URL", requires = "pypi")]
    pub index_url: Option<String>,
    /// For every file without evidence next to it, look evidence up by digest in this
    /// repository's GitHub attestation store (one bulk request for the owner's repositories);
    /// each stored attestation is verified, the first that passes is used.
    #[arg(long, value_name = "OWNER/NAME")]
    pub github_attestations: Option<String>,
    #[command(flatten)]
    pub github: GithubAccessArgs,
    #[command(flatten)]
    pub policy: PolicyArgs,
    /// Print the report as a JSON array; the same as `--format json`.
    #[arg(long, conflicts_with_all = ["markdown", "format"])]
    json: bool,
    /// Print the report as a Markdown table; the same as `--format markdown`.
    #[arg(long, conflicts_with = "format")]
    markdown: bool,
    /// How the report is printed: `text` (the default), `json` or `markdown`.
    #[arg(long, value_enum, value_name = "FORMAT")]
    format: Option<AuditFormat>,
}

impl AuditArgs {
    pub fn format(&self) -> AuditFormat {
        match (self.json, self.markdown, self.format) {
            (true, _, _) => AuditFormat::Json,
            (_, true, _) => AuditFormat::Markdown,
            (_, _, f) => f.unwrap_or(AuditFormat::Text),
        }
    }
}

/// `audit --format`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum AuditFormat {
    /// One line per file, for people.
    Text,
    /// A JSON array, one object per file.
    Json,
    /// A Markdown table (a release note, a step summary).
    Markdown,
}

#[derive(Args, Debug)]
pub struct RebuildArgs {
    /// The wheel or sdist (`.tar.gz`) to reproduce.
    pub wheel: PathBuf,
    /// Its provenance bundle.
    #[arg(long, value_name = "FILE")]
    pub bundle: PathBuf,
    /// The source checkout of the commit the provenance names.
    #[arg(long, value_name = "DIR")]
    pub source: PathBuf,
    #[command(flatten)]
    pub policy: PolicyArgs,
    #[command(flatten)]
    pub env: BuildEnvArgs,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct FetchArgs {
    /// `OWNER/NAME` whose workflow must have built the artifact.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// The build workflow file. A push build's artifact comes from its run; a pull-request
    /// build's artifact comes from the signer workflow's run, whose statement must name a run
    /// of this workflow.
    #[arg(long, default_value = vouch_fetch::DEFAULT_BUILD_WORKFLOW, value_name = "PATH")]
    pub workflow: String,
    /// The workflow that signs pull-request builds (`workflow_run`, from the default branch):
    /// a PR build's artifact must come from its run, signed by it at the default branch.
    #[arg(long, default_value = vouch_fetch::DEFAULT_SIGNER_WORKFLOW, value_name = "PATH")]
    pub signer_workflow: String,
    /// Wait up to this long for the producing run to complete (tests dispatched from inside
    /// a run may start before it ends); a run that failed is refused all the same. 0: do not
    /// wait.
    #[arg(long, default_value_t = 900, value_name = "SECONDS")]
    pub wait_for_run: u64,
    /// The build's event: `push`, `pull_request` (signed by the signer workflow),
    /// `workflow_dispatch` or `schedule`.
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
    /// The distribution (normalized, e.g. `cupy-cuda13x`) whose artifact name to render.
    #[arg(long)]
    pub dist: Option<String>,
    /// The Python version of the cell (`3.12`, `3.14t`).
    #[arg(long, value_name = "X.Y")]
    pub python_version: Option<String>,
    /// The cell's platform: `linux-64`, `linux-aarch64` or `win-64`.
    #[arg(long)]
    pub platform: Option<String>,
    /// Take event, PR and commit from FlexCI (`FLEXCI_BRANCH`, `FLEXCI_REFERENCE_COMMIT_ID`,
    /// `FLEXCI_COMMIT_ID`, else the checkout's HEAD, its second parent for a merge).
    #[arg(long)]
    pub from_flexci: bool,
    /// The checkout the tests will run from (a test farm's): its HEAD must be the commit the
    /// wheel was built from, as its verified statement says (for a pull request, the vouched
    /// head itself, not `refs/pull/<N>/merge`), or nothing is written or installed (exit 34).
    #[arg(long, value_name = "DIR")]
    pub checkout: Option<PathBuf>,
    /// Where the artifacts come from: `github[:API_URL]` or `store:DIR` [default: github].
    #[arg(long, value_name = "SOURCE", conflicts_with_all = ["api_url", "store"])]
    pub source: Option<vouch_fetch::SourceSpec>,
    /// GitHub API base URL (GitHub Enterprise, tests) [default: https://api.github.com]; the
    /// same as `--source github:URL`.
    #[arg(long, value_name = "URL", conflicts_with = "store")]
    pub api_url: Option<String>,
    /// Read artifacts from a local store instead of GitHub; the same as `--source store:DIR`.
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
    /// Trust Sigstore's staging instance instead of production.
    #[arg(long)]
    pub staging: bool,
    /// Verify key-signed bundles with this PEM public key (checked before any API call).
    #[arg(long, value_name = "PEM")]
    pub key: Option<PathBuf>,
    /// Runner environment the build must have used (`any` to accept all).
    #[arg(long, default_value = "github-hosted")]
    pub runner: String,
    /// Find evidence by digest in this repository's GitHub attestation store
    /// (`GET /repos/{owner}/{repo}/attestations/sha256:<hex>`) for a wheel its artifact
    /// carries no bundle for; every stored attestation is verified and the ones that fail are
    /// reported. A push build's artifact is then also found under another name, among the
    /// artifacts of the build's runs at the commit.
    #[arg(long, value_name = "OWNER/NAME", conflicts_with = "store")]
    pub github_attestations: Option<String>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct CompletionsArgs {
    /// The shell the script is for.
    #[arg(value_enum)]
    pub shell: clap_complete::Shell,
}

#[derive(Args, Debug)]
pub struct ManArgs {
    /// The directory the pages are written to (created if missing; pages there are replaced).
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
    pub out: PathBuf,
}

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

#[derive(Subcommand, Debug)]
pub enum DispatchCommand {
    /// POST a recorded GitHub event to FlexCI's webhook, byte for byte as CuPy's
    /// `flexci_dispatcher.py` sends it: the projects carrying every tag the `/test` comment asks
    /// for (`@push` for a push), the event re-serialised as Python's `json.dumps` writes it,
    /// signed with the webhook secret (`X-Hub-Signature`, `X-Hub-Signature-256`). Sent once,
    /// never retried. Exits 0 without sending when the comment holds no `/test` line or asks
    /// only to skip.
    Flexci(DispatchFlexciArgs),
    /// Create a `repository_dispatch` event in a GitHub repository (the generic test farm).
    Repository(DispatchRepositoryArgs),
}

/// `--event` of `dispatch flexci`.
#[derive(Clone, Copy, Debug, PartialEq, Eq, ValueEnum)]
pub enum DispatchEvent {
    /// A `/test TAGS` comment on a pull request (its recorded event).
    #[value(name = "issue_comment")]
    IssueComment,
    /// A push to a branch: the projects tagged `@push`.
    Push,
}

#[derive(Args, Debug)]
pub struct DispatchFlexciArgs {
    /// The event the webhook payload is.
    #[arg(long, value_enum)]
    pub event: DispatchEvent,
    /// The recorded event payload (`$GITHUB_EVENT_PATH`, or the request record's event.json).
    #[arg(long, value_name = "EVENT.json")]
    pub webhook: PathBuf,
    /// FlexCI projects and their tags: `{"project": ["tag", ...], ...}` (CuPy's
    /// `.pfnci/config.tags.json`).
    #[arg(long, value_name = "TAGS.json")]
    pub projects: PathBuf,
    /// File holding the webhook secret (less one trailing newline). It is read, then deleted
    /// (unless --keep-password-file), as soon as the command line is parsed. `--secret-file`
    /// is the old spelling.
    /// Needed to send one (not for a dry run, nor for `/test skip`, which sends nothing).
    #[arg(long, alias = "secret-file", value_name = "FILE", value_parser = take_secret_file)]
    pub password_file: Option<SecretString>,
    /// Leave the --password-file in place.
    #[arg(long, alias = "keep-secret-file", requires = "password_file")]
    pub keep_password_file: bool,
    /// FlexCI's base URL (https; plain http only on loopback).
    #[arg(long, default_value = "https://ci.preferred.jp", value_name = "URL")]
    pub flexci_uri: String,
    /// A tag FlexCI does not run (another farm's): a request for only such tags becomes `skip`.
    #[arg(long, value_name = "TAG")]
    pub external_tag: Vec<String>,
    /// Send nothing: write the request to --out instead (`body.json`, its exact bytes, and
    /// `request.json`, its URL and headers). Without --password-file the signatures are left
    /// out.
    #[arg(long, requires = "out")]
    pub dry_run: bool,
    /// The directory --dry-run writes the request into.
    #[arg(long, value_name = "DIR", value_parser = out_dir, requires = "dry_run")]
    pub out: Option<PathBuf>,
    /// File holding a token that may set commit statuses (and, for `/test force-skip`, comment
    /// on the pull request). With it, the statuses CuPy's dispatcher sets are set on --commit:
    /// `<context> (dashboard)`, "Skipped" for each project not dispatched that has no status,
    /// and force-skip's overrides. Read, then deleted (unless --keep-token-file).
    #[arg(long, value_name = "FILE", value_parser = take_token_file, requires_all = ["repo", "commit"])]
    pub token_file: Option<TokenFile>,
    /// Leave the --token-file in place.
    #[arg(long, requires = "token_file")]
    pub keep_token_file: bool,
    /// The repository the statuses go to, `OWNER/NAME`.
    #[arg(long, value_name = "OWNER/NAME", requires = "token_file")]
    pub repo: Option<String>,
    /// The commit the statuses go on (40 hex digits): the pushed commit, or the vouched head
    /// (checked against the request beside --webhook when there is one).
    #[arg(long, value_name = "SHA", requires = "token_file")]
    pub commit: Option<String>,
    /// The statuses' context prefix.
    #[arg(long, default_value = "pfn-public-ci", value_name = "PREFIX")]
    pub flexci_context: String,
    /// GitHub API base URL (GitHub Enterprise, tests).
    #[arg(long, default_value = "https://api.github.com", value_name = "URL")]
    pub api_url: String,
    #[command(flatten)]
    pub common: Common,
}

/// The dispatch `--password-file` value parser. Like a token file, the file was read (and removed) before
/// clap ran; only one trailing line ending is dropped, since every other byte is signed with.
fn take_secret_file(value: &str) -> Result<SecretString, String> {
    let path = PathBuf::from(value);
    let text = crate::token_files::contents(&path)?;
    let secret = text
        .strip_suffix("\r\n")
        .or_else(|| text.strip_suffix('\n'))
        .unwrap_or(&text);
    if secret.is_empty() {
        return Err(format!("the secret file {path:?} is empty"));
    }
    Ok(SecretString::from(secret))
}

#[derive(Args, Debug)]
pub struct DispatchRepositoryArgs {
    /// The repository that receives the event, `OWNER/NAME`.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: String,
    /// File holding a token that may create the event there (contents: write). It is read,
    /// then deleted (unless --keep-token-file), as soon as the command line is parsed.
    #[arg(long, value_name = "FILE", value_parser = take_token_file)]
    pub token_file: TokenFile,
    /// Leave the --token-file in place.
    #[arg(long)]
    pub keep_token_file: bool,
    /// GitHub API base URL (GitHub Enterprise, tests).
    #[arg(long, default_value = "https://api.github.com", value_name = "URL")]
    pub api_url: String,
    /// The event's type, what `on: repository_dispatch: types:` matches (1 to 100 characters).
    #[arg(long, value_name = "TYPE")]
    pub event_type: String,
    /// The `client_payload`: a JSON object of at most 10 top-level properties.
    #[arg(long, value_name = "JSON")]
    pub payload_file: PathBuf,
}

#[derive(Args, Debug)]
pub struct FetchCmd {
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// The directory the verified wheels (and their bundles) are written to.
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
    pub out: PathBuf,
}

#[derive(Args, Debug)]
pub struct InstallCmd {
    #[command(flatten)]
    pub fetch: FetchArgs,
    /// The Python whose pip installs the wheels.
    #[arg(long, default_value = "python3", value_name = "PYTHON")]
    pub python: PathBuf,
    /// A directory to keep the verified wheels in, instead of a temporary one.
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
    pub out: Option<PathBuf>,
    /// Also install what the wheels require, with these extras in effect (`test`, `all,test`):
    /// their base `Requires-Dist` and the extras', markers evaluated for --python, in a second
    /// pip call after the verified wheels. Those come from the package index (or wherever the
    /// pip arguments point) and are NOT verified by vouch; they are reported by name and
    /// version. An extra the wheel does not provide installs nothing.
    #[arg(long, value_delimiter = ',', value_name = "EXTRA[,EXTRA...]")]
    pub extras: Vec<String>,
    /// Arguments after `--` go to `pip install` (both calls, with --extras).
    #[arg(last = true)]
    pub pip_args: Vec<String>,
}

#[derive(Args, Debug)]
pub struct PublishCmd {
    /// Files to put in the artifact (wheels and their bundles).
    /// The files the artifact holds (wheels and their bundles).
    #[arg(required = true)]
    pub files: Vec<PathBuf>,
    /// The local artifact store (created if missing).
    #[arg(long, value_name = "DIR")]
    pub store: PathBuf,
    /// The artifact's name.
    #[arg(long, value_name = "NAME")]
    pub name: String,
    /// The repository the run belongs to.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: String,
    /// The workflow file the run ran.
    #[arg(long, default_value = ".github/workflows/ci.yml", value_name = "PATH")]
    pub workflow: String,
    /// The workflow's id (what runs are pinned to).
    #[arg(long, default_value_t = 1, value_name = "ID")]
    pub workflow_id: u64,
    /// The run that uploaded the artifact.
    #[arg(long, value_name = "ID")]
    pub run_id: u64,
    /// The run's event.
    #[arg(long, default_value = "push")]
    pub event: String,
    /// The run's head commit, 40 hex.
    #[arg(long, value_name = "SHA")]
    pub sha: String,
    /// The pull request the run built, if any.
    #[arg(long, value_name = "N")]
    pub pr: Option<u64>,
    /// The branch the run's head is on (a signer run's: the default branch).
    #[arg(long, value_name = "BRANCH")]
    pub head_branch: Option<String>,
    /// The repository's default branch, recorded when the store has no repository.json yet.
    #[arg(long, default_value = "main", value_name = "BRANCH")]
    pub default_branch: String,
}

#[derive(Subcommand, Debug)]
pub enum PrRunCommand {
    /// Check a finished pull-request build run, its /test request and its pull request through
    /// the API; write the matrix of its artifacts to sign and the request it was built for.
    Pin(PrRunPinArgs),
    /// Pin again, then download one artifact of the run by id and sign exactly its one wheel
    /// with a pr-build statement.
    Sign(PrRunSignArgs),
}

/// What `pr-run pin` and `pr-run sign` pin.
#[derive(Args, Debug)]
pub struct PrRunArgs {
    /// `OWNER/NAME` of the base repository.
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: String,
    /// The build run (`github.event.workflow_run.id`).
    #[arg(long, value_name = "ID")]
    pub run_id: u64,
    /// File holding the GitHub token (Actions: read). It is read, then deleted (unless
    /// --keep-token-file), as soon as the command line is parsed.
    #[arg(long, value_name = "FILE", value_parser = take_token_file)]
    pub token_file: Option<TokenFile>,
    /// Leave the --token-file in place (for a later step that needs it too).
    #[arg(long, requires = "token_file")]
    pub keep_token_file: bool,
    /// GitHub API base URL (GitHub Enterprise, tests) [default: https://api.github.com].
    #[arg(long, value_name = "URL")]
    pub api_url: Option<String>,
    /// The workflow whose pull_request runs are signed.
    #[arg(long, default_value = vouch_fetch::DEFAULT_BUILD_WORKFLOW, value_name = "PATH")]
    pub build_workflow: String,
    /// The workflow whose default-branch issue_comment runs record /test requests.
    #[arg(
        long,
        default_value = ".github/workflows/vouch-trigger.yml",
        value_name = "PATH"
    )]
    pub trigger_workflow: String,
}

#[derive(Args, Debug)]
pub struct PrRunPinArgs {
    #[command(flatten)]
    pub run: PrRunArgs,
    /// Also write the matrix (`{"include":[{"artifact":NAME},...]}`) to this file.
    #[arg(long, value_name = "FILE")]
    pub matrix_out: Option<PathBuf>,
    /// Write the pinned request record (event.json, request.json) into this directory.
    #[arg(long, value_name = "DIR")]
    pub request_out: Option<PathBuf>,
    #[command(flatten)]
    pub common: Common,
}

#[derive(Args, Debug)]
pub struct PrRunSignArgs {
    #[command(flatten)]
    pub run: PrRunArgs,
    /// The artifact to sign, as the matrix names it (without `unsigned-`).
    #[arg(long, value_name = "NAME")]
    pub artifact: String,
    /// The directory the wheel and `<NAME>.sigstore.json` are written to.
    #[arg(long, value_name = "DIR", value_parser = out_dir)]
    pub out: PathBuf,
    #[command(flatten)]
    pub signer: SignerArgs,
    /// Also record the bundle in the base repository's GitHub attestation store, with the
    /// --token-file token (which then needs `attestations: write`).
    #[arg(long)]
    pub record_github: bool,
    #[command(flatten)]
    pub common: Common,
}

#[cfg(test)]
mod tests {
    use clap::CommandFactory as _;

    use super::Cli;

    /// Every flag and argument a user can see says what it is for: `--help`, the man pages
    /// and the completions all show this text.
    #[test]
    fn every_visible_argument_has_help() {
        fn walk(cmd: &clap::Command, path: &str, missing: &mut Vec<String>) {
            for arg in cmd.get_arguments() {
                let builtin = ["help", "version"].contains(&arg.get_id().as_str());
                if arg.is_hide_set() || builtin || arg.is_global_set() && !path.is_empty() {
                    continue;
                }
                if arg.get_help().is_none() && arg.get_long_help().is_none() {
                    missing.push(format!("{path} {}", arg.get_id()));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), missing);
            }
        }
        let cmd = Cli::command();
        cmd.clone().debug_assert();
        let mut missing = Vec::new();
        walk(&cmd, "", &mut missing);
        assert!(
            missing.is_empty(),
            "arguments without help:\n{}",
            missing.join("\n")
        );
    }

    /// gh's spellings reach the same policy as vouch's own.
    #[test]
    fn gh_attestation_verify_spellings_parse() {
        use clap::Parser as _;
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let gh = Cli::try_parse_from([
            "vouch",
            "verify",
            "w.whl",
            "-b",
            "b.json",
            "-R",
            "cupy/cupy",
            "--signer-workflow",
            "cupy/cupy/.github/workflows/vouch-build.yml",
            "--predicate-type",
            "slsa",
            "--cert-oidc-issuer",
            "https://issuer",
            "--source-ref",
            "refs/heads/main",
            "--source-digest",
            sha,
            "--custom-trusted-root",
            "root.json",
            "--deny-self-hosted-runners",
        ])
        .unwrap();
        let ours = Cli::try_parse_from([
            "vouch",
            "verify",
            "w.whl",
            "--bundle",
            "b.json",
            "--repo",
            "cupy/cupy",
            "--signer-workflow",
            "cupy/cupy/.github/workflows/vouch-build.yml",
            "--predicate-type",
            "slsa",
            "--issuer",
            "https://issuer",
            "--ref",
            "refs/heads/main",
            "--sha",
            sha,
            "--trust-root",
            "root.json",
            "--runner",
            "github-hosted",
        ])
        .unwrap();
        let (super::Command::Verify(gh), super::Command::Verify(ours)) = (gh.command, ours.command)
        else {
            panic!("not verify");
        };
        assert_eq!(gh.bundle, ours.bundle);
        assert_eq!(gh.policy.cli_spec(), ours.policy.cli_spec());
        assert_eq!(gh.policy.trust_root, ours.policy.trust_root);
    }

    /// The renamed flags (one name for one idea) keep their old spellings as hidden aliases:
    /// workflows generated by an older vouch, and scripts, still parse to the same values.
    #[test]
    fn old_spellings_parse_as_the_new_names() {
        use clap::Parser as _;
        let parse = |args: &[&str]| {
            format!(
                "{:?}",
                Cli::try_parse_from(std::iter::once("vouch").chain(args.iter().copied()))
                    .unwrap_or_else(|e| panic!("{args:?}: {e}"))
                    .command
            )
        };
        let sha = "0123456789abcdef0123456789abcdef01234567";
        for (old, new) in [
            (
                vec!["name", "render", "--dist", "d", "--python", "3.12"],
                vec!["name", "render", "--dist", "d", "--python-version", "3.12"],
            ),
            (
                vec!["cache", "check", "--store", "gha", "--scope-from-github"],
                vec![
                    "cache",
                    "check",
                    "--cache-store",
                    "gha",
                    "--scope-from-github",
                ],
            ),
            (
                vec!["cache", "grant", "--store", "redis://a@h:1", "--pr", "1"],
                vec![
                    "cache",
                    "grant",
                    "--cache-store",
                    "redis://a@h:1",
                    "--pr",
                    "1",
                ],
            ),
            (
                vec![
                    "build",
                    "--source",
                    "s",
                    "--out",
                    "o",
                    "--cache-password-file",
                    "p",
                ],
                vec![
                    "build",
                    "--source",
                    "s",
                    "--out",
                    "o",
                    "--password-file",
                    "p",
                ],
            ),
        ] {
            let tail = ["--platform", "linux-64", "--sha", sha];
            let (old, new) = if old[0] == "name" {
                ([old, tail.to_vec()].concat(), [new, tail.to_vec()].concat())
            } else {
                (old, new)
            };
            // (`--json` and `--format json` are two flags selecting one report:
            // `format_json_is_json` holds them to that.)
            assert_eq!(parse(&old), parse(&new), "{old:?} vs {new:?}");
        }
        // Only the new names are shown.
        let help = {
            let mut cmd = Cli::command();
            let cache = cmd.find_subcommand_mut("cache").unwrap();
            cache
                .find_subcommand_mut("check")
                .unwrap()
                .render_help()
                .to_string()
        };
        assert!(
            help.contains("--cache-store") && !help.contains("--store "),
            "{help}"
        );
    }

    /// `--json`, `--format json` and (for audit) `--markdown`/`--format markdown` select the
    /// same report; `--json` with `--format` is refused rather than one silently winning.
    #[test]
    fn format_json_is_json() {
        use clap::Parser as _;
        let verify = |extra: &[&str]| {
            let mut args = vec!["vouch", "verify", "f", "-b", "b", "--repo", "o/r"];
            args.extend_from_slice(extra);
            match Cli::try_parse_from(args).map(|c| c.command) {
                Ok(super::Command::Verify(v)) => Ok(v.common.json()),
                Ok(_) => unreachable!(),
                Err(e) => Err(e.kind()),
            }
        };
        assert_eq!(verify(&[]), Ok(false));
        assert_eq!(verify(&["--json"]), Ok(true));
        assert_eq!(verify(&["--format", "json"]), Ok(true));
        assert_eq!(verify(&["--format=text"]), Ok(false));
        assert_eq!(
            verify(&["--json", "--format", "text"]),
            Err(clap::error::ErrorKind::ArgumentConflict)
        );
        let audit = |extra: &[&str]| {
            let args = [&["vouch", "audit", "d"][..], extra].concat();
            match Cli::try_parse_from(args).unwrap().command {
                super::Command::Audit(a) => a.format(),
                _ => unreachable!(),
            }
        };
        assert_eq!(audit(&[]), super::AuditFormat::Text);
        assert_eq!(audit(&["--json"]), super::AuditFormat::Json);
        assert_eq!(
            audit(&["--format", "markdown"]),
            super::AuditFormat::Markdown
        );
        assert_eq!(audit(&["--markdown"]), super::AuditFormat::Markdown);
    }

    /// Per command, `--out` is a directory or a file; the other kind is refused at parse time,
    /// naming what this command's --out is.
    #[test]
    fn out_is_one_kind_per_command() {
        use clap::Parser as _;
        let dir = tempfile::tempdir().unwrap();
        let file = dir.path().join("f");
        std::fs::write(&file, "x").unwrap();
        let (d, f) = (dir.path().to_str().unwrap(), file.to_str().unwrap());
        let err = |args: &[&str]| match Cli::try_parse_from(args) {
            Ok(_) => panic!("{args:?} parsed"),
            Err(e) => e.to_string(),
        };
        let e = err(&["vouch", "attest", "w.whl", "--out", d, "--local"]);
        assert!(
            e.contains("is a directory; this command's --out is the file it writes"),
            "{e}"
        );
        let e = err(&["vouch", "keygen", "--out", d]);
        assert!(e.contains("the file it writes"), "{e}");
        let e = err(&["vouch", "build", "--source", d, "--out", f]);
        assert!(
            e.contains("is not a directory; this command's --out is the directory"),
            "{e}"
        );
        let e = err(&["vouch", "man", "--out", f]);
        assert!(e.contains("the directory it writes into"), "{e}");
        // And every --out says which in its help.
        fn walk(cmd: &clap::Command, path: &str, bad: &mut Vec<String>) {
            for arg in cmd.get_arguments().filter(|a| a.get_id() == "out") {
                let help = arg.get_help().map(|h| h.to_string()).unwrap_or_default();
                if !help.contains("directory") && !help.contains("file") {
                    bad.push(format!("{path}: {help}"));
                }
            }
            for sub in cmd.get_subcommands() {
                walk(sub, &format!("{path} {}", sub.get_name()), bad);
            }
        }
        let mut bad = Vec::new();
        walk(&Cli::command(), "vouch", &mut bad);
        assert!(bad.is_empty(), "--out without its kind: {bad:?}");
    }
}
