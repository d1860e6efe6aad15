//! Provenance for vouch builds: the run context a build happened in (GitHub Actions or local)
//! and the in-toto Statement v1 with a SLSA provenance v1 predicate that describes it.

mod context;
pub mod sign;
mod statement;

pub use context::{ContextError, RunContext};
pub use sign::{
    KeylessServices, PAYLOAD_TYPE, SignError, ambient_token, generate_key, load_key, sign_keyless,
    sign_with_key, token_from_jwt,
};
pub use statement::{
    BUILD_TYPE, PREDICATE_SLSA_V1, STATEMENT_TYPE, Statement, Subject, VouchClaims, statement_for,
};
