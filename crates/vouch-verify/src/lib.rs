//! Verification: Sigstore bundles (keyless, checked end to end by sigstore-verify: certificate
//! chain at signing time, SCT, inclusion proof, checkpoint, SET, DSSE signature), then the
//! in-toto statement and the consumer's identity policy on the certificate's extensions (SLSA
//! provenance, or vouch's pr-build predicate for PR builds a trusted workflow signed).

mod bundle_for;
mod error;
mod evidence;
mod policy;
mod policy_file;
mod pr_build;
mod root;
mod trust;
pub mod tuf;
mod verify;

pub use bundle_for::{BUNDLE_SUFFIX, BundleScope, bundle_for};
pub use error::{ErrorKind, VerifyError};
pub use evidence::{
    Evidence, EvidenceFormat, kind_of, open_regular, parse_evidence, read_evidence_file,
    read_regular_to_string,
};
pub use policy::{
    GITHUB_ISSUER, Policy, SignerIdentity, StatementSummary, check_statement, is_commit_sha,
    run_id_of,
};
pub use policy_file::{PolicyFile, PolicyFileError, PolicySpec, ProjectPolicy};
pub use pr_build::SIGNER_EVENT;
pub use root::TrustRootSource;
pub use trust::{Accept, Trust, TrustSpec, check_public_key};
pub use verify::{Checks, Verified, claimed_identity};
pub use vouch_core::statement::{
    PREDICATE_PEP740, PREDICATE_PR_BUILD_V1, PrBuildPredicate, VouchClaims,
};
