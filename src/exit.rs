//! Exit statuses: the one table. Every code vouch exits with is a [`Status`], each error type a
//! command can return is classified here (with exhaustive matches, so a new variant is a
//! compile error until someone decides its code), and the README's table is checked against
//! [`TABLE`] by a test. An error nobody classified exits [`Status::Internal`], never 1.

use std::process::ExitCode;

use vouch_build::BuildError;
use vouch_wheel::WheelError;

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
        "invalid input: malformed wheel, wheel filename, artifact name, project, profile, policy file, key or run context",
    ),
    (
        Status::BuildFailed,
        "the build backend or compiler failed (the last 40 lines of its output are shown)",
    ),
    (
        Status::Environment,
        "a tool or service vouch needs is missing, would not start or did not answer (`python3`, ccache, sccache, the cache store, the gateway), or the interpreter is not the cell's Python",
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
        "verification: the trust root or key given is unusable",
    ),
    (
        Status::FenceOpen,
        "`cache check`: the credential can write a scope this build must not",
    ),
    (
        Status::NoRun,
        "`fetch`/`install`: no artifact of that name comes from the expected run (or none exists)",
    ),
    (
        Status::Download,
        "`fetch`/`install`: API or download failure (expired, truncated, digest mismatch, retries exhausted, bad token); `toolchain install`: the download or `pip download` failed (pip's own hash check included)",
    ),
    (
        Status::UnsafeArchive,
        "`fetch`/`install`/`toolchain install`: unsafe archive (traversal, absolute name, link, too many members, bomb)",
    ),
    (
        Status::InstallFailed,
        "`install`: pip failed on the verified wheels",
    ),
    (
        Status::Signing,
        "`attest`: signing failed (no OIDC token, Fulcio or Rekor refused or unreachable)",
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

fn wheel(e: &WheelError) -> Status {
    match e {
        WheelError::Read { .. } | WheelError::Write { .. } | WheelError::ZipWrite { .. } => {
            Status::Io
        }
        _ => Status::InvalidInput,
    }
}

fn build(e: &BuildError) -> Status {
    match e {
        BuildError::Wheel(w) => wheel(w),
        BuildError::Io { .. } => Status::Io,
        BuildError::Project { .. }
        | BuildError::Epoch(_)
        | BuildError::Sdist { .. }
        | BuildError::Template(_) => Status::InvalidInput,
        BuildError::NoPython(_) | BuildError::Spawn { .. } | BuildError::Sealed(_) => {
            Status::Environment
        }
        BuildError::WorkDir { .. } => Status::Usage,
        BuildError::Failed { .. } | BuildError::WheelCount { .. } => Status::BuildFailed,
    }
}

fn toolchain(e: &vouch_toolchain::ToolchainError) -> Status {
    use vouch_toolchain::ToolchainError as T;
    match e {
        T::Io { .. } | T::Seal(_) => Status::Io,
        T::Digest { .. } => Status::Digest,
        T::Download { .. } | T::Command { .. } | T::Transfer { .. } => Status::Download,
        T::Spawn { .. } | T::Stub { .. } => Status::Environment,
        T::UnsafeMember { .. } => Status::UnsafeArchive,
        T::Requirements { .. } | T::Archive { .. } | T::Wheel { .. } | T::Empty | T::Layout(_) => {
            Status::InvalidInput
        }
    }
}

fn store(e: &vouch_cache::StoreError) -> Status {
    use vouch_cache::StoreError as S;
    match e {
        S::Io { .. } => Status::Io,
        S::Redis(_) => Status::Environment,
        S::BadKey(_) => Status::InvalidInput,
        S::BadSpec(_) | S::NotRedis(_) => Status::Usage,
    }
}

fn gateway(e: &vouch_cache::GatewayError) -> Status {
    use vouch_cache::GatewayError as G;
    match e {
        G::NotLoopback { .. } => Status::Usage,
        G::Store(s) => store(s),
        G::Listen { .. } | G::Runtime(_) | G::Random(_) => Status::Environment,
    }
}

fn sign(e: &vouch_attest::SignError) -> Status {
    use vouch_attest::SignError as S;
    match e {
        S::KeyFormat { .. } | S::KeyAlgorithm { .. } | S::Token(_) => Status::InvalidInput,
        S::NoAmbientToken | S::Keyless { .. } | S::Crypto(_) | S::KeyGen => Status::Signing,
        S::Json(_) => Status::Internal,
    }
}

fn workflows(e: &vouch_workflows::Error) -> Status {
    use vouch_workflows::Error as W;
    match e {
        W::Read { .. } | W::Write { .. } => Status::Io,
        W::Option { .. } | W::Profile(_) | W::Yaml { .. } | W::Shape { .. } => Status::InvalidInput,
    }
}

/// The status for the first classified error in the cause chain, outermost first.
pub fn classify(err: &anyhow::Error) -> Status {
    for cause in err.chain() {
        if let Some(f) = cause.downcast_ref::<crate::fetch_cmd::FetchFailed>() {
            return f.status;
        }
        if cause
            .downcast_ref::<crate::verify_cmd::UsageError>()
            .is_some()
        {
            return Status::Usage;
        }
        if let Some(e) = cause.downcast_ref::<vouch_verify::VerifyError>() {
            return verify_status(e.kind);
        }
        if let Some(e) = cause.downcast_ref::<vouch_fetch::FetchError>() {
            return crate::fetch_cmd::failure_status(e);
        }
        if cause.downcast_ref::<vouch_github::GithubError>().is_some() {
            return Status::Download;
        }
        if let Some(e) = cause.downcast_ref::<vouch_profile::ProfileError>() {
            return match e {
                vouch_profile::ProfileError::Read { .. }
                | vouch_profile::ProfileError::Source { .. } => Status::Io,
                vouch_profile::ProfileError::Invalid { .. }
                | vouch_profile::ProfileError::NoCell { .. } => Status::InvalidInput,
            };
        }
        if let Some(e) = cause.downcast_ref::<vouch_verify::PolicyFileError>() {
            return match e {
                vouch_verify::PolicyFileError::Read { .. } => Status::Io,
                vouch_verify::PolicyFileError::Invalid { .. } => Status::InvalidInput,
            };
        }
        if let Some(e) = cause.downcast_ref::<WheelError>() {
            return wheel(e);
        }
        if let Some(e) = cause.downcast_ref::<BuildError>() {
            return build(e);
        }
        if cause
            .downcast_ref::<crate::build_cmd::WrongPython>()
            .is_some()
        {
            return Status::Environment;
        }
        if let Some(e) = cause.downcast_ref::<vouch_toolchain::ToolchainError>() {
            return toolchain(e);
        }
        if let Some(e) = cause.downcast_ref::<vouch_cache::GatewayError>() {
            return gateway(e);
        }
        if let Some(e) = cause.downcast_ref::<vouch_cache::StoreError>() {
            return store(e);
        }
        if cause.downcast_ref::<vouch_cache::ToolError>().is_some() {
            return Status::Environment;
        }
        if cause.downcast_ref::<vouch_cache::UrlError>().is_some() {
            return Status::Usage;
        }
        if let Some(e) = cause.downcast_ref::<crate::cache_cmd::CacheCmdError>() {
            use crate::cache_cmd::CacheCmdError as C;
            return match e {
                C::NotInActions(_) | C::Stats { .. } => Status::Environment,
                C::EventPayload { .. } => Status::InvalidInput,
            };
        }
        if cause.downcast_ref::<vouch_cache::ScopeError>().is_some()
            || cause.downcast_ref::<vouch_core::NameError>().is_some()
            || cause.downcast_ref::<vouch_core::DigestError>().is_some()
            || cause.downcast_ref::<vouch_attest::ContextError>().is_some()
        {
            return Status::InvalidInput;
        }
        if let Some(e) = cause.downcast_ref::<vouch_attest::SignError>() {
            return sign(e);
        }
        if let Some(e) = cause.downcast_ref::<vouch_workflows::Error>() {
            return workflows(e);
        }
        if cause.downcast_ref::<vouch_fs::seal::SealError>().is_some()
            || cause.downcast_ref::<std::io::Error>().is_some()
        {
            return Status::Io;
        }
        if cause.downcast_ref::<serde_json::Error>().is_some() {
            return Status::InvalidInput;
        }
    }
    tracing::debug!(error = ?err, "unclassified error");
    Status::Internal
}

pub fn code_for(err: &anyhow::Error) -> ExitCode {
    classify(err).into()
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
            (
                crate::verify_cmd::UsageError("x".into()).into(),
                Status::Usage,
            ),
            (
                vouch_cache::StoreError::BadSpec("/tmp".into()).into(),
                Status::Usage,
            ),
            (
                vouch_cache::StoreError::NotRedis("/tmp".into()).into(),
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
                crate::cache_cmd::CacheCmdError::NotInActions("GITHUB_EVENT_NAME").into(),
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
                BuildError::WorkDir {
                    path: "/w".into(),
                    reason: "r".into(),
                }
                .into(),
                Status::Usage,
            ),
            (
                BuildError::WheelCount { found: 2 }.into(),
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
                WheelError::DuplicateMember {
                    path: "w.whl".into(),
                    member: "a".into(),
                }
                .into(),
                Status::InvalidInput,
            ),
            (
                crate::build_cmd::WrongPython("3.12".into()).into(),
                Status::Environment,
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
                crate::fetch_cmd::FetchFailed {
                    status: Status::InstallFailed,
                    message: "pip".into(),
                }
                .into(),
                Status::InstallFailed,
            ),
        ];
        for (err, want) in cases {
            let got = classify(&err);
            assert_eq!(got, want, "{err:#}");
            assert_ne!(got.code(), 1, "{err:#}");
        }
        assert_eq!(classify(&anyhow::anyhow!("untyped")), Status::Internal);
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
