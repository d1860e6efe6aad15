//! The pr-build predicate (`https://vouch.build/pr-build/v1`): what must hold for a statement
//! a trusted signer made about a pull-request build. The signer is the trust anchor, so it
//! must be named down to its ref and must have run as `workflow_run` (from the default branch,
//! in the base repository's context); the build run and the request it describes must be the
//! ones the consumer expects. Claims the build reported about itself are never held to the
//! policy as facts, except the cell, which is compared and labelled as reported.

use serde_json::Value;
use vouch_core::statement::{BUILT_FROM_HEAD, PrBuildPredicate};

use crate::{ErrorKind, Policy, SignerIdentity, VerifyError};

/// The one event a pr-build signer runs under: `workflow_run` runs the default branch's
/// workflow file in the base repository, whatever the PR changed.
pub const SIGNER_EVENT: &str = "workflow_run";

/// Parses and checks the predicate of a pr-build statement; `id` is the certificate's identity
/// (keyless) or `None` (key-signed, held to the statement's own `signedBy` later).
pub(crate) fn check(
    predicate: &Value,
    policy: &Policy,
    id: Option<&SignerIdentity>,
) -> Result<PrBuildPredicate, VerifyError> {
    let p: PrBuildPredicate = serde_json::from_value(predicate.clone()).map_err(|e| {
        VerifyError::with_source(
            ErrorKind::Statement,
            "the predicate is not vouch's pr-build/v1 predicate",
            e,
        )
    })?;
    check_consistent(&p)?;
    if let (Some(id), Some(signed)) = (id, &p.signed_by) {
        agree_with_certificate(signed, id)?;
    }
    check_signer(&p, policy, id)?;
    check_policy(&p, policy)?;
    Ok(p)
}

fn statement_mismatch(claim: &str, expected: &str, found: &str) -> VerifyError {
    VerifyError::mismatch(ErrorKind::Statement, claim, expected, Some(found))
}

/// What the predicate means, whoever reads it: a successful pull_request build of the
/// requested head.
fn check_consistent(p: &PrBuildPredicate) -> Result<(), VerifyError> {
    let run = &p.build_run;
    if run.event != "pull_request" {
        return Err(statement_mismatch(
            "statement buildRun.event",
            "pull_request",
            &run.event,
        ));
    }
    if run.conclusion != "success" {
        return Err(statement_mismatch(
            "statement buildRun.conclusion",
            "success",
            &run.conclusion,
        ));
    }
    if p.request.head_sha != run.head_sha {
        return Err(statement_mismatch(
            "statement request.headSha (the head the /test request named)",
            &run.head_sha,
            &p.request.head_sha,
        ));
    }
    check_source(p)
}

/// `source` says which commit was built. The one rule a build follows is [`BUILT_FROM_HEAD`]:
/// the built commit is the vouched head, so a statement naming any other commit (or another
/// rule, which this verifier cannot check) describes a build the chain does not cover.
fn check_source(p: &PrBuildPredicate) -> Result<(), VerifyError> {
    let s = &p.source;
    let pairs = [
        ("statement source.builtFrom", BUILT_FROM_HEAD, &s.built_from),
        (
            "statement source.headSha (the vouched head)",
            &p.build_run.head_sha,
            &s.head_sha,
        ),
        (
            "statement source.builtSha (built from the head)",
            &p.build_run.head_sha,
            &s.built_sha,
        ),
        (
            "statement source.baseSha (the base the request recorded)",
            &p.request.base_sha,
            &s.base_sha,
        ),
        ("statement source.baseRef", &p.request.base_ref, &s.base_ref),
    ];
    for (claim, expected, found) in pairs {
        if expected != found {
            return Err(statement_mismatch(claim, expected, found));
        }
    }
    Ok(())
}

/// `signedBy` is written by the signing run; the certificate by Fulcio from its OIDC token.
/// Where both speak they must agree.
fn agree_with_certificate(
    signed: &vouch_core::statement::SignedBy,
    id: &SignerIdentity,
) -> Result<(), VerifyError> {
    let pairs = [
        ("signedBy.repository", &signed.repository, &id.repository),
        ("signedBy.workflow", &signed.workflow, &id.signer_workflow),
        ("signedBy.gitRef", &signed.git_ref, &id.git_ref),
        ("signedBy.sha", &signed.sha, &id.sha),
        ("signedBy.event", &signed.event, &id.event),
        ("signedBy.invocation", &signed.invocation, &id.run),
    ];
    for (claim, stated, cert) in pairs {
        if let Some(c) = cert
            && c != stated
        {
            return Err(VerifyError::new(
                ErrorKind::Statement,
                format!(
                    "statement claim {claim} = {stated:?} disagrees with the certificate's {c:?}"
                ),
            ));
        }
    }
    Ok(())
}

