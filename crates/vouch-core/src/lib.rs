//! Core types shared by every vouch crate, and the few helpers every crate must do one way:
//! starting a child process ([`command`]), hashing a file, asking git ([`git`]) and the CI
//! system ([`ci`]), reporting progress ([`progress`]), and what differs between a POSIX and a
//! Windows host ([`host`]). Apart from those helpers nothing here
//! does I/O.

mod artifact;
pub mod ci;
pub mod command;
mod digest;
mod file_digest;
pub mod git;
pub mod host;
mod platform;
pub mod portable_path;
pub mod progress;
pub mod redact;
pub mod statement;

pub use artifact::{ArtifactName, NameError, PythonVersion};
pub use digest::{DigestError, Sha256Digest, Sha256Hasher};
pub use platform::Platform;

/// Normalizes a distribution name the way PEP 503 does: lowercase, and every run of
/// `-`, `_` and `.` becomes one `-`.
pub fn normalize_dist_name(name: &str) -> String {
    let mut out = String::with_capacity(name.len());
    let mut in_sep = false;
    for c in name.chars() {
        if matches!(c, '-' | '_' | '.') {
            if !in_sep {
                out.push('-');
            }
            in_sep = true;
        } else {
            out.extend(c.to_lowercase());
            in_sep = false;
        }
    }
    out
}

/// Whether `s` can go on a line of a pip/uv requirements file as one requirement (PEP 508)
/// and nothing else: it starts with a project name, so it is never an option such as
/// `--index-url`, and it has no second line or ` -` option after it.
pub fn is_single_requirement(s: &str) -> bool {
    s.chars().next().is_some_and(|c| c.is_ascii_alphanumeric())
        && !s.contains(['\n', '\r'])
        && !s.contains(" -")
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pep503() {
        assert_eq!(normalize_dist_name("Friendly-Bard"), "friendly-bard");
        assert_eq!(normalize_dist_name("friendly.bard"), "friendly-bard");
        assert_eq!(normalize_dist_name("FRIENDLY__._BARD"), "friendly-bard");
        assert_eq!(normalize_dist_name("cupy_cuda13x"), "cupy-cuda13x");
    }
}
