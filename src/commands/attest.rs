//! `vouch attest` and `vouch keygen`.

use std::path::PathBuf;
use std::process::ExitCode;

use anyhow::Context as _;
use vouch_attest::{RunContext, Subject, VouchClaims, statement_for};

use crate::cli::{AttestArgs, ClaimArgs, ContextArgs, KeygenArgs};
use crate::common::{hash_file, usage, write_atomically};
use crate::output;

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
    let in_actions = vouch_core::ci::in_github_actions();
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
        return crate::common::github_run_context()?
            .ok_or_else(|| anyhow::anyhow!("in GitHub Actions, yet no run context"));
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
    if let Some(n) = claims.pr
        && git_ref.starts_with("refs/pull/")
        && vouch_core::ci::pull_number(&git_ref) != Some(n)
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

/// The client `--record-github` posts with, checked before anything is signed: a bundle that
/// could not be recorded should not cost a Fulcio certificate and a Rekor entry first.
fn recorder(
    args: &crate::cli::RecordArgs,
    key_signed: bool,
) -> anyhow::Result<Option<vouch_github::GithubClient>> {
    if !args.record_github {
        return Ok(None);
    }
    if key_signed {
        return Err(usage(
            "--record-github needs a keyless (Sigstore) bundle: GitHub's attestation store and `gh attestation verify` take certificates, not keys",
        ));
    }
    if args.github.token_file.is_none() {
        return Err(usage(
            "--record-github needs a token with attestations: write: give --token-file FILE (or GH_TOKEN_FILE)",
        ));
    }
    Ok(Some(args.github.client()?))
}

/// The `gh attestation verify` line that checks what was just recorded.
fn gh_verify_line(
    ctx: &RunContext,
    file: &str,
    predicate_type: &str,
    signer: Option<&str>,
) -> String {
    let mut line = format!("gh attestation verify {file} --repo {}", ctx.repository);
    if let Some(w) = signer {
        line.push_str(&format!(" --signer-workflow {w}"));
    }
    if predicate_type != vouch_attest::PREDICATE_SLSA_V1 {
        line.push_str(&format!(" --predicate-type {predicate_type}"));
    }
    line
}

pub fn run(args: AttestArgs) -> anyhow::Result<ExitCode> {
    let spec = args.signer.spec()?;
    let mut ctx = run_context(&args.context, &args.claims)?;
    let recorder = recorder(&args.record, !spec.kind().keyless)?;
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
    let (signer, job_workflow_ref) = args.signer.build(&spec)?;
    ctx.job_workflow_ref = job_workflow_ref;
    let statement = statement_for(&ctx, subjects, &claims);
    let bundle = crate::common::runtime()?.block_on(signer.sign(&statement))?;
    let json = bundle.to_json_pretty().context("serializing the bundle")?;
    if recorder.is_some() {
        // Before the bundle is written: a refusal leaves nothing behind.
        crate::common::check_recordable(&ctx.server_url, &ctx.repository, &bundle)?;
    }
    write_atomically(&args.out, json.as_bytes())?;
    let recorded = match &recorder {
        Some(client) => {
            let post = crate::common::record_attestation(client, &ctx.repository, &json);
            let id = crate::common::runtime()?.block_on(post).with_context(|| {
                format!(
                    "recording the bundle in {}'s attestation store (the bundle itself is written to {})",
                    ctx.repository,
                    args.out.display()
                )
            })?;
            Some(id)
        }
        None => None,
    };
    let signer = vouch_verify::claimed_identity(&bundle)
        .ok()
        .flatten()
        .and_then(|i| i.san)
        .and_then(|san| {
            san.strip_prefix("https://")
                .map(|s| s.split('@').next().unwrap_or(s).to_owned())
        });
    let first = statement
        .subject
        .first()
        .map_or("FILE", |s| s.name.as_str());
    let gh = gh_verify_line(&ctx, first, &statement.predicate_type, signer.as_deref());
    if args.common.json() {
        let mut doc = serde_json::json!({ "bundle": args.out, "statement": statement });
        if let Some(id) = recorded {
            doc["github_attestation"] = serde_json::json!({
                "id": id,
                "repository": ctx.repository,
                "gh_verify": gh,
            });
        }
        output::json(&doc);
    } else {
        for s in &statement.subject {
            output::data(format!("sha256:{}  {}", s.digest["sha256"], s.name));
        }
        output::data(format!("bundle: {}", args.out.display()));
        if let Some(id) = recorded {
            output::data(format!(
                "recorded in {}'s attestation store as attestation {id}; check it with:\n  {gh}",
                ctx.repository
            ));
        }
    }
    Ok(ExitCode::SUCCESS)
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