/// The signer must be pinned: its workflow with a ref (a PR can edit the file on its own
/// branch, and a run of that copy signs under `@refs/pull/...`), triggered by `workflow_run`.
fn check_signer(
    p: &PrBuildPredicate,
    policy: &Policy,
    id: Option<&SignerIdentity>,
) -> Result<(), VerifyError> {
    match policy.signer_workflow.as_deref() {
        Some(w) if w.contains('@') => {}
        other => {
            return Err(VerifyError::new(
                ErrorKind::Policy,
                format!(
                    "a pr-build statement is only as trustworthy as the workflow that signed it: \
                     name it with its ref (signer workflow \
                     .github/workflows/vouch-sign.yml@refs/heads/<default branch>), not {}",
                    other.map_or_else(|| "nothing".to_owned(), |w| format!("{w:?}"))
                ),
            ));
        }
    }
    let (event, label) = match id {
        Some(id) => (id.event.as_deref(), "build trigger (OID .1.20)"),
        None => (
            p.signed_by.as_ref().map(|s| s.event.as_str()),
            "build trigger (statement claim signedBy.event)",
        ),
    };
    if event != Some(SIGNER_EVENT) {
        return Err(VerifyError::mismatch(
            ErrorKind::Policy,
            &format!("{label} of a pr-build signer"),
            SIGNER_EVENT,
            event,
        ));
    }
    Ok(())
}

/// The consumer's expectations about the build the statement describes.
fn check_policy(p: &PrBuildPredicate, policy: &Policy) -> Result<(), VerifyError> {
    let eq = |claim: &str, expected: Option<&str>, found: &str| match expected {
        Some(e) if e != found => Err(VerifyError::mismatch(
            ErrorKind::Policy,
            claim,
            e,
            Some(found),
        )),
        _ => Ok(()),
    };
    let run = &p.build_run;
    eq(
        "statement buildRun.repository",
        policy.repository.as_deref(),
        &run.repository,
    )?;
    eq(
        "statement request.pr",
        policy.pr.map(|n| n.to_string()).as_deref(),
        &p.request.pr.to_string(),
    )?;
    eq(
        "statement buildRun.headSha",
        policy.pr_head_sha.as_deref(),
        &run.head_sha,
    )?;
    let build_path = policy
        .pr_build_workflow
        .as_deref()
        .map(|w| w.split('@').next().unwrap_or(w));
    eq(
        "statement buildRun.workflowPath",
        build_path,
        &run.workflow_path,
    )?;
    if let Some(expected) = &policy.cell {
        let found = p.reported_by_build.cell.as_deref();
        if found != Some(expected.as_str()) {
            return Err(VerifyError::mismatch(
                ErrorKind::Policy,
                "statement reportedByBuild.cell (reported by the build)",
                expected,
                found,
            ));
        }
    }
    Ok(())
}

/// What a reader of a verified pr-build statement must know about its claims.
pub(crate) fn notes(statement: &crate::StatementSummary) -> Option<String> {
    statement.pr_build.as_ref().map(|p| {
        format!(
            "pull-request build: run {} of {} (event pull_request, head {} from {}) signed by a \
             trusted workflow_run signer; reportedByBuild (cell, inputs digest, epoch, cache \
             scope) is what the PR's own build reported, not verified",
            p.build_run.run_id,
            p.build_run.workflow_path,
            p.build_run.head_sha,
            p.build_run.head_repository
        )
    })
}

/// The identity a key-signed pr-build statement claims for its signer (its `signedBy`).
pub(crate) fn claimed_signer(predicate: &Value) -> Option<SignerIdentity> {
    let signed: vouch_core::statement::SignedBy =
        serde_json::from_value(predicate.get("signedBy")?.clone()).ok()?;
    Some(SignerIdentity {
        issuer: None,
        san: None,
        repository: Some(signed.repository),
        git_ref: Some(signed.git_ref),
        sha: Some(signed.sha),
        // A workflow_run run is a top-level run of the signer file: signer and build config
        // are the same workflow.
        signer_workflow: Some(signed.workflow.clone()),
        build_workflow: Some(signed.workflow),
        event: Some(signed.event),
        run: Some(signed.invocation),
        runner: signed.runner_environment,
    })
}

