//! The words a vouch statement is written in, shared by the crate that writes it (attest) and
//! the crates that read it (verify, fetch, audit), so neither side depends on the other.

use serde::{Deserialize, Serialize};

/// in-toto Statement v1.
pub const STATEMENT_TYPE: &str = "https://in-toto.io/Statement/v1";
/// SLSA provenance v1, the predicate vouch signs.
pub const PREDICATE_SLSA_V1: &str = "https://slsa.dev/provenance/v1";
/// PyPI's publish attestation, the only predicate a PEP 740 attestation carries.
pub const PREDICATE_PEP740: &str = "https://docs.pypi.org/attestations/publish/v1";
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
