//! `vouch attest` and `vouch keygen`.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use vouch_attest::{KeylessServices, RunContext, Subject, VouchClaims, statement_for};

use crate::cli::Common;
use crate::output;

#[derive(Args, Debug)]
pub struct AttestArgs {
    /// Files to attest (one subject each, by file name and sha256).
    #[arg(required = true, value_name = "FILE")]
    pub files: Vec<PathBuf>,
    /// Where to write the Sigstore bundle (`.sigstore.json`).
    #[arg(long, value_name = "BUNDLE")]
    pub out: PathBuf,
    /// `sigstore` (keyless: OIDC token -> Fulcio -> Rekor) or `key:PATH` (PKCS#8 P-256 PEM).
    #[arg(long, default_value = "sigstore")]
    pub signer: String,
    #[arg(long, default_value = vouch_attest::sign::PRODUCTION_FULCIO_URL, value_name = "URL")]
    pub fulcio_url: String,
    #[arg(long, default_value = vouch_attest::sign::PRODUCTION_REKOR_URL, value_name = "URL")]
    pub rekor_url: String,
    /// Read the OIDC token from this file (then delete it) instead of the ambient GitHub
    /// Actions token.
    #[arg(long, value_name = "FILE")]
    pub oidc_token_file: Option<PathBuf>,
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub claims: ClaimArgs,
    #[command(flatten)]
    pub common: Common,
}

/// The run context outside GitHub Actions (in Actions it comes from `GITHUB_*`).
#[derive(Args, Debug)]
pub struct ContextArgs {
    /// `OWNER/NAME` (required outside GitHub Actions).
    #[arg(long, value_name = "OWNER/NAME")]
    pub repo: Option<String>,
    /// Source commit (required outside GitHub Actions).
    #[arg(long, value_name = "SHA")]
    pub sha: Option<String>,
    #[arg(long = "ref", default_value = "local", value_name = "REF")]
    pub git_ref: String,
    #[arg(long, default_value = "local", value_name = "PATH")]
    pub workflow: String,
    #[arg(long, default_value = "local")]
    pub event: String,
    #[arg(long, value_name = "ID")]
    pub run_id: Option<String>,
    #[arg(long, default_value = "local")]
    pub runner: String,
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
    #[arg(long, value_name = "NAME")]
    pub artifact_name: Option<String>,
    #[arg(long, value_name = "DIGEST")]
    pub build_inputs_digest: Option<String>,
    #[arg(long, value_name = "SCOPE")]
    pub cache_scope: Option<String>,
    /// The epoch the build used, recorded so `vouch rebuild` can use it too.
    #[arg(long, env = "SOURCE_DATE_EPOCH", value_name = "SECONDS")]
    pub source_date_epoch: Option<u64>,
}

fn run_context(args: &ContextArgs) -> anyhow::Result<RunContext> {
    let in_actions = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
    if in_actions && !args.local {
        let env: BTreeMap<String, String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("GITHUB_") || k == "RUNNER_ENVIRONMENT")
            .collect();
        return RunContext::from_github_env(&env).context("reading the GitHub Actions run context");
    }
    let repository = args
        .repo
        .clone()
        .context("outside GitHub Actions, --repo OWNER/NAME is required")?;
    let sha = args
        .sha
        .clone()
        .context("outside GitHub Actions, --sha is required")?;
    Ok(RunContext {
        server_url: "https://github.com".into(),
        repository,
        workflow_path: args.workflow.clone(),
        git_ref: args.git_ref.clone(),
        sha,
        event_name: args.event.clone(),
        run_id: args.run_id.clone(),
        runner_environment: Some(args.runner.clone()),
        ..RunContext::default()
    })
}

/// Streams a file through sha256.
pub fn hash_file(path: &Path) -> anyhow::Result<vouch_core::Sha256Digest> {
    let mut hasher = vouch_core::Sha256Hasher::new();
    let mut f = std::fs::File::open(path).with_context(|| format!("opening {path:?}"))?;
    std::io::copy(&mut f, &mut hasher).with_context(|| format!("reading {path:?}"))?;
    Ok(hasher.finish())
}