#[cfg(test)]
mod tests {
    use serde_json::json;
    use vouch_core::statement::{
        BuildRun, BuiltSource, RecordedRequest, ReportedByBuild, SignedBy,
    };

    use super::*;
    use crate::GITHUB_ISSUER;

    const REPO: &str = "https://github.com/o/r";
    const HEAD: &str = "1111111111111111111111111111111111111111";
    const MAIN: &str = "5555555555555555555555555555555555555555";
    const SIGNER: &str = "https://github.com/o/r/.github/workflows/vouch-sign.yml@refs/heads/main";

    fn predicate() -> PrBuildPredicate {
        PrBuildPredicate {
            build_run: BuildRun {
                repository: "o/r".into(),
                workflow_path: ".github/workflows/vouch-build.yml".into(),
                workflow_id: 11,
                run_id: 700,
                run_attempt: 1,
                event: "pull_request".into(),
                head_sha: HEAD.into(),
                head_repository: "fork/r".into(),
                conclusion: "success".into(),
                artifact_id: 1001,
                artifact_name: format!("unsigned-d-py3.12-linux-64-pr7-{HEAD}"),
            },
            request: RecordedRequest {
                pr: 7,
                comment_id: 99,
                author: "maintainer".into(),
                author_association: "MEMBER".into(),
                head_sha: HEAD.into(),
                base_ref: "main".into(),
                base_sha: MAIN.into(),
                recorded_by_run: 650,
            },
            reported_by_build: ReportedByBuild {
                cell: Some("c1".into()),
                ..Default::default()
            },
            source: BuiltSource {
                built_from: BUILT_FROM_HEAD.into(),
                head_sha: HEAD.into(),
                base_ref: "main".into(),
                base_sha: MAIN.into(),
                built_sha: HEAD.into(),
            },
            signed_by: Some(SignedBy {
                repository: REPO.into(),
                workflow: SIGNER.into(),
                git_ref: "refs/heads/main".into(),
                sha: MAIN.into(),
                event: "workflow_run".into(),
                invocation: format!("{REPO}/actions/runs/900/attempts/1"),
                runner_environment: Some("github-hosted".into()),
            }),
        }
    }

    /// The certificate of the sign run the predicate names.
    fn cert() -> SignerIdentity {
        SignerIdentity {
            issuer: Some(GITHUB_ISSUER.into()),
            san: Some(SIGNER.into()),
            ..claimed_signer(&json!(predicate())).unwrap()
        }
    }

    fn policy() -> Policy {
        Policy {
            repository: Some("o/r".into()),
            signer_workflow: Some(".github/workflows/vouch-sign.yml@refs/heads/main".into()),
            pr: Some(7),
            pr_head_sha: Some(HEAD.into()),
            pr_build_workflow: Some(".github/workflows/vouch-build.yml".into()),
            cell: Some("c1".into()),
            ..Policy::default()
        }
    }

    #[test]
    fn the_expected_build_passes() {
        let p = check(&json!(predicate()), &policy(), Some(&cert())).unwrap();
        assert_eq!(p.request.pr, 7);
        // Key-signed: the statement's own signedBy names the trigger.
        check(&json!(predicate()), &policy(), None).unwrap();
    }

