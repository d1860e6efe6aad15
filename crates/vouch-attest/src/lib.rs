//! Provenance for vouch builds: the run context a build happened in (GitHub Actions or local),
//! the in-toto Statement v1 with a SLSA provenance v1 predicate that describes it (or vouch's
//! pr-build predicate, for pull-request builds a trusted signer signs), and the signers that
//! turn it into a Sigstore bundle.

mod context;
pub mod signer;
mod statement;

pub use context::{ContextError, RunContext};
pub use signer::key::{generate_key, load_key, sign_with_key};
pub use signer::keyless::{
    KeylessServices, ambient_token, job_workflow_ref, sign_keyless, token_from_jwt,
};
pub use signer::{
    PAYLOAD_TYPE, SIGNERS, SignError, Signer, SignerError, SignerInputs, SignerKind, SignerSpec,
    UnknownSigner,
};
/// What every signer returns.
pub use sigstore_types::Bundle;
pub use statement::{Statement, Subject, pr_build_statement, signed_by, statement_for};
pub use vouch_core::statement::{
    BUILD_TYPE, BUILT_FROM_HEAD, BuildRun, BuiltSource, PREDICATE_PR_BUILD_V1, PREDICATE_SLSA_V1,
    PrBuildPredicate, RecordedRequest, ReportedByBuild, STATEMENT_TYPE, SignedBy, VouchClaims,
};