/// Writes a release file (0644) atomically through `vouch_fs`, the one output helper.
pub fn write_atomically(path: &Path, data: &[u8]) -> anyhow::Result<()> {
    vouch_fs::write_atomically(path, data, vouch_fs::Mode::Public)
        .with_context(|| format!("writing {path:?}"))
}

pub fn run(args: AttestArgs) -> anyhow::Result<ExitCode> {
    let ctx = run_context(&args.context)?;
    let mut subjects = Vec::new();
    for f in &args.files {
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .with_context(|| format!("{f:?} has no UTF-8 file name"))?;
        subjects.push(Subject::sha256(name, &hash_file(f)?));
    }
    let claims = VouchClaims {
        cell: args.claims.cell.clone(),
        pr_number: args.claims.pr,
        artifact_name: args.claims.artifact_name.clone(),
        build_inputs_digest: args.claims.build_inputs_digest.clone(),
        cache_scope: args.claims.cache_scope.clone(),
        source_date_epoch: args.claims.source_date_epoch,
        ..VouchClaims::default()
    };
    let statement = statement_for(&ctx, subjects, &claims);

    let bundle = if let Some(key_path) = args.signer.strip_prefix("key:") {
        let pem = std::fs::read_to_string(key_path)
            .with_context(|| format!("reading key {key_path:?}"))?;
        let key = vouch_attest::load_key(&pem, key_path)?;
        vouch_attest::sign_with_key(&statement, &key)?
    } else if args.signer == "sigstore" {
        let services = KeylessServices {
            fulcio_url: args.fulcio_url.clone(),
            rekor_url: args.rekor_url.clone(),
        };
        let rt = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .context("starting the async runtime")?;
        rt.block_on(async {
            let token = match &args.oidc_token_file {
                Some(path) => {
                    let jwt = std::fs::read_to_string(path)
                        .with_context(|| format!("reading the OIDC token file {path:?}"))?;
                    // One use per token file: remove it so later steps of the job cannot reuse it.
                    std::fs::remove_file(path)
                        .with_context(|| format!("removing the OIDC token file {path:?}"))?;
                    vouch_attest::token_from_jwt(&jwt)?
                }
                None => vouch_attest::ambient_token().await?,
            };
            anyhow::Ok(vouch_attest::sign_keyless(&statement, token, &services).await?)
        })?
    } else {
        anyhow::bail!(crate::verify_cmd::UsageError(format!(
            "--signer {:?}: expected `sigstore` or `key:PATH`",
            args.signer
        )));
    };
    let json = bundle.to_json_pretty().context("serializing the bundle")?;
    write_atomically(&args.out, json.as_bytes())?;
    if args.common.json {
        output::json(&serde_json::json!({ "bundle": args.out, "statement": statement }));
    } else {
        for s in &statement.subject {
            output::data(format!("sha256:{}  {}", s.digest["sha256"], s.name));
        }
        output::data(format!("bundle: {}", args.out.display()));
    }
    Ok(ExitCode::SUCCESS)
}

#[derive(Args, Debug)]
pub struct KeygenArgs {
    /// Private key output (PKCS#8 PEM, mode 0600); the public key goes to `<out>.pub`.
    #[arg(long, value_name = "FILE")]
    pub out: PathBuf,
}

pub fn keygen(args: KeygenArgs) -> anyhow::Result<ExitCode> {
    if args.out.exists() {
        anyhow::bail!(crate::verify_cmd::UsageError(format!(
            "{:?} exists; refusing to overwrite a key",
            args.out
        )));
    }
    let (private, public) = vouch_attest::generate_key()?;
    let pub_path = PathBuf::from(format!("{}.pub", args.out.display()));
    write_atomically(&pub_path, public.as_bytes())?;
    // Created 0600 from the start: never a moment when the key is readable by others.
    vouch_fs::write_atomically(&args.out, private.as_bytes(), vouch_fs::Mode::Private)
        .with_context(|| format!("writing {:?}", args.out))?;
    output::data(format!(
        "private key: {}\npublic key:  {}",
        args.out.display(),
        pub_path.display()
    ));
    Ok(ExitCode::SUCCESS)
}
