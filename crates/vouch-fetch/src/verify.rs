//! Verify: each paired wheel against its bundle, under the policy the expectation and the
//! pinned run imply: SLSA provenance signed in the build run for a push build; for a
//! pull-request build, a pr-build statement signed by the pinned signer run that names the
//! expected PR, head, build workflow and artifact.

use std::path::Path;

use vouch_core::Sha256Digest;
use vouch_verify::{ErrorKind, Evidence, Policy, Trust, Verified, VerifyError};

use crate::pair::Pair;
use crate::{Expectation, Producer, RejectKind, Rejection, VerifyConfig, reject};

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
    producer: &Producer,
    cfg: &VerifyConfig,
    trust: &Trust,
) -> Result<Vec<VerifiedFile>, Rejection> {
    let policy = policy_for(exp, run_id, producer, cfg);
    pairs
        .into_iter()
        .map(|pair| {
            match verify_wheel(
                &pair.wheel,
                pair.bundle
                    .as_deref()
                    .expect("by_digest gave every pair a bundle"),
                exp,
                &policy,
                trust,
            ) {
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
            }
        })
        .collect()
}

pub(crate) fn policy_for(
    exp: &Expectation,
    run_id: u64,
    producer: &Producer,
    cfg: &VerifyConfig,
) -> Policy {
    let common = Policy {
        repository: Some(exp.repo.clone()),
        run_id: Some(run_id.to_string()),
        runner: cfg.runner.clone(),
        cell: exp.cell.clone(),
        ..Policy::default()
    };
    match (&producer.default_branch, exp.signed_by_signer()) {
        (Some(branch), true) => {
            // The signer's certificate names its own workflow file at the default branch, as
            // signer and as top-level workflow (workflow_run starts it directly).
            let signer = format!("{}@refs/heads/{branch}", exp.signer_workflow);
            Policy {
                signer_workflow: Some(signer.clone()),
                build_workflow: Some(signer),
                event: Some(crate::SIGNER_EVENT.to_owned()),
                predicate_type: vouch_verify::PREDICATE_PR_BUILD_V1.to_owned(),
                pr: exp.pr,
                pr_head_sha: Some(exp.sha.clone()),
                pr_build_workflow: Some(exp.workflow.clone()),
                ..common
            }
        }
        _ => Policy {
            build_workflow: Some(exp.workflow.clone()),
            event: Some(exp.event.clone()),
            sha: Some(exp.sha.clone()),
            ..common
        },
    }
}

pub(crate) fn verify_wheel(
    file: &Path,
    bundle: &Path,
    exp: &Expectation,
    policy: &Policy,
    trust: &Trust,
) -> Result<(Sha256Digest, Verified), VerifyError> {
    let data = std::fs::read(file).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::Bundle,
            format!("cannot read the extracted {}", file.display()),
            e,
        )
    })?;
    let digest = Sha256Digest::of(&data);
    let text = std::fs::read_to_string(bundle).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::Bundle,
            format!("cannot read {}", bundle.display()),
            e,
        )
    })?;
    let verified = verify_evidence(
        &digest,
        &text,
        &bundle.display().to_string(),
        exp,
        policy,
        trust,
    )?;
    Ok((digest, verified))
}

/// The checks [`verify_wheel`] makes, for a wheel of known `digest` and the evidence `text`
/// (named `origin` in messages): what the attestation store's candidates are held to as well.
pub(crate) fn verify_evidence(
    digest: &Sha256Digest,
    text: &str,
    origin: &str,
    exp: &Expectation,
    policy: &Policy,
    trust: &Trust,
) -> Result<Verified, VerifyError> {
    let evidence: Vec<Evidence> = vouch_verify::parse_evidence(text, origin)?;
    if evidence.is_empty() {
        return Err(VerifyError::new(ErrorKind::Bundle, "empty evidence"));
    }
    let mut verified = None;
    for ev in &evidence {
        verified = Some(trust.verify(digest, ev, policy)?);
    }
    let verified = verified.expect("evidence is not empty");
    if let Some(p) = &verified.statement.pr_build {
        // The signer names the build artifact it signed from; it must be the one this name
        // stands for, not another cell's wheel under this artifact's name.
        let want = format!("unsigned-{}", exp.artifact_name);
        if p.build_run.artifact_name != want {
            return Err(VerifyError::mismatch(
                ErrorKind::Policy,
                "statement buildRun.artifactName",
                &want,
                Some(&p.build_run.artifact_name),
            ));
        }
    }
    Ok(verified)
}
