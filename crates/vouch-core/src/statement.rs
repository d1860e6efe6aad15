//! The words a vouch statement is written in, shared by the crate that writes it (attest) and
//! the crates that read it (verify, fetch, audit), so neither side depends on the other.

use serde::{Deserialize, Serialize};

/// in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// SLSA provenance v1, the predicate vouch signs.
pub const PREDICATE_SLSA_V1: &str = "https://slsa.dev/provenance/v1";
/// PyPI's publish attestation, the only predicate a PEP 740 attestation carries.
pub const PREDICATE_PEP740: &str = "https://docs.pypi.org/attestations/publish/v1";
/// vouch's predicate for a pull-request build signed afterwards by a trusted signer workflow
/// (see `docs/pr-build-predicate.md`): [`PrBuildPredicate`].
pub const PREDICATE_PR_BUILD_V1: &str = "https://vouch.build/pr-build/v1";
/// GitHub's workflow build type, which vouch writes.
pub const BUILD_TYPE: &str = "https://actions.github.io/buildtypes/workflow/v1";
/// Every spelling of GitHub's workflow build type a verifier accepts; vouch's own first.
pub const GITHUB_BUILD_TYPES: &[&str] = &[
    BUILD_TYPE,
    "https://slsa-framework.github.io/github-actions-buildtypes/workflow/v1",
];
/// The DSSE payload type of an in-toto statement.
pub const PAYLOAD_TYPE: &str = "application/vnd.in-toto+json";
/// Where vouch's own claims live in the predicate.
pub const VOUCH_CLAIMS_POINTER: &str = "/buildDefinition/internalParameters/vouch";

/// What vouch adds beyond GitHub's build type. A verifier checks these against the
/// certificate and the consumer's policy; they are never trusted alone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct VouchClaims {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_number: Option<u64>,
    /// The PR's head commit; under `pull_request` the run's `GITHUB_SHA` is the merge commit.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pr_head_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub merge_sha: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub artifact_name: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_inputs_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
    /// The epoch stamped on every file, so a rebuild can use the same.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_date_epoch: Option<u64>,
}

impl VouchClaims {
    /// Reads the claims back from a statement's predicate. `Ok(None)` when the statement has
    /// none (another producer's); an error when they are there but not vouch's shape, which a
    /// verifier must refuse rather than read as absent.
    pub fn from_predicate(
        predicate: &serde_json::Value,
    ) -> Result<Option<VouchClaims>, serde_json::Error> {
        predicate
            .pointer(VOUCH_CLAIMS_POINTER)
            .map(VouchClaims::deserialize)
            .transpose()
    }
}

/// The pr-build predicate. Under `pull_request` the build's workflow file is the PR's own, so
/// SLSA provenance naming it as the builder would overclaim; this predicate says what a trusted
/// signer saw instead, keeping apart where each claim comes from: the GitHub API
/// (`buildRun`), a request recorded by a default-branch run (`request`), and the build's own
/// record, which PR code wrote (`reportedByBuild`, data only, never a basis for trust).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct PrBuildPredicate {
    pub build_run: BuildRun,
    pub request: RecordedRequest,
    pub reported_by_build: ReportedByBuild,
    /// Which commit was built: the vouched head, with the base the request saw.
    pub source: BuiltSource,
    /// The signing run as its own environment describes it. Keyless, the certificate says the
    /// same and a verifier holds them to agree; key-signed, it is the only identity there is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub signed_by: Option<SignedBy>,
}

/// The pull_request run that built the wheel, every field read from the GitHub API.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuildRun {
    /// `owner/name`.
    pub repository: String,
    /// `.github/workflows/vouch-build.yml`, without any `@ref`.
    pub workflow_path: String,
    pub workflow_id: u64,
    pub run_id: u64,
    pub run_attempt: u64,
    pub event: String,
    /// The PR head commit the run built (its merge commit is not recorded by the API).
    pub head_sha: String,
    /// `owner/name` the head came from: a fork's for fork PRs.
    pub head_repository: String,
    pub conclusion: String,
    /// The run's artifact the wheel was downloaded from, by id and name (`unsigned-<artifact>`).
    pub artifact_id: u64,
    pub artifact_name: String,
}

/// The `/test` request, as recorded by a default-branch run of the trigger workflow.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecordedRequest {
    pub pr: u64,
    pub comment_id: u64,
    pub author: String,
    pub author_association: String,
    pub head_sha: String,
    pub base_ref: String,
    /// Recorded, never compared: the base branch moves on while a PR is tested.
    pub base_sha: String,
    pub recorded_by_run: u64,
}

/// The only rule a pull-request build is built by: the build workflow checks out
/// `pull_request.head.sha`, the head the `/test` request named, not GitHub's merge commit
/// (`GITHUB_SHA`, which no API reports for a run and which `refs/pull/N/merge` replaces
/// whenever the base moves). Why: `docs/pr-build-predicate.md`, "Which commit is built".
pub const BUILT_FROM_HEAD: &str = "head";

