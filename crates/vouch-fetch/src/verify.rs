//! Verify: each paired wheel against its bundle, under the policy the expectation and the
//! pinned run imply.

use std::path::Path;

use vouch_core::Sha256Digest;
use vouch_verify::{Evidence, Policy, Verified, Verifier, VerifyError};

use crate::pair::Pair;
use crate::{Expectation, RejectKind, Rejection, Trust, VerifyConfig, reject};

/// A wheel that passed, with what was verified about it.
pub(crate) struct VerifiedFile {
    pub pair: Pair,
    pub sha256: Sha256Digest,
    pub verified: Verified,
}

/// Every pair, or the first failure as the candidate's rejection.
pub(crate) fn verify_all(
    pairs: Vec<Pair>,
    artifact_id: u64,
    exp: &Expectation,
    run_id: u64,
    cfg: &VerifyConfig,
    verifier: &Verifier,
) -> Result<Vec<VerifiedFile>, Rejection> {
    pairs
        .into_iter()
        .map(
            |pair| match verify_wheel(&pair.wheel, &pair.bundle, exp, run_id, cfg, verifier) {
                Ok((sha256, verified)) => Ok(VerifiedFile {
                    pair,
                    sha256,
                    verified,
                }),
                Err(e) => {
                    let name = pair
                        .wheel
                        .file_name()
                        .map(|n| n.to_string_lossy().into_owned())
                        .unwrap_or_default();
                    let mut r = reject(
                        artifact_id,
                        Some(run_id),
                        RejectKind::Verify,
                        format!("{name}: {e}"),
                    );
                    r.verify_kind = Some(e.kind);
                    Err(r)
                }
            },
        )
        .collect()
}

fn policy_for(exp: &Expectation, run_id: u64, cfg: &VerifyConfig) -> Policy {
    let pr_build = exp.event == "pull_request";
    Policy {
        repository: Some(exp.repo.clone()),
        build_workflow: Some(exp.workflow.clone()),
        event: Some(exp.event.clone()),
        run_id: Some(run_id.to_string()),
        // Under pull_request the certificate names the merge commit; the head is checked
        // through the statement's pr_head_sha below.
        sha: (!pr_build).then(|| exp.sha.clone()),
        runner: cfg.runner.clone(),
        pr: exp.pr,
        cell: exp.cell.clone(),
        ..Policy::default()
    }
}

fn verify_wheel(
    file: &Path,
    bundle: &Path,
    exp: &Expectation,
    run_id: u64,
    cfg: &VerifyConfig,
    verifier: &Verifier,
) -> Result<(Sha256Digest, Verified), VerifyError> {
    let data = std::fs::read(file).map_err(|e| {
        VerifyError::with_source(
            vouch_verify::ErrorKind::Bundle,
            format!("cannot read the extracted {}", file.display()),
            e,
        )
    })?;
    let digest = Sha256Digest::of(&data);
    let text = std::fs::read_to_string(bundle).map_err(|e| {
        VerifyError::with_source(
            vouch_verify::ErrorKind::Bundle,
            format!("cannot read {}", bundle.display()),
            e,
        )
    })?;
    let evidence: Vec<Evidence> =
        vouch_verify::parse_evidence(&text, &bundle.display().to_string())?;
    let policy = policy_for(exp, run_id, cfg);
    if evidence.is_empty() {
        return Err(VerifyError::new(
            vouch_verify::ErrorKind::Bundle,
            "empty evidence",
        ));
    }
    let mut verified = None;
    for ev in &evidence {
        verified = Some(match &cfg.trust {
            Trust::Key(pem) => vouch_verify::verify_with_key(
                &digest,
                ev,
                pem,
                &policy,
                Some(verifier.trust_root()),
            )?,
            Trust::Keyless => verifier.verify(&digest, ev, &policy)?,
        });
    }
    let verified = verified.expect("evidence is not empty");
    if exp.event == "pull_request" {
        let head = verified
            .statement
            .vouch
            .as_ref()
            .and_then(|v| v["pr_head_sha"].as_str());
        if head != Some(exp.sha.as_str()) {
            return Err(VerifyError::mismatch(
                vouch_verify::ErrorKind::Statement,
                "statement PR head SHA (internalParameters.vouch.pr_head_sha)",
                &exp.sha,
                head,
            ));
        }
    }
    Ok((digest, verified))
}
