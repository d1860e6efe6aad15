//! Exit codes. Keep in sync with the README's table.

use std::process::ExitCode;

use vouch_build::BuildError;
use vouch_wheel::WheelError;

pub const SUCCESS: u8 = 0;
/// A comparison found differences (`vouch diff`, `vouch demo`).
pub const DIFFERENT: u8 = 1;
// 2 is clap's usage error.
/// The input is malformed: a wheel, a wheel filename, an artifact name, a project.
pub const INVALID_INPUT: u8 = 3;
/// The build backend or compiler failed.
pub const BUILD_FAILED: u8 = 4;
/// A tool vouch needs is missing or would not start (python3, git, a compiler).
pub const ENVIRONMENT: u8 = 5;
/// Reading or writing a file failed.
pub const IO: u8 = 6;
/// Verification failures, one code per kind (see the README).
pub fn verify_code(kind: vouch_verify::ErrorKind) -> u8 {
    use vouch_verify::ErrorKind as K;
    match kind {
        K::Bundle => 10,
        K::Certificate => 11,
        K::TransparencyLog => 12,
        K::Signature => 13,
        K::Statement => 14,
        K::Digest => 15,
        K::Policy => 16,
        K::TrustRoot => 17,
    }
}

fn wheel_code(e: &WheelError) -> u8 {
    match e {
        WheelError::Read { .. } | WheelError::Write { .. } | WheelError::ZipWrite { .. } => IO,
        _ => INVALID_INPUT,
    }
}

pub fn code_for(err: &anyhow::Error) -> ExitCode {
    for cause in err.chain() {
        if let Some(f) = cause.downcast_ref::<crate::fetch_cmd::FetchFailed>() {
            return ExitCode::from(f.code);
        }
        if cause.downcast_ref::<vouch_fetch::FetchError>().is_some()
            || cause.downcast_ref::<vouch_github::GithubError>().is_some()
        {
            return ExitCode::from(crate::fetch_cmd::DOWNLOAD);
        }
        if let Some(e) = cause.downcast_ref::<vouch_verify::VerifyError>() {
            return ExitCode::from(verify_code(e.kind));
        }
        if let Some(e) = cause.downcast_ref::<vouch_profile::ProfileError>() {
            return ExitCode::from(match e {
                vouch_profile::ProfileError::Read { .. }
                | vouch_profile::ProfileError::Source { .. } => IO,
                _ => INVALID_INPUT,
            });
        }
        if let Some(e) = cause.downcast_ref::<vouch_verify::PolicyFileError>() {
            return ExitCode::from(match e {
                vouch_verify::PolicyFileError::Read { .. } => IO,
                vouch_verify::PolicyFileError::Invalid { .. } => INVALID_INPUT,
            });
        }
        if cause
            .downcast_ref::<crate::verify_cmd::UsageError>()
            .is_some()
        {
            return ExitCode::from(2);
        }
        if let Some(e) = cause.downcast_ref::<WheelError>() {
            return ExitCode::from(wheel_code(e));
        }
        if let Some(e) = cause.downcast_ref::<BuildError>() {
            return ExitCode::from(match e {
                BuildError::Wheel(w) => wheel_code(w),
                BuildError::Io { .. } => IO,
                BuildError::Project { .. }
                | BuildError::Epoch(_)
                | BuildError::Sdist { .. }
                | BuildError::Template(_) => INVALID_INPUT,
                BuildError::NoPython(_) | BuildError::Spawn { .. } | BuildError::Sealed(_) => {
                    ENVIRONMENT
                }
                BuildError::WorkDir { .. } => 2,
                BuildError::Failed { .. } | BuildError::WheelCount { .. } => BUILD_FAILED,
            });
        }
        if cause
            .downcast_ref::<crate::build_cmd::WrongPython>()
            .is_some()
        {
            return ExitCode::from(ENVIRONMENT);
        }
        if let Some(e) = cause.downcast_ref::<vouch_toolchain::ToolchainError>() {
            use vouch_toolchain::ToolchainError as T;
            return ExitCode::from(match e {
                T::Io { .. } | T::Seal(_) => IO,
                T::Digest { .. } => verify_code(vouch_verify::ErrorKind::Digest),
                T::Download { .. } | T::Command { .. } => crate::fetch_cmd::DOWNLOAD,
                T::Spawn { .. } | T::Stub { .. } => ENVIRONMENT,
                T::Transfer { .. } => crate::fetch_cmd::DOWNLOAD,
                T::UnsafeMember { .. } => crate::fetch_cmd::UNSAFE_ARCHIVE,
                T::Requirements { .. }
                | T::Archive { .. }
                | T::Wheel { .. }
                | T::Empty
                | T::Layout(_) => INVALID_INPUT,
            });
        }
        if cause.downcast_ref::<vouch_cache::ToolError>().is_some()
            || cause.downcast_ref::<vouch_cache::GatewayError>().is_some()
        {
            return ExitCode::from(ENVIRONMENT);
        }
        if cause.downcast_ref::<vouch_cache::ScopeError>().is_some() {
            return ExitCode::from(INVALID_INPUT);
        }
        if cause.downcast_ref::<vouch_core::NameError>().is_some() {
            return ExitCode::from(INVALID_INPUT);
        }
        if cause.downcast_ref::<std::io::Error>().is_some() {
            return ExitCode::from(IO);
        }
    }
    ExitCode::FAILURE
}