    /// One edit of the predicate, the policy or the certificate; the kind and the words of the
    /// refusal.
    #[test]
    fn each_refusal() {
        type Edit = fn(&mut Value, &mut Policy, &mut SignerIdentity);
        let cases: &[(&str, Edit, ErrorKind, &str)] = &[
            (
                "not the predicate's shape",
                |v, _, _| v["request"]["pr"] = json!("7"),
                ErrorKind::Statement,
                "not vouch's pr-build/v1 predicate",
            ),
            (
                "a push build",
                |v, _, _| v["buildRun"]["event"] = json!("push"),
                ErrorKind::Statement,
                "statement buildRun.event: expected \"pull_request\", found \"push\"",
            ),
            (
                "a failed build",
                |v, _, _| v["buildRun"]["conclusion"] = json!("failure"),
                ErrorKind::Statement,
                "statement buildRun.conclusion",
            ),
            (
                "a request for another head",
                |v, _, _| v["request"]["headSha"] = json!("2".repeat(40)),
                ErrorKind::Statement,
                "statement request.headSha",
            ),
            (
                "issue 32: a statement without the built commit",
                |v, _, _| drop(v.as_object_mut().unwrap().remove("source")),
                ErrorKind::Statement,
                "not vouch's pr-build/v1 predicate",
            ),
            (
                "issue 32: built by a rule this verifier does not know",
                |v, _, _| v["source"]["builtFrom"] = json!("merge"),
                ErrorKind::Statement,
                "statement source.builtFrom: expected \"head\", found \"merge\"",
            ),
            (
                "issue 32: another head",
                |v, _, _| v["source"]["headSha"] = json!("2".repeat(40)),
                ErrorKind::Statement,
                "statement source.headSha (the vouched head): expected \"1111",
            ),
            (
                "issue 32: built another commit than the head",
                |v, _, _| v["source"]["builtSha"] = json!("2".repeat(40)),
                ErrorKind::Statement,
                "statement source.builtSha (built from the head): expected \"1111",
            ),
            (
                "issue 32: another base than the request's",
                |v, _, _| v["source"]["baseSha"] = json!("2".repeat(40)),
                ErrorKind::Statement,
                "statement source.baseSha (the base the request recorded): expected \"5555",
            ),
            (
                "issue 32: another base branch than the request's",
                |v, _, _| v["source"]["baseRef"] = json!("v14"),
                ErrorKind::Statement,
                "statement source.baseRef: expected \"main\", found \"v14\"",
            ),
            (
                "signedBy lies about the run",
                |v, _, _| {
                    v["signedBy"]["invocation"] =
                        json!(format!("{REPO}/actions/runs/901/attempts/1"))
                },
                ErrorKind::Statement,
                "signedBy.invocation = \"https://github.com/o/r/actions/runs/901/attempts/1\" disagrees with the certificate's",
            ),
            (
                "signer not pinned to a ref",
                |_, p, _| p.signer_workflow = Some(".github/workflows/vouch-sign.yml".into()),
                ErrorKind::Policy,
                "name it with its ref",
            ),
            (
                "no signer named",
                |_, p, _| p.signer_workflow = None,
                ErrorKind::Policy,
                "not nothing",
            ),
            (
                "signed by a pull_request run",
                |v, _, c| {
                    c.event = Some("pull_request".into());
                    v["signedBy"]["event"] = json!("pull_request");
                },
                ErrorKind::Policy,
                "build trigger (OID .1.20) of a pr-build signer: expected \"workflow_run\", found \"pull_request\"",
            ),
            (
                "another repository's build",
                |v, _, _| v["buildRun"]["repository"] = json!("x/r"),
                ErrorKind::Policy,
                "statement buildRun.repository: expected \"o/r\", found \"x/r\"",
            ),
            (
                "another PR",
                |_, p, _| p.pr = Some(8),
                ErrorKind::Policy,
                "statement request.pr: expected \"8\", found \"7\"",
            ),
            (
                "another head",
                |_, p, _| p.pr_head_sha = Some("3".repeat(40)),
                ErrorKind::Policy,
                "statement buildRun.headSha",
            ),
            (
                "built by another workflow",
                |v, _, _| v["buildRun"]["workflowPath"] = json!(".github/workflows/other.yml"),
                ErrorKind::Policy,
                "statement buildRun.workflowPath: expected \".github/workflows/vouch-build.yml\"",
            ),
            (
                "another cell",
                |_, p, _| p.cell = Some("c2".into()),
                ErrorKind::Policy,
                "statement reportedByBuild.cell (reported by the build): expected \"c2\", found \"c1\"",
            ),
        ];
        for (what, edit, kind, words) in cases {
            let (mut v, mut p, mut c) = (json!(predicate()), policy(), cert());
            edit(&mut v, &mut p, &mut c);
            let e = check(&v, &p, Some(&c)).unwrap_err();
            assert_eq!(e.kind, *kind, "{what}: {}", e.message);
            assert!(e.message.contains(words), "{what}: {}", e.message);
        }
    }

    #[test]
    fn key_signed_without_signed_by_names_no_trigger() {
        let mut v = json!(predicate());
        v.as_object_mut().unwrap().remove("signedBy");
        let e = check(&v, &policy(), None).unwrap_err();
        assert!(
            e.message.contains("statement claim signedBy.event")
                && e.message.contains("nothing (claim absent)"),
            "{}",
            e.message
        );
        assert_eq!(claimed_signer(&v), None);
    }
}