/// Which commit a pull-request build built, and what it was built from. Every field comes
/// from facts a trusted run read from the API (the run's head, the request's base); the farm
/// holds its checkout to `builtSha`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct BuiltSource {
    /// How `builtSha` follows from the others: [`BUILT_FROM_HEAD`].
    pub built_from: String,
    /// The vouched head (`buildRun.headSha`, `request.headSha`).
    pub head_sha: String,
    /// The base branch and its commit when the request was recorded: what the head was
    /// reviewed against, for a reader; not part of the build under [`BUILT_FROM_HEAD`].
    pub base_ref: String,
    pub base_sha: String,
    /// The commit whose tree the wheel's sources are: the tests must run from it.
    pub built_sha: String,
}

/// What the build's record (`<wheel>.build.json`) says. PR code wrote it: reported, not
/// verified by anyone.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct ReportedByBuild {
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cell: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub inputs_digest: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub source_date_epoch: Option<u64>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cache_scope: Option<String>,
}

/// The signing run, in the spellings of the Fulcio certificate's extensions (URIs).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct SignedBy {
    /// `https://github.com/o/r`.
    pub repository: String,
    /// `https://github.com/o/r/.github/workflows/vouch-sign.yml@refs/heads/main`.
    pub workflow: String,
    pub git_ref: String,
    pub sha: String,
    pub event: String,
    /// `https://github.com/o/r/actions/runs/<id>/attempts/<n>`.
    pub invocation: String,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub runner_environment: Option<String>,
}

#[cfg(test)]
mod tests {
    use super::*;
    use serde_json::json;

    #[test]
    fn claims_read_back_as_written() {
        let claims = VouchClaims {
            cell: Some("cuda13x-py3.12-linux-64".into()),
            pr_number: Some(7),
            source_date_epoch: Some(1_700_000_000),
            ..Default::default()
        };
        let predicate = json!({ "buildDefinition": { "internalParameters": { "vouch": claims } } });
        assert_eq!(
            VouchClaims::from_predicate(&predicate).unwrap(),
            Some(claims)
        );
    }

    #[test]
    fn pr_build_predicate_field_names() {
        let p = PrBuildPredicate {
            build_run: BuildRun {
                repository: "o/r".into(),
                workflow_path: ".github/workflows/vouch-build.yml".into(),
                workflow_id: 1,
                run_id: 2,
                run_attempt: 1,
                event: "pull_request".into(),
                head_sha: "h".into(),
                head_repository: "f/r".into(),
                conclusion: "success".into(),
                artifact_id: 3,
                artifact_name: "unsigned-a".into(),
            },
            request: RecordedRequest {
                pr: 7,
                comment_id: 4,
                author: "m".into(),
                author_association: "MEMBER".into(),
                head_sha: "h".into(),
                base_ref: "main".into(),
                base_sha: "b".into(),
                recorded_by_run: 5,
            },
            reported_by_build: ReportedByBuild {
                cell: Some("c".into()),
                ..Default::default()
            },
            source: BuiltSource {
                built_from: BUILT_FROM_HEAD.into(),
                head_sha: "h".into(),
                base_ref: "main".into(),
                base_sha: "b".into(),
                built_sha: "h".into(),
            },
            signed_by: None,
        };
        let v = serde_json::to_value(&p).unwrap();
        assert_eq!(
            v["buildRun"]["workflowPath"],
            ".github/workflows/vouch-build.yml"
        );
        assert_eq!(v["request"]["authorAssociation"], "MEMBER");
        assert_eq!(v["request"]["recordedByRun"], 5);
        assert_eq!(v["reportedByBuild"], json!({ "cell": "c" }));
        assert_eq!(
            v["source"],
            json!({ "builtFrom": "head", "headSha": "h", "baseRef": "main", "baseSha": "b",
                    "builtSha": "h" })
        );
        assert!(v.get("signedBy").is_none());
        assert_eq!(serde_json::from_value::<PrBuildPredicate>(v).unwrap(), p);
    }

    #[test]
    fn absent_unknown_and_malformed_claims() {
        let cases = [
            (json!({}), Ok(None)),
            (
                json!({ "buildDefinition": { "internalParameters": { "vouch": { "later": 1 } } } }),
                Ok(Some(VouchClaims::default())),
            ),
            (
                json!({ "buildDefinition": { "internalParameters": { "vouch": { "pr_number": "7" } } } }),
                Err(()),
            ),
        ];
        for (predicate, expected) in cases {
            let got = VouchClaims::from_predicate(&predicate).map_err(drop);
            assert_eq!(got, expected, "{predicate}");
        }
    }
}
