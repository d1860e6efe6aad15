//! `vouch attest` and `vouch keygen`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use clap::Args;
use vouch_attest::{KeylessServices, RunContext, Subject, VouchClaims, statement_for};

use crate::cli::Common;
use crate::common::{hash_file, usage, write_atomically};
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
    #[command(flatten)]
    pub context: ContextArgs,
    #[command(flatten)]
    pub claims: ClaimArgs,
    #[command(flatten)]
    pub common: Common,
}

/// An OIDC token read from `--oidc-token-file` (the file is gone by then).
#[derive(Clone, Debug)]
pub struct OidcTokenFile {
    pub path: PathBuf,
    pub jwt: secrecy::SecretString,
}

/// One use per token file: it is removed while the command line is parsed, so neither a later
/// usage error nor a later step of the job leaves it to be reused.
fn take_oidc_token_file(value: &str) -> Result<OidcTokenFile, String> {
    let path = PathBuf::from(value);
    let jwt = crate::token_files::contents(&path)?;
    Ok(OidcTokenFile {
        path,
        jwt: secrecy::SecretString::from(jwt),
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

fn check_sha(flag: &str, sha: &str) -> anyhow::Result<()> {
    if vouch_verify::is_commit_sha(sha) {
        Ok(())
    } else {
        Err(usage(format!(
            "{flag} {sha:?} is not a full commit SHA (40 lowercase hex digits)"
        )))
    }
}

fn run_context(args: &ContextArgs, claims: &ClaimArgs) -> anyhow::Result<RunContext> {
    let in_actions = std::env::var("GITHUB_ACTIONS").is_ok_and(|v| v == "true");
    if in_actions && !args.local {
        // In Actions these come from GITHUB_* and the event payload; a flag that would be
        // overridden silently is refused instead.
        let ignored: Vec<&str> = [
            ("--repo", args.repo.is_some()),
            ("--sha", args.sha.is_some()),
            ("--ref", args.git_ref.is_some()),
            ("--workflow", args.workflow.is_some()),
            ("--event", args.event.is_some()),
            ("--run-id", args.run_id.is_some()),
            ("--runner", args.runner.is_some()),
            ("--pr", claims.pr.is_some()),
            ("--pr-head-sha", claims.pr_head_sha.is_some()),
            ("--merge-sha", claims.merge_sha.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect();
        if !ignored.is_empty() {
            return Err(usage(format!(
                "in GitHub Actions the run context comes from GITHUB_* and the event payload, so {} would be ignored; drop it, or give --local to describe the run with flags only",
                ignored.join(", ")
            )));
        }
        let env: BTreeMap<String, String> = std::env::vars()
            .filter(|(k, _)| k.starts_with("GITHUB_") || k == "RUNNER_ENVIRONMENT")
            .collect();
        return RunContext::from_github_env(&env).context("reading the GitHub Actions run context");
    }
    let repository = args
        .repo
        .clone()
        .ok_or_else(|| usage("outside GitHub Actions, --repo OWNER/NAME is required"))?;
    // Under pull_request the built commit is the merge commit: --merge-sha and --sha name the
    // same thing, and may not disagree.
    let sha = match (&args.sha, &claims.merge_sha) {
        (Some(s), Some(m)) if s != m => {
            return Err(usage(format!(
                "--sha {s} and --merge-sha {m} differ; the statement's commit is the merge commit that was built"
            )));
        }
        (Some(s), _) | (None, Some(s)) => s.clone(),
        (None, None) => {
            return Err(usage(
                "outside GitHub Actions, --sha is required (or --merge-sha for a PR build)",
            ));
        }
    };
    check_sha(
        if args.sha.is_some() {
            "--sha"
        } else {
            "--merge-sha"
        },
        &sha,
    )?;
    if let Some(h) = &claims.pr_head_sha {
        check_sha("--pr-head-sha", h)?;
    }
    let event = match (&args.event, claims.pr) {
        (Some(e), _) => e.clone(),
        (None, Some(_)) => "pull_request".to_owned(),
        (None, None) => "local".to_owned(),
    };
    if event.starts_with("pull_request") {
        // A consumer pins a PR build by its head commit (`fetch --event pull_request --sha HEAD`
        // compares it with pr_head_sha): a PR statement without one could never be fetched.
        let (Some(_), Some(_)) = (claims.pr, &claims.pr_head_sha) else {
            return Err(usage(format!(
                "--event {event}: give --pr N and --pr-head-sha SHA (the pull request and its head commit)"
            )));
        };
    } else if let Some(n) = claims.pr
        && args.event.is_some()
    {
        return Err(usage(format!(
            "--pr {n} claims a pull request build, but --event is {event:?}; use --event pull_request (or leave --event out)"
        )));
    }
    let git_ref = args.git_ref.clone().unwrap_or_else(|| "local".into());
    if let (Some(n), Some(rest)) = (claims.pr, git_ref.strip_prefix("refs/pull/"))
        && rest.split('/').next() != Some(n.to_string().as_str())
    {
        return Err(usage(format!(
            "--ref {git_ref} is another pull request's ref than --pr {n}"
        )));
    }
    Ok(RunContext {
        server_url: "https://github.com".into(),
        repository,
        workflow_path: args.workflow.clone().unwrap_or_else(|| "local".into()),
        git_ref,
        sha,
        event_name: event,
        run_id: args.run_id.map(|r| r.to_string()),
        runner_environment: Some(args.runner.clone().unwrap_or_else(|| "local".into())),
        pr_number: claims.pr,
        pr_head_sha: claims.pr_head_sha.clone(),
        ..RunContext::default()
    })
}

pub fn run(args: AttestArgs) -> anyhow::Result<ExitCode> {
    let key_path = args.signer.strip_prefix("key:");
    if key_path.is_none() && args.signer != "sigstore" {
        return Err(usage(format!(
            "--signer {:?}: expected `sigstore` or `key:PATH`",
            args.signer
        )));
    }
    if key_path.is_some() {
        let keyless_only: Vec<&str> = [
            ("--fulcio-url", args.fulcio_url.is_some()),
            ("--rekor-url", args.rekor_url.is_some()),
            ("--oidc-token-file", args.oidc_token_file.is_some()),
        ]
        .into_iter()
        .filter_map(|(flag, given)| given.then_some(flag))
        .collect();
        if !keyless_only.is_empty() {
            return Err(usage(format!(
                "{} only apply to keyless signing (--signer sigstore), not to --signer {}",
                keyless_only.join(", "),
                args.signer
            )));
        }
    }
    let ctx = run_context(&args.context, &args.claims)?;
    let mut subjects = Vec::new();
    for f in &args.files {
        let name = f.file_name().and_then(|n| n.to_str()).ok_or_else(|| {
            crate::common::UsageError(format!("{f:?}: a subject needs a UTF-8 file name"))
        })?;
        subjects.push(Subject::sha256(name, &hash_file(f)?));
    }
    let claims = VouchClaims {
        cell: args.claims.cell.clone(),
        pr_number: args.claims.pr,
        pr_head_sha: args.claims.pr_head_sha.clone(),
        merge_sha: args.claims.merge_sha.clone(),
        artifact_name: args.claims.artifact_name.clone(),
        build_inputs_digest: args.claims.build_inputs_digest.clone(),
        cache_scope: args.claims.cache_scope.clone(),
        source_date_epoch: args.claims.source_date_epoch,
    };
    let statement = statement_for(&ctx, subjects, &claims);

    let bundle = if let Some(key_path) = key_path {
        let pem = std::fs::read_to_string(key_path)
            .with_context(|| format!("reading key {key_path:?}"))?;
        let key = vouch_attest::load_key(&pem, key_path)?;
        vouch_attest::sign_with_key(&statement, &key)?
    } else {
        let services = KeylessServices {
            fulcio_url: args
                .fulcio_url
                .clone()
                .unwrap_or_else(|| vouch_attest::sign::PRODUCTION_FULCIO_URL.into()),
            rekor_url: args
                .rekor_url
                .clone()
                .unwrap_or_else(|| vouch_attest::sign::PRODUCTION_REKOR_URL.into()),
        };
        let rt = crate::common::runtime()?;
        rt.block_on(async {
            let token = match &args.oidc_token_file {
                Some(f) => {
                    vouch_attest::token_from_jwt(secrecy::ExposeSecret::expose_secret(&f.jwt))
                        .with_context(|| format!("the OIDC token from {:?}", f.path))?
                }
                None => vouch_attest::ambient_token().await?,
            };
            anyhow::Ok(vouch_attest::sign_keyless(&statement, token, &services).await?)
        })?
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
        anyhow::bail!(crate::common::UsageError(format!(
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
