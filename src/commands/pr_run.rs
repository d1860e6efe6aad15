//! `vouch pr-run pin` and `vouch pr-run sign`: the trusted signer of pull-request builds, as
//! the signer workflow (`vouch-sign.yml`, `workflow_run`) runs it.

use std::process::ExitCode;

use anyhow::Context as _;
use serde_json::json;
use vouch_github::GithubClient;
use vouch_prrun::{PinInputs, PinOutcome, Pinned, Refusal};

use crate::cli::{PrRunArgs, PrRunCommand, PrRunPinArgs, PrRunSignArgs};
use crate::common::write_atomically;
use crate::output;

pub fn run(cmd: PrRunCommand) -> anyhow::Result<ExitCode> {
    match cmd {
        PrRunCommand::Pin(args) => pin(args),
        PrRunCommand::Sign(args) => sign(args),
    }
}

impl PrRunArgs {
    fn inputs(&self) -> PinInputs {
        PinInputs {
            repo: self.repo.clone(),
            run_id: self.run_id,
            build_workflow: self.build_workflow.clone(),
            trigger_workflow: self.trigger_workflow.clone(),
        }
    }

    fn client(&self) -> anyhow::Result<GithubClient> {
        let api = self
            .api_url
            .as_deref()
            .unwrap_or(vouch_github::DEFAULT_API_URL);
        Ok(GithubClient::new(
            api,
            self.token_file.as_ref().map(|t| t.token.clone()),
        )?)
    }
}

/// Says what was pinned, on stderr.
fn describe(p: &Pinned) {
    let req = &p.request.request;
    output::note(format!(
        "pinned run {} (pull_request of {} at {}) for #{}: /test by {} ({}), comment {}, recorded by run {}",
        p.run.id,
        p.head_repository,
        p.run.head_sha,
        req.pr,
        req.author,
        req.author_association,
        req.comment_id,
        req.recorded_by_run
    ));
    for s in &p.skipped {
        // The name is the pull request's choice: escaped, it cannot become a workflow command.
        output::annotate_warning(&format!(
            "not signed: {}: {}",
            vouch_prrun::log_safe(&s.artifact),
            s.reason
        ));
    }
}

fn pin(args: PrRunPinArgs) -> anyhow::Result<ExitCode> {
    let gh = args.run.client()?;
    let rt = crate::common::runtime()?;
    let outcome = rt.block_on(vouch_prrun::pin(&gh, &args.run.inputs()))?;
    let (matrix, report) = match &outcome {
        PinOutcome::NothingToSign { run_id } => {
            output::note(format!(
                "run {run_id} uploaded no unsigned-* artifact: nothing to sign"
            ));
            let matrix = vouch_prrun::matrix(std::iter::empty());
            let report = json!({ "signable": false, "run": run_id, "matrix": matrix });
            (matrix, report)
        }
        PinOutcome::Signable(p) => {
            describe(p);
            if let Some(dir) = &args.request_out {
                p.write_request(dir)?;
            }
            let matrix = p.matrix();
            let report = json!({
                "signable": true,
                "run": p.run.id,
                "pr": p.request.request.pr,
                "head_sha": p.run.head_sha,
                "head_repository": p.head_repository,
                "request": p.request.request,
                "request_artifact": p.request_artifact.id,
                "matrix": matrix,
                "skipped": p.skipped,
            });
            (matrix, report)
        }
    };
    if let Some(path) = &args.matrix_out {
        write_atomically(path, matrix.to_string().as_bytes())?;
    }
    if args.common.json() {
        output::json(&report);
    } else {
        output::data(matrix.to_string());
    }
    Ok(ExitCode::SUCCESS)
}

fn sign(args: PrRunSignArgs) -> anyhow::Result<ExitCode> {
    // A bad key or flag fails before any API call.
    let spec = args.signer.spec()?;
    let (signer, _) = args.signer.build(&spec)?;
    let signed_by = crate::common::github_run_context()?.map(|ctx| vouch_attest::signed_by(&ctx));
    if signed_by.is_none() {
        output::note(
            "note: not in GitHub Actions: the statement names no signing run (signedBy); a \
             key-signed bundle then carries no signer identity",
        );
    }
    let gh = args.run.client()?;
    let rt = crate::common::runtime()?;
    let pinned = match rt.block_on(vouch_prrun::pin(&gh, &args.run.inputs()))? {
        PinOutcome::Signable(p) => p,
        PinOutcome::NothingToSign { run_id } => {
            return Err(vouch_prrun::PrRunError::Refused {
                run: run_id,
                refusal: Refusal::NotPinned {
                    artifact: args.artifact.clone(),
                    reason: "the run uploaded no unsigned-* artifact".into(),
                },
            }
            .into());
        }
    };
    describe(&pinned);
    let request = vouch_prrun::SignRequest {
        artifact: &args.artifact,
        out: &args.out,
        signed_by,
    };
    let signed = rt.block_on(vouch_prrun::sign(&gh, &pinned, request, signer.as_ref()))?;
    let recorded = if args.record_github {
        let json = std::fs::read_to_string(&signed.bundle)
            .with_context(|| format!("reading {:?}", signed.bundle))?;
        let evidence = vouch_verify::parse_evidence(&json, &signed.bundle.display().to_string())?;
        let bundle = &evidence
            .first()
            .context("the signed bundle is empty")?
            .bundle;
        let server = std::env::var("GITHUB_SERVER_URL")
            .ok()
            .filter(|s| !s.is_empty())
            .unwrap_or_else(|| "https://github.com".into());
        crate::common::check_recordable(&server, &args.run.repo, bundle)?;
        // On `rt`, the runtime `gh` already made connections on.
        Some(rt.block_on(crate::common::record_attestation(
            &gh,
            &args.run.repo,
            &json,
        ))?)
    } else {
        None
    };
    if args.common.json() {
        let mut doc = serde_json::to_value(&signed)?;
        if let Some(id) = recorded {
            doc["github_attestation"] = json!({ "id": id, "repository": args.run.repo });
        }
        output::json(&doc);
    } else {
        output::data(format!("{}  {}", signed.sha256, signed.wheel.display()));
        output::data(format!("bundle: {}", signed.bundle.display()));
        if let Some(id) = recorded {
            output::data(format!(
                "recorded in {}'s attestation store as attestation {id}",
                args.run.repo
            ));
        }
    }
    output::step_summary(&format!(
        "| vouch pr-run sign | `{}` | #{} at {} (run {}) | `{}` |\n",
        args.artifact, pinned.request.request.pr, pinned.run.head_sha, pinned.run.id, signed.sha256
    ));
    Ok(ExitCode::SUCCESS)
}
