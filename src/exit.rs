//! Exit statuses: the one table. Every code vouch exits with is a [`Status`], each error type a
//! command can return is classified here (with exhaustive matches, so a new variant is a
//! compile error until someone decides its code), and the README's table is checked against
//! [`TABLE`] by a test. An error nobody classified exits [`Status::Internal`], never 1.

use std::process::ExitCode;

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[repr(u8)]
pub enum Status {
    Success = 0,
    Different = 1,
    Usage = 2,
    InvalidInput = 3,
    BuildFailed = 4,
    Environment = 5,
    Io = 6,
    Bundle = 10,
    Certificate = 11,
    TransparencyLog = 12,
    Signature = 13,
    Statement = 14,
    Digest = 15,
    Policy = 16,
    TrustRoot = 17,
    FenceOpen = 20,
    NoRun = 30,
    Download = 31,
    UnsafeArchive = 32,
    InstallFailed = 33,
    WrongCheckout = 34,
    Signing = 40,
    Internal = 70,
}

/// What each code means; the README's "Exit codes" table says the same.
pub const TABLE: &[(Status, &str)] = &[
    (Status::Success, "success (for `diff`/`demo`: identical)"),
    (
        Status::Different,
        "a comparison or verdict came out negative: `diff`/`demo`: the wheels differ; `audit`: not every file verified; `rebuild`: not reproduced; `workflows check`: stale or unsafe",
    ),
    (
        Status::Usage,
        "usage error (bad or conflicting flags, a flag that would be ignored)",
    ),
    (
        Status::InvalidInput,
        "invalid input: malformed wheel, wheel filename, artifact name, project, profile, policy file, key, run context, or a dispatch's event or projects file; `pr-run`: a request record that is not one, or an artifact that does not hold exactly its cell's one wheel",
    ),
    (
        Status::BuildFailed,
        "the build backend or compiler failed (the last 40 lines of its output are shown)",
    ),
    (
        Status::Environment,
        "a tool or service vouch needs is missing, would not start or did not answer (`python3`, ccache, sccache, the cache store, the gateway, auditwheel/delvewheel for a release cell's repair), or the interpreter is not the cell's Python; `dispatch`: FlexCI or GitHub refused the request or did not answer",
    ),
    (Status::Io, "reading or writing a file failed"),
    (
        Status::Bundle,
        "verification: the bundle/attestation is malformed or unsupported",
    ),
    (
        Status::Certificate,
        "verification: certificate (chain, validity at signing time, SCT)",
    ),
    (
        Status::TransparencyLog,
        "verification: transparency log (inclusion proof, checkpoint, SET, integrated time)",
    ),
    (Status::Signature, "verification: signature"),
    (
        Status::Statement,
        "verification: statement (type, predicate type, claims disagreeing with the certificate)",
    ),
    (
        Status::Digest,
        "verification: the file's digest is not a subject; `toolchain install`: a toolkit file's sha256 is not its pin",
    ),
    (
        Status::Policy,
        "verification: identity policy (expected vs found is printed)",
    ),
    (
        Status::TrustRoot,
        "verification: the trust root or key given is unusable; `trust update`: TUF metadata failed verification (signature, rollback, expiry)",
    ),
    (
        Status::FenceOpen,
        "`cache check`: the credential can write a scope this build must not",
    ),
    (
        Status::NoRun,
        "`fetch`/`install`: no artifact of that name comes from the expected run (or none exists); `pr-run`: the build run, its /test request or its pull request is not one to sign (each reason printed)",
    ),
    (
        Status::Download,
        "`fetch`/`install`/`pr-run`/`attest --record-github`/`verify --github-attestations`: API or download failure (expired, truncated, digest mismatch, retries exhausted, bad token); `toolchain install`: the download or `pip download` failed (pip's own hash check included); `audit --pypi`: the index page could not be read; `trust update`: the TUF repository could not be reached",
    ),
    (
        Status::UnsafeArchive,
        "`fetch`/`install`/`pr-run`/`toolchain install`: unsafe archive (traversal, absolute name, link, too many members, bomb)",
    ),
    (
        Status::InstallFailed,
        "`install`: pip failed on the verified wheels",
    ),
    (
        Status::WrongCheckout,
        "`fetch`/`install --checkout`: the checkout the tests run from is not the commit the wheel was built from",
    ),
    (
        Status::Signing,
        "`attest`/`pr-run sign`: signing failed (no OIDC token, Fulcio or Rekor refused or unreachable)",
    ),
    (
        Status::Internal,
        "an error vouch did not classify: a bug, please report it with the message",
    ),
];

