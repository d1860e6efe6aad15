//! Provenance for vouch builds: the run context a build happened in (GitHub Actions or local)
//! and the in-toto Statement v1 with a SLSA provenance v1 predicate that describes it.

mod context;
mod statement;

pub use context::{ContextError, RunContext};
pub use statement::{
    BUILD_TYPE, PREDICATE_SLSA_V1, STATEMENT_TYPE, Statement, Subject, VouchClaims, statement_for,
};
