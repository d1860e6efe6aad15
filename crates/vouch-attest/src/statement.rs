//! in-toto Statement v1 with a SLSA provenance v1 predicate in GitHub's workflow build type,
//! plus vouch's own claims under `internalParameters.vouch`; and, for pull-request builds
//! signed by the trusted signer workflow, the same statement with vouch's pr-build predicate.

use serde::{Deserialize, Serialize};
use serde_json::{Value, json};
use vouch_core::Sha256Digest;
use vouch_core::statement::{
    BUILD_TYPE, PREDICATE_PR_BUILD_V1, PREDICATE_SLSA_V1, PrBuildPredicate, STATEMENT_TYPE,
    SignedBy, VouchClaims,
};

use crate::RunContext;

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Subject {
    pub name: String,
    pub digest: std::collections::BTreeMap<String, String>,
}

impl Subject {
    pub fn sha256(name: impl Into<String>, digest: &Sha256Digest) -> Subject {
        Subject {
            name: name.into(),
            digest: [("sha256".to_owned(), digest.hex())].into(),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct Statement {
    #[serde(rename = "_type")]
    pub statement_type: String,
    pub subject: Vec<Subject>,
    #[serde(rename = "predicateType")]
    pub predicate_type: String,
    pub predicate: Value,
}

/// Builds the statement for `subjects` produced in `ctx`.
pub fn statement_for(ctx: &RunContext, subjects: Vec<Subject>, claims: &VouchClaims) -> Statement {
    let mut github = json!({ "event_name": ctx.event_name });
    for (key, value) in [
        ("repository_id", &ctx.repository_id),
        ("repository_owner_id", &ctx.repository_owner_id),
        ("runner_environment", &ctx.runner_environment),
    ] {
        if let Some(v) = value {
            github[key] = json!(v);
        }
    }
    let mut claims = claims.clone();
    if ctx.event_name.starts_with("pull_request") {
        claims.pr_number = claims.pr_number.or(ctx.pr_number);
        claims.pr_head_sha = claims.pr_head_sha.or_else(|| ctx.pr_head_sha.clone());
        claims.merge_sha = claims.merge_sha.or_else(|| Some(ctx.sha.clone()));
    }
    // GitHub's own provenance (actions/attest-build-provenance, since 2024-06) names the
    // signing job's workflow as the builder; without a token to read it from, the runner.
    let builder = match (&ctx.job_workflow_ref, ctx.runner_environment.as_deref()) {
        (Some(job), _) => format!("{}/{job}", ctx.server_url),
        (None, Some("github-hosted") | None) => {
            format!("{}/actions/runner/github-hosted", ctx.server_url)
        }
        (None, Some(other)) => format!("{}/actions/runner/{other}", ctx.server_url),
    };
    let mut metadata = json!({});
    if let Some(id) = ctx.invocation_id() {
        metadata["invocationId"] = json!(id);
    }
    let predicate = json!({
        "buildDefinition": {
            "buildType": BUILD_TYPE,
            "externalParameters": {
                "workflow": {
                    "ref": ctx.git_ref,
                    "repository": ctx.repository_uri(),
                    "path": ctx.workflow_path,
                }
            },
            "internalParameters": {
                "github": github,
                "vouch": claims,
            },
            "resolvedDependencies": [{
                "uri": format!("git+{}@{}", ctx.repository_uri(), ctx.git_ref),
                "digest": { "gitCommit": ctx.sha },
            }],
        },
        "runDetails": {
            "builder": { "id": builder },
            "metadata": metadata,
        }
    });
    Statement {
        statement_type: STATEMENT_TYPE.to_owned(),
        subject: subjects,
        predicate_type: PREDICATE_SLSA_V1.to_owned(),
        predicate,
    }
}

/// The statement a trusted signer makes about one wheel of a pull-request build.
pub fn pr_build_statement(subject: Subject, predicate: &PrBuildPredicate) -> Statement {
    Statement {
        statement_type: STATEMENT_TYPE.to_owned(),
        subject: vec![subject],
        predicate_type: PREDICATE_PR_BUILD_V1.to_owned(),
        predicate: serde_json::to_value(predicate).expect("plain data serializes"),
    }
}

/// The signing run as `ctx` describes it, in the certificate's spellings.
pub fn signed_by(ctx: &RunContext) -> SignedBy {
    SignedBy {
        repository: ctx.repository_uri(),
        workflow: format!(
            "{}/{}@{}",
            ctx.repository_uri(),
            ctx.workflow_path,
            ctx.git_ref
        ),
        git_ref: ctx.git_ref.clone(),
        sha: ctx.sha.clone(),
        event: ctx.event_name.clone(),
        invocation: ctx.invocation_id().unwrap_or_default(),
        runner_environment: ctx.runner_environment.clone(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pull_request_statement() {
        let ctx = RunContext {
            server_url: "https://github.com".into(),
            repository: "cupy/cupy".into(),
            repository_id: Some("1".into()),
            repository_owner_id: Some("2".into()),
            workflow_path: ".github/workflows/ci.yml".into(),
            git_ref: "refs/pull/7/merge".into(),
            sha: "2222222222222222222222222222222222222222".into(),
            event_name: "pull_request".into(),
            run_id: Some("5".into()),
            run_attempt: Some("1".into()),
            runner_environment: Some("github-hosted".into()),
            pr_number: Some(7),
            pr_head_sha: Some("1111111111111111111111111111111111111111".into()),
            job_workflow_ref: None,
        };
        let claims = VouchClaims {
            cell: Some("cuda13x-py3.12-linux-64".into()),
            cache_scope: Some("pr/7".into()),
            ..Default::default()
        };
        let st = statement_for(
            &ctx,
            vec![Subject::sha256(
                "cupy_cuda13x-14.2.0-cp312-cp312-linux_x86_64.whl",
                &Sha256Digest::of(b"wheel"),
            )],
            &claims,
        );
        insta::assert_json_snapshot!(st);
        // With the signing token's job workflow (a reusable one here), the builder is that
        // workflow, as in GitHub's own provenance; the top-level workflow stays the path.
        let reusable = RunContext {
            job_workflow_ref: Some("cupy/ci/.github/workflows/build.yml@refs/tags/v1".into()),
            ..ctx
        };
        let st = statement_for(&reusable, vec![], &claims);
        assert_eq!(
            st.predicate["runDetails"]["builder"]["id"],
            "https://github.com/cupy/ci/.github/workflows/build.yml@refs/tags/v1"
        );
        assert_eq!(
            st.predicate["buildDefinition"]["externalParameters"]["workflow"]["path"],
            ".github/workflows/ci.yml"
        );
    }

    /// The pr-build statement: one subject, the predicate as given, and `signedBy` in the
    /// certificate's spellings for the signing run's context.
    #[test]
    fn pr_build_statement_and_its_signer() {
        use vouch_core::statement::{
            BUILT_FROM_HEAD, BuildRun, BuiltSource, RecordedRequest, ReportedByBuild,
        };
        let ctx = RunContext {
            server_url: "https://github.com".into(),
            repository: "cupy/cupy".into(),
            workflow_path: ".github/workflows/vouch-sign.yml".into(),
            git_ref: "refs/heads/main".into(),
            sha: "5555555555555555555555555555555555555555".into(),
            event_name: "workflow_run".into(),
            run_id: Some("900".into()),
            run_attempt: Some("2".into()),
            runner_environment: Some("github-hosted".into()),
            ..RunContext::default()
        };
        let signed = signed_by(&ctx);
        assert_eq!(
            signed.workflow,
            "https://github.com/cupy/cupy/.github/workflows/vouch-sign.yml@refs/heads/main"
        );
        assert_eq!(
            signed.invocation,
            "https://github.com/cupy/cupy/actions/runs/900/attempts/2"
        );
        let predicate = PrBuildPredicate {
            build_run: BuildRun {
                repository: "cupy/cupy".into(),
                workflow_path: ".github/workflows/vouch-build.yml".into(),
                workflow_id: 11,
                run_id: 700,
                run_attempt: 1,
                event: "pull_request".into(),
                head_sha: "1111111111111111111111111111111111111111".into(),
                head_repository: "contributor/cupy".into(),
                conclusion: "success".into(),
                artifact_id: 2002,
                artifact_name: "unsigned-a".into(),
            },
            request: RecordedRequest {
                pr: 7,
                comment_id: 99,
                author: "maintainer".into(),
                author_association: "MEMBER".into(),
                head_sha: "1111111111111111111111111111111111111111".into(),
                base_ref: "main".into(),
                base_sha: "5555555555555555555555555555555555555555".into(),
                recorded_by_run: 650,
            },
            reported_by_build: ReportedByBuild::default(),
            source: BuiltSource {
                built_from: BUILT_FROM_HEAD.into(),
                head_sha: "1111111111111111111111111111111111111111".into(),
                base_ref: "main".into(),
                base_sha: "5555555555555555555555555555555555555555".into(),
                built_sha: "1111111111111111111111111111111111111111".into(),
            },
            signed_by: Some(signed),
        };
        let st = pr_build_statement(
            Subject::sha256("w.whl", &Sha256Digest::of(b"wheel")),
            &predicate,
        );
        assert_eq!(st.predicate_type, PREDICATE_PR_BUILD_V1);
        assert_eq!(st.subject.len(), 1);
        assert_eq!(
            serde_json::from_value::<PrBuildPredicate>(st.predicate).unwrap(),
            predicate
        );
    }
}