impl Status {
    pub fn code(self) -> u8 {
        self as u8
    }

    /// The status's name in `--json` failure reports: `trust-root`, `no-run`, ...
    pub fn name(self) -> String {
        let debug = format!("{self:?}");
        let mut out = String::new();
        for (i, c) in debug.chars().enumerate() {
            if c.is_ascii_uppercase() && i > 0 {
                out.push('-');
            }
            out.push(c.to_ascii_lowercase());
        }
        out
    }
}

/// The table as `vouch --help` shows it.
pub fn long_help() -> String {
    let mut s = String::from("Exit codes:\n");
    for (status, meaning) in TABLE {
        s.push_str(&format!("  {:>2}  {meaning}\n", status.code()));
    }
    s
}

impl From<Status> for ExitCode {
    fn from(s: Status) -> ExitCode {
        ExitCode::from(s.code())
    }
}

pub const SUCCESS: u8 = Status::Success as u8;
pub const DIFFERENT: u8 = Status::Different as u8;

pub fn verify_status(kind: vouch_verify::ErrorKind) -> Status {
    use vouch_verify::ErrorKind as K;
    match kind {
        K::Bundle => Status::Bundle,
        K::Certificate => Status::Certificate,
        K::TransparencyLog => Status::TransparencyLog,
        K::Signature => Status::Signature,
        K::Statement => Status::Statement,
        K::Digest => Status::Digest,
        K::Policy => Status::Policy,
        K::TrustRoot => Status::TrustRoot,
    }
}

/// Carries the exit status a fetch failure maps to.
#[derive(Debug, thiserror::Error)]
#[error("{message}")]
pub struct FetchFailed {
    pub status: Status,
    pub message: String,
}

/// A fetch failure's status: also printed in `fetch --json`'s failure report.
pub fn failure_status(e: &vouch_fetch::FetchError) -> Status {
    use vouch_fetch::{FetchError, RejectKind};
    match e {
        // The candidate that got furthest decides: a decoy artifact that fails pinning must not
        // hide the real one's verification failure.
        FetchError::NoCandidate { rejected, .. } => match rejected.iter().max_by_key(|r| r.kind) {
            Some(r) => match (r.kind, r.verify_kind) {
                (RejectKind::Verify, Some(k)) => verify_status(k),
                (RejectKind::Verify, None) => Status::Bundle,
                (RejectKind::Pin, _) => Status::NoRun,
                (RejectKind::Download, _) => Status::Download,
                (RejectKind::Archive, _) => Status::UnsafeArchive,
            },
            None => Status::NoRun,
        },
        FetchError::Github(_) | FetchError::Store { .. } | FetchError::Source { .. } => {
            Status::Download
        }
        FetchError::Trust(e) => verify_status(e.kind),
        FetchError::NoAttestationStore => Status::Usage,
        FetchError::Io { .. } => Status::Io,
        FetchError::WrongCheckout { .. } => Status::WrongCheckout,
    }
}

/// How an error type decides its exit status. `None` means the value only adds context to its
/// cause, which decides. Every error type a command can return implements this with an
/// exhaustive match, so a new variant does not compile until someone picks its status.
trait Classify {
    fn status(&self) -> Option<Status>;
}

type Classifier = fn(&(dyn std::error::Error + 'static)) -> Option<Option<Status>>;

/// The classified types, each paired with its name for the completeness test.
macro_rules! classifiers {
    ($($t:ty),* $(,)?) => {
        &[$((stringify!($t), |e| e.downcast_ref::<$t>().map(Classify::status))),*]
    };
}

static CLASSIFIERS: &[(&str, Classifier)] = classifiers![
    FetchFailed,
    crate::common::UsageError,
    crate::common::CacheCmdError,
    vouch_verify::VerifyError,
    vouch_verify::PolicyFileError,
    vouch_verify::tuf::TufError,
    vouch_fetch::FetchError,
    vouch_github::GithubError,
    vouch_http::HttpError,
    vouch_fetch::InstallError,
    vouch_audit::RebuildError,
    vouch_audit::PypiError,
    vouch_profile::ProfileError,
    vouch_wheel::WheelError,
    vouch_wheel::SdistError,
    vouch_build::BuildError,
    vouch_build::LockError,
    vouch_cell::CellError,
    vouch_toolchain::ToolchainError,
    vouch_cache::GatewayError,
    vouch_cache::StoreError,
    vouch_cache::GrantError,
    vouch_cache::ToolError,
    vouch_cache::UrlError,
    vouch_cache::ScopeError,
    vouch_cache::EntryKeyError,
    vouch_cache::TriggerError,
    vouch_core::NameError,
    vouch_core::DigestError,
    vouch_core::portable_path::PortableNameError,
    vouch_core::portable_path::Collision,
    vouch_core::host::PathListError,
    vouch_attest::ContextError,
    vouch_attest::SignError,
    vouch_attest::SignerError,
    vouch_attest::UnknownSigner,
    vouch_fetch::PinError,
    vouch_fetch::UnknownSource,
    vouch_prrun::PrRunError,
    vouch_prrun::Refusal,
    vouch_workflows::Error,
    vouch_workflows::explain::expr::ExprError,
    vouch_dispatch::DispatchError,
    vouch_fs::seal::SealError,
    std::io::Error,
    serde_json::Error,
];

impl Classify for FetchFailed {
    fn status(&self) -> Option<Status> {
        Some(self.status)
    }
}

impl Classify for crate::common::CacheCmdError {
    fn status(&self) -> Option<Status> {
        use crate::common::CacheCmdError as C;
        Some(match self {
            C::Stats { .. } => Status::Environment,
        })
    }
}

impl Classify for vouch_verify::VerifyError {
    fn status(&self) -> Option<Status> {
        Some(verify_status(self.kind))
    }
}

impl Classify for vouch_verify::PolicyFileError {
    fn status(&self) -> Option<Status> {
        use vouch_verify::PolicyFileError as P;
        Some(match self {
            P::Read { .. } => Status::Io,
            P::Invalid { .. } => Status::InvalidInput,
        })
    }
}

impl Classify for vouch_verify::tuf::TufError {
    fn status(&self) -> Option<Status> {
        use vouch_verify::tuf::TufError as T;
        Some(match self {
            T::Network { .. } => Status::Download,
            T::Metadata { .. }
            | T::NoCache { .. }
            | T::Cache { .. }
            | T::Target(_)
            | T::State { .. } => Status::TrustRoot,
            T::Io { .. } => Status::Io,
        })
    }
}

impl Classify for vouch_fetch::FetchError {
    fn status(&self) -> Option<Status> {
        Some(failure_status(self))
    }
}

impl Classify for vouch_http::HttpError {
    fn status(&self) -> Option<Status> {
        use vouch_http::HttpError as H;
        Some(match self {
            H::Io { .. } => Status::Io,
            H::Runtime(_) | H::NestedRuntime => Status::Internal,
            H::Client(_)
            | H::Exhausted { .. }
            | H::Status { .. }
            | H::Transfer { .. }
            | H::Unanswered { .. } => Status::Download,
        })
    }
}

impl Classify for vouch_fetch::InstallError {
    fn status(&self) -> Option<Status> {
        use vouch_fetch::InstallError as I;
        Some(match self {
            I::Failed(_) | I::DependenciesFailed(_) | I::Report { .. } | I::Replaced { .. } => {
                Status::InstallFailed
            }
            I::Resolve { .. } | I::Write { .. } | I::Spawn { .. } => Status::Io,
            I::Wheel { source, .. } => return source.status(),
            I::FileUrl(_) | I::BadMetadata { .. } => Status::InvalidInput,
            // The flag names what the wheel cannot give.
            I::InvalidExtra { .. } | I::UnknownExtra { .. } => Status::Usage,
            I::MarkerEnvironment { .. } => Status::Environment,
        })
    }
}

impl Classify for vouch_audit::RebuildError {
    fn status(&self) -> Option<Status> {
        use vouch_audit::RebuildError as R;
        match self {
            R::Read { .. } | R::Scratch(_) => Some(Status::Io),
            R::Verify(e) => e.status(),
            R::Diff(e) => e.status(),
            R::SdistDiff(e) => e.status(),
            // Someone must check out the commit the provenance names, as with a bad flag.
            R::WrongCommit { .. } => Some(Status::Usage),
            // Boxed: it does not downcast along the chain.
            R::Build(e) => e.status(),
        }
    }
}

impl Classify for vouch_audit::PypiError {
    fn status(&self) -> Option<Status> {
        use vouch_audit::PypiError as P;
        match self {
            // What was asked for does not exist there, as with a path that is not there.
            P::Spec { .. } | P::IndexUrl { .. } | P::NoProject { .. } | P::NoFiles { .. } => {
                Some(Status::Usage)
            }
            P::Index { .. } | P::Page { .. } => Some(Status::Download),
            P::Scratch(_) => Some(Status::Io),
            P::Runtime(e) => e.status(),
        }
    }
}

impl Classify for vouch_profile::ProfileError {
    fn status(&self) -> Option<Status> {
        use vouch_profile::ProfileError as P;
        Some(match self {
            P::Read { .. } | P::Source { .. } => Status::Io,
            P::Invalid { .. } | P::NoCell { .. } | P::CudaVersion(_) => Status::InvalidInput,
        })
    }
}

impl Classify for vouch_wheel::WheelError {
    fn status(&self) -> Option<Status> {
        Some(match self {
            vouch_wheel::WheelError::Read { .. }
            | vouch_wheel::WheelError::Write { .. }
            | vouch_wheel::WheelError::ZipWrite { .. } => Status::Io,
            _ => Status::InvalidInput,
        })
    }
}

impl Classify for vouch_wheel::SdistError {
    fn status(&self) -> Option<Status> {
        use vouch_wheel::SdistError as S;
        Some(match self {
            S::Read { .. } | S::Write { .. } => Status::Io,
            S::Member { .. } => Status::UnsafeArchive,
            S::NotGzipTar { .. }
            | S::Name { .. }
            | S::NonPortableName { .. }
            | S::NameCollision { .. }
            | S::TopDirectory { .. }
            | S::TooLarge { .. } => Status::InvalidInput,
        })
    }
}

impl Classify for vouch_build::BuildError {
    fn status(&self) -> Option<Status> {
        Some(match self {
            vouch_build::BuildError::Wheel(w) => return w.status(),
            vouch_build::BuildError::Lock(e) => return e.status(),
            vouch_build::BuildError::SdistNormalize(e) => return e.status(),
            vouch_build::BuildError::Io { .. } => Status::Io,
            vouch_build::BuildError::Project { .. }
            | vouch_build::BuildError::LinkOutside { .. }
            | vouch_build::BuildError::Epoch(_)
            | vouch_build::BuildError::Sdist { .. }
            | vouch_build::BuildError::Template(_) => Status::InvalidInput,
            vouch_build::BuildError::NoPython(_)
            | vouch_build::BuildError::Spawn { .. }
            | vouch_build::BuildError::Sealed(_)
            | vouch_build::BuildError::RepairTool { .. } => Status::Environment,
            vouch_build::BuildError::WorkDir { .. } => Status::Usage,
            vouch_build::BuildError::Failed { .. }
            | vouch_build::BuildError::WheelCount { .. }
            | vouch_build::BuildError::SdistCount { .. }
            | vouch_build::BuildError::Repair { .. } => Status::BuildFailed,
        })
    }
}

impl Classify for vouch_build::LockError {
    fn status(&self) -> Option<Status> {
        use vouch_build::LockError as L;
        Some(match self {
            L::Missing { .. } | L::Stale { .. } | L::BadRequirement { .. } => Status::InvalidInput,
            L::Io { .. } => Status::Io,
            L::HashMismatch { .. } => Status::Digest,
            L::NotInstalled { .. } | L::Report { .. } => Status::Environment,
        })
    }
}

impl Classify for vouch_cell::CellError {
    fn status(&self) -> Option<Status> {
        use vouch_cell::CellError as C;
        match self {
            C::Profile(e) => e.status(),
            C::Python(e) => e.status(),
            C::Name(e) => e.status(),
            C::Gateway(e) => e.status(),
            C::Tool(e) => e.status(),
            C::WrongPython { .. } => Some(Status::Environment),
            C::NoToolchain { .. } => Some(Status::Usage),
            C::Io { .. } | C::ReuseDir { .. } => Some(Status::Io),
            C::LibraryPath(_) => Some(Status::InvalidInput),
            // Boxed sources do not downcast to their type along the chain: decide here.
            C::Unpack { source, .. } | C::Build { source, .. } => source.status(),
            C::Toolchain { source, .. } => source.status(),
        }
    }
}

impl Classify for vouch_toolchain::ToolchainError {
    fn status(&self) -> Option<Status> {
        use vouch_toolchain::ToolchainError as T;
        Some(match self {
            T::Io { .. } | T::Seal(_) => Status::Io,
            T::Digest { .. } => Status::Digest,
            T::Download { .. } | T::Command { .. } => Status::Download,
            T::Spawn { .. } | T::Stub { .. } => Status::Environment,
            T::UnsafeMember { .. } => Status::UnsafeArchive,
            T::Requirements { .. }
            | T::Archive { .. }
            | T::Wheel { .. }
            | T::Empty
            | T::Layout(_) => Status::InvalidInput,
        })
    }
}

impl Classify for vouch_cache::TriggerError {
    fn status(&self) -> Option<Status> {
        use vouch_cache::TriggerError as T;
        Some(match self {
            T::NotInActions(_) => Status::Environment,
            T::ReadPayload { .. } => Status::Io,
            T::Payload { .. } => Status::InvalidInput,
        })
    }
}

impl Classify for vouch_cache::StoreError {
    fn status(&self) -> Option<Status> {
        use vouch_cache::StoreError as S;
        Some(match self {
            S::Backend { .. } | S::Open { .. } | S::MissingEnv { .. } => Status::Environment,
            S::BadKey(_) => Status::InvalidInput,
            S::BadSpec(_) | S::BadOption { .. } | S::SecretNotTaken { .. } | S::SecretTwice(_) => {
                Status::Usage
            }
        })
    }
}

impl Classify for vouch_cache::GrantError {
    fn status(&self) -> Option<Status> {
        use vouch_cache::GrantError as G;
        match self {
            G::Store(s) => s.status(),
            G::Redis { .. } | G::Random(_) => Some(Status::Environment),
            G::NothingToGrant { .. } => Some(Status::Usage),
        }
    }
}

impl Classify for vouch_cache::GatewayError {
    fn status(&self) -> Option<Status> {
        use vouch_cache::GatewayError as G;
        match self {
            G::NotLoopback { .. } => Some(Status::Usage),
            G::Store(s) => s.status(),
            G::Listen { .. } | G::Runtime(_) | G::Random(_) => Some(Status::Environment),
        }
    }
}

/// Error types whose every value has one status.
macro_rules! always {
    ($($status:ident: $($t:ty),+;)*) => {$($(
        impl Classify for $t {
            fn status(&self) -> Option<Status> {
                Some(Status::$status)
            }
        }
    )+)*};
}

always! {
    // A cache public key that does not parse, or is not the seal key's: a flag or profile value.
    Usage: crate::common::UsageError, vouch_cache::UrlError, vouch_attest::UnknownSigner,
        vouch_fetch::UnknownSource, vouch_cache::EntryKeyError;
    // Malformed values: a scope, an artifact name, a digest, a portable path, a run context.
    InvalidInput: vouch_cache::ScopeError, vouch_core::NameError, vouch_core::DigestError,
        vouch_core::portable_path::PortableNameError, vouch_core::portable_path::Collision,
        vouch_core::host::PathListError, vouch_attest::ContextError, serde_json::Error, vouch_workflows::explain::expr::ExprError;
    Environment: vouch_cache::ToolError;
    Download: vouch_github::GithubError;
    // A pin failure becomes a rejected candidate; alone it means no artifact comes from the
    // expected run. A signer's refusal: the run is not one to sign.
    NoRun: vouch_fetch::PinError, vouch_prrun::Refusal;
    Io: vouch_fs::seal::SealError, std::io::Error;
}

impl Classify for vouch_attest::SignError {
    fn status(&self) -> Option<Status> {
        use vouch_attest::SignError as S;
        Some(match self {
            S::KeyFormat { .. } | S::KeyAlgorithm { .. } | S::Token(_) => Status::InvalidInput,
            S::NoAmbientToken | S::Keyless { .. } | S::Crypto(_) | S::KeyGen => Status::Signing,
            S::Json(_) => Status::Internal,
        })
    }
}

impl Classify for vouch_attest::SignerError {
    fn status(&self) -> Option<Status> {
        match self {
            vouch_attest::SignerError::ReadKey { .. } => Some(Status::Io),
            vouch_attest::SignerError::Sign(e) => e.status(),
        }
    }
}

impl Classify for vouch_prrun::PrRunError {
    fn status(&self) -> Option<Status> {
        use vouch_prrun::PrRunError as P;
        match self {
            P::Github(_) | P::Download { .. } => Some(Status::Download),
            P::Fetch(e) => Some(failure_status(e)),
            P::Refused { .. } => Some(Status::NoRun),
            P::Request { .. } | P::Cell { .. } => Some(Status::InvalidInput),
            P::Archive { .. } => Some(Status::UnsafeArchive),
            P::Sign(e) => e.status(),
            P::Bundle(_) => Some(Status::Internal),
            P::Io { .. } => Some(Status::Io),
        }
    }
}

impl Classify for vouch_workflows::Error {
    fn status(&self) -> Option<Status> {
        use vouch_workflows::Error as W;
        Some(match self {
            W::Read { .. } | W::Write { .. } => Status::Io,
            W::Option { .. } | W::Profile(_) | W::Yaml { .. } | W::Shape { .. } => {
                Status::InvalidInput
            }
        })
    }
}

impl Classify for vouch_dispatch::DispatchError {
    fn status(&self) -> Option<Status> {
        use vouch_dispatch::DispatchError as D;
        Some(match self {
            D::Read { .. } => Status::Io,
            D::Json { .. }
            | D::Field { .. }
            | D::Action(_)
            | D::NotAllowed(_)
            | D::Projects { .. }
            | D::NoProject { .. }
            | D::Payload(_) => Status::InvalidInput,
            D::Endpoint { .. } | D::Repo(_) | D::EventType(_) => Status::Usage,
            // FlexCI or GitHub did not answer, refused, or answered something else.
            D::Unanswered { .. }
            | D::Reply { .. }
            | D::Status { .. }
            | D::Refused(_)
            | D::Github(_) => Status::Environment,
        })
    }
}

/// The status of the outermost error in the cause chain that decides one.
pub fn classify(err: &anyhow::Error) -> Status {
    for cause in err.chain() {
        let decided = CLASSIFIERS.iter().find_map(|(_, classify)| classify(cause));
        if let Some(Some(status)) = decided {
            return status;
        }
    }
    tracing::debug!(error = ?err, "unclassified error");
    Status::Internal
}

#[cfg(test)]
mod tests {
    use super::*;

    fn io() -> std::io::Error {
        std::io::Error::other("boom")
    }

    /// One of every error type a command can return (and the variants whose code matters
    /// most): none falls through to `Internal`, and none to 1, which means "different".
    #[test]
    fn issue12_every_error_type_is_classified() {
        let cases: Vec<(anyhow::Error, Status)> = vec![
            (crate::common::UsageError("x".into()).into(), Status::Usage),
            (
                vouch_cache::StoreError::BadSpec("/tmp".into()).into(),
                Status::Usage,
            ),
            (
                vouch_cache::StoreError::SecretTwice("redis://u@h:1".into()).into(),
                Status::Usage,
            ),
            (
                vouch_cache::GrantError::NothingToGrant {
                    backend: "gha",
                    why: "x",
                }
                .into(),
                Status::Usage,
            ),
            (
                vouch_cache::GatewayError::NotLoopback {
                    addr: "0.0.0.0:0".into(),
                }
                .into(),
                Status::Usage,
            ),
            (
                vouch_cache::ToolError::NotFound("sccache").into(),
                Status::Environment,
            ),
            (
                vouch_cache::TriggerError::NotInActions("GITHUB_EVENT_NAME").into(),
                Status::Environment,
            ),
            (
                vouch_attest::SignError::KeyFormat {
                    path: "k.json".into(),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                vouch_attest::SignError::NoAmbientToken.into(),
                Status::Signing,
            ),
            (
                vouch_attest::ContextError::Missing("GITHUB_REPOSITORY").into(),
                Status::InvalidInput,
            ),
            (
                vouch_workflows::Error::Shape {
                    file: "f".into(),
                    message: "m".into(),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                vouch_core::DigestError::Malformed("x".into()).into(),
                Status::InvalidInput,
            ),
            (
                vouch_build::BuildError::WorkDir {
                    path: "/w".into(),
                    reason: "r".into(),
                }
                .into(),
                Status::Usage,
            ),
            (
                vouch_build::BuildError::WheelCount { found: 2 }.into(),
                Status::BuildFailed,
            ),
            (
                vouch_toolchain::ToolchainError::Empty.into(),
                Status::InvalidInput,
            ),
            (
                vouch_fs::seal::SealError::Changed {
                    tree: "/t".into(),
                    path: "bin/nvcc".into(),
                    what: "changed content",
                }
                .into(),
                Status::Io,
            ),
            (io().into(), Status::Io),
            (
                serde_json::from_str::<serde_json::Value>("{")
                    .unwrap_err()
                    .into(),
                Status::InvalidInput,
            ),
            (anyhow::Error::new(io()).context("reading x"), Status::Io),
            (
                vouch_fetch::FetchError::NoCandidate {
                    name: "n".into(),
                    rejected: vec![],
                }
                .into(),
                Status::NoRun,
            ),
            (
                vouch_fetch::FetchError::Io {
                    path: "missing.whl".into(),
                    source: io(),
                }
                .into(),
                Status::Io,
            ),
            (
                vouch_github::GithubError::Expired { id: 1 }.into(),
                Status::Download,
            ),
            (
                vouch_profile::ProfileError::NoCell("c".into()).into(),
                Status::InvalidInput,
            ),
            (
                vouch_verify::PolicyFileError::Invalid {
                    path: "p.toml".into(),
                    message: "m".into(),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                vouch_verify::VerifyError::new(vouch_verify::ErrorKind::Policy, "m").into(),
                Status::Policy,
            ),
            (
                vouch_wheel::WheelError::DuplicateMember {
                    path: "w.whl".into(),
                    member: "a".into(),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                vouch_cell::CellError::WrongPython {
                    cell: "c".into(),
                    want: "3.12".into(),
                    found: "3.11.2".into(),
                    free_threaded: false,
                }
                .into(),
                Status::Environment,
            ),
            (
                vouch_cell::CellError::Toolchain {
                    name: "cuda".into(),
                    source: Box::new(vouch_toolchain::ToolchainError::Empty),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                vouch_cache::UrlError::Invalid {
                    url: "u".into(),
                    problem: "p",
                }
                .into(),
                Status::Usage,
            ),
            (
                vouch_cache::ScopeError::Malformed("s".into()).into(),
                Status::InvalidInput,
            ),
            (
                vouch_core::NameError::Missing("n".into(), "Python version").into(),
                Status::InvalidInput,
            ),
            (
                vouch_dispatch::DispatchError::NotAllowed("CONTRIBUTOR".into()).into(),
                Status::InvalidInput,
            ),
            (
                vouch_dispatch::DispatchError::Unanswered {
                    url: "https://ci.example/x/github_webhook".into(),
                    source: vouch_http::HttpError::Unanswered {
                        method: "POST",
                        url: "https://ci.example/x/github_webhook".into(),
                        reason: "connection failed".into(),
                    },
                }
                .into(),
                Status::Environment,
            ),
            (
                FetchFailed {
                    status: Status::InstallFailed,
                    message: "pip".into(),
                }
                .into(),
                Status::InstallFailed,
            ),
            (
                vouch_prrun::PrRunError::Refused {
                    run: 7,
                    refusal: vouch_prrun::Refusal::NoOpenPull { head: "f:b".into() },
                }
                .into(),
                Status::NoRun,
            ),
            (
                vouch_prrun::PrRunError::Cell {
                    artifact: "a".into(),
                    artifact_id: 1,
                    reason: "two wheels".into(),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                vouch_prrun::PrRunError::Sign(vouch_attest::SignError::NoAmbientToken).into(),
                Status::Signing,
            ),
            (
                vouch_audit::PypiError::NoFiles {
                    project: "p".into(),
                    version: "1".into(),
                    url: "https://pypi.org/simple/p/".into(),
                    others: String::new(),
                }
                .into(),
                Status::Usage,
            ),
            (
                vouch_audit::PypiError::Page {
                    url: "https://pypi.org/simple/p/".into(),
                    reason: "r".into(),
                }
                .into(),
                Status::Download,
            ),
        ];
        for (err, want) in cases {
            let got = classify(&err);
            assert_eq!(got, want, "{err:#}");
            assert_ne!(got.code(), 1, "{err:#}");
        }
        assert_eq!(classify(&anyhow::anyhow!("untyped")), Status::Internal);
    }

    /// Every `thiserror` type in the workspace (libraries and the binary) is classified: an
    /// error type added without a status fails here, before a user sees exit 70.
    #[test]
    fn every_error_type_in_the_workspace_is_classified() {
        let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR"));
        let classified: Vec<(String, String)> = CLASSIFIERS
            .iter()
            .map(|(name, _)| {
                let name = name.replace(' ', "");
                // A type named without a path is this crate's own.
                let krate = match name.split_once("::") {
                    Some((k, _)) => k.to_owned(),
                    None => "crate".to_owned(),
                };
                let ty = name.rsplit("::").next().unwrap().to_owned();
                (krate, ty)
            })
            .collect();
        let mut found = Vec::new();
        let mut dirs = vec![(String::from("crate"), root.join("src"))];
        for e in std::fs::read_dir(root.join("crates")).unwrap() {
            let dir = e.unwrap().path();
            let krate = dir.file_name().unwrap().to_string_lossy().replace('-', "_");
            // Test doubles never reach a user.
            if !krate.starts_with("vouch_test") {
                dirs.push((krate, dir.join("src")));
            }
        }
        for (krate, dir) in dirs {
            for file in walk(&dir) {
                let text = std::fs::read_to_string(&file).unwrap();
                let mut derive = false;
                for line in text.lines().map(str::trim) {
                    if line.starts_with("#[derive(") {
                        derive = line.contains("thiserror::Error");
                        continue;
                    }
                    if line.starts_with("#[") || line.starts_with("///") {
                        continue;
                    }
                    if derive
                        && let Some(rest) = line
                            .strip_prefix("pub enum ")
                            .or_else(|| line.strip_prefix("pub struct "))
                    {
                        let ty: String = rest
                            .chars()
                            .take_while(|c| c.is_alphanumeric() || *c == '_')
                            .collect();
                        found.push((krate.clone(), ty, file.clone()));
                    }
                    derive = false;
                }
            }
        }
        assert!(found.len() > 20, "the scan found only {found:?}");
        for (krate, ty, file) in found {
            assert!(
                classified.iter().any(|(k, t)| k == &krate && t == &ty),
                "{krate}::{ty} ({}) has no exit status: implement Classify for it in src/exit.rs",
                file.display()
            );
        }
    }

    fn walk(dir: &std::path::Path) -> Vec<std::path::PathBuf> {
        let mut files = Vec::new();
        for e in std::fs::read_dir(dir).unwrap() {
            let path = e.unwrap().path();
            if path.is_dir() {
                files.extend(walk(&path));
            } else if path.extension().is_some_and(|x| x == "rs") {
                files.push(path);
            }
        }
        files
    }

    /// The README's exit-code table lists exactly [`TABLE`]'s codes, in order.
    #[test]
    fn readme_lists_every_status() {
        let readme = include_str!("../README.md");
        let section = readme
            .split("## Exit codes")
            .nth(1)
            .expect("README has an Exit codes section");
        let codes: Vec<u8> = section
            .lines()
            .skip_while(|l| !l.starts_with("| code"))
            .skip(2)
            .take_while(|l| l.starts_with('|'))
            .map(|l| l.split('|').nth(1).unwrap().trim().parse().unwrap())
            .collect();
        let table: Vec<u8> = TABLE.iter().map(|(s, _)| s.code()).collect();
        assert_eq!(codes, table);
    }
}
