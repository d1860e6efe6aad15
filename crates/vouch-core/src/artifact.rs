//! The artifact names CuPy's CI uses: `<dist>-py<X.Y>-<plat>-pr<N>-<sha>` for pull-request
//! builds and `<dist>-py<X.Y>-<plat>-<sha>` after merge.
//!
//! A name is only a lookup hint: anyone who can run a workflow in the repository can upload an
//! artifact with any name. Trust never comes from here.

use std::fmt;
use std::str::FromStr;

use crate::Platform;

/// A CPython version as it appears in artifact names: `3.12`, or `3.14t` for free-threaded.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct PythonVersion {
    pub major: u8,
    pub minor: u8,
    pub free_threaded: bool,
}

impl fmt::Display for PythonVersion {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}.{}", self.major, self.minor)?;
        if self.free_threaded {
            f.write_str("t")?;
        }
        Ok(())
    }
}

impl PythonVersion {
    /// The CPython interpreter tag a wheel for this version carries (`cp312`).
    pub fn interpreter_tag(&self) -> String {
        format!("cp{}{}", self.major, self.minor)
    }

    /// The ABI tag of a wheel built for this version (`cp312`, `cp314t` when free-threaded).
    pub fn abi_tag(&self) -> String {
        let t = if self.free_threaded { "t" } else { "" };
        format!("{}{t}", self.interpreter_tag())
    }
}

fn parse_small_int(s: &str) -> Option<u8> {
    // Leading zeros would let two spellings name one version.
    if s.is_empty() || (s.len() > 1 && s.starts_with('0')) || !s.bytes().all(|b| b.is_ascii_digit())
    {
        return None;
    }
    s.parse().ok()
}

impl FromStr for PythonVersion {
    type Err = NameError;

    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let err = || NameError::Python(s.to_owned());
        let (body, free_threaded) = match s.strip_suffix('t') {
            Some(b) => (b, true),
            None => (s, false),
        };
        let (major, minor) = body.split_once('.').ok_or_else(err)?;
        Ok(PythonVersion {
            major: parse_small_int(major).ok_or_else(err)?,
            minor: parse_small_int(minor).ok_or_else(err)?,
            free_threaded,
        })
    }
}

/// Parsed artifact name. `pr` is `Some` for pull-request builds.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct ArtifactName {
    pub dist: String,
    pub python: PythonVersion,
    pub platform: Platform,
    pub pr: Option<u64>,
    /// Full 40-hex commit SHA, lowercase.
    pub sha: String,
}

#[derive(Debug, thiserror::Error, PartialEq, Eq)]
pub enum NameError {
    #[error(
        "commit {0:?} is not a full 40-hex lowercase SHA (expected e.g. 0123456789abcdef0123456789abcdef01234567)"
    )]
    Sha(String),
    #[error(
        "pull request part {0:?} is not `pr<N>` with N a positive integer without leading zeros"
    )]
    Pr(String),
    #[error("platform {0:?} is not one of {names}", names = Platform::names())]
    Platform(String),
    #[error(
        "Python part {0:?} is not `py<major>.<minor>` or `py<major>.<minor>t` (e.g. py3.12, py3.14t)"
    )]
    Python(String),
    #[error(
        "distribution {0:?} is not a normalized name (lowercase letters, digits and single hyphens, e.g. cupy-cuda13x)"
    )]
    Dist(String),
    #[error("artifact name {0:?} is missing its {1}; expected <dist>-py<X.Y>-<plat>[-pr<N>]-<sha>")]
    Missing(String, &'static str),
}

fn is_normalized_dist(s: &str) -> bool {
    !s.is_empty()
        && !s.starts_with('-')
        && !s.ends_with('-')
        && !s.contains("--")
        && s.bytes()
            .all(|b| b.is_ascii_lowercase() || b.is_ascii_digit() || b == b'-')
}

fn is_full_sha(s: &str) -> bool {
    s.len() == 40
        && s.bytes()
            .all(|b| b.is_ascii_digit() || (b'a'..=b'f').contains(&b))
}

impl ArtifactName {
    pub fn new(
        dist: impl Into<String>,
        python: PythonVersion,
        platform: Platform,
        pr: Option<u64>,
        sha: impl Into<String>,
    ) -> Result<Self, NameError> {
        let name = ArtifactName {
            dist: dist.into(),
            python,
            platform,
            pr,
            sha: sha.into(),
        };
        if !is_normalized_dist(&name.dist) {
            return Err(NameError::Dist(name.dist));
        }
        if !is_full_sha(&name.sha) {
            return Err(NameError::Sha(name.sha));
        }
        if name.pr == Some(0) {
            return Err(NameError::Pr("pr0".into()));
        }
        Ok(name)
    }
}

impl fmt::Display for ArtifactName {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-py{}-{}", self.dist, self.python, self.platform)?;
        if let Some(pr) = self.pr {
            write!(f, "-pr{pr}")?;
        }
        write!(f, "-{}", self.sha)
    }
}

impl FromStr for ArtifactName {
    type Err = NameError;

    /// Parses from the right: the SHA, an optional `pr<N>`, the platform (which itself has a
    /// hyphen), the Python version, and whatever is left is the distribution.
    fn from_str(s: &str) -> Result<Self, Self::Err> {
        let missing = |what| NameError::Missing(s.to_owned(), what);
        let (rest, sha) = s.rsplit_once('-').ok_or_else(|| missing("commit SHA"))?;
        if !is_full_sha(sha) {
            return Err(NameError::Sha(sha.to_owned()));
        }
        let mut rest = rest;
        let mut pr = None;
        if let Some((head, last)) = rest.rsplit_once('-')
            && let Some(n) = last.strip_prefix("pr")
        {
            let valid =
                !n.is_empty() && !n.starts_with('0') && n.bytes().all(|b| b.is_ascii_digit());
            pr = Some(
                n.parse::<u64>()
                    .ok()
                    .filter(|_| valid)
                    .ok_or_else(|| NameError::Pr(last.to_owned()))?,
            );
            rest = head;
        }
        let platform = Platform::ALL
            .iter()
            .copied()
            .find(|p| {
                rest.strip_suffix(p.as_str())
                    .is_some_and(|h| h.ends_with('-'))
            })
            .ok_or_else(|| {
                let last = rest.rsplit('-').next().unwrap_or(rest);
                if rest.contains("-py") {
                    NameError::Platform(
                        rest.rsplit_once("-py")
                            .map_or(last, |(_, t)| t.split_once('-').map_or(last, |(_, p)| p))
                            .to_owned(),
                    )
                } else {
                    missing("platform")
                }
            })?;
        rest = &rest[..rest.len() - platform.as_str().len() - 1];
        let (dist, py) = rest
            .rsplit_once('-')
            .ok_or_else(|| missing("Python version"))?;
        let py = py
            .strip_prefix("py")
            .ok_or_else(|| NameError::Python(py.to_owned()))?;
        let python = py.parse()?;
        ArtifactName::new(dist, python, platform, pr, sha)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const SHA: &str = "0123456789abcdef0123456789abcdef01234567";

    #[test]
    fn round_trips() {
        for name in [
            format!("cupy-cuda13x-py3.12-linux-64-pr123-{SHA}"),
            format!("cupy-cuda12x-py3.14t-linux-aarch64-{SHA}"),
            format!("cupy-cuda13x-py3.10-win-64-pr1-{SHA}"),
            format!("sample-py3.11-linux-64-{SHA}"),
        ] {
            let parsed: ArtifactName = name.parse().unwrap();
            assert_eq!(parsed.to_string(), name);
        }
        let n: ArtifactName = format!("cupy-cuda13x-py3.14t-linux-aarch64-pr9-{SHA}")
            .parse()
            .unwrap();
        assert_eq!(n.dist, "cupy-cuda13x");
        assert_eq!(
            n.python,
            PythonVersion {
                major: 3,
                minor: 14,
                free_threaded: true
            }
        );
        assert_eq!(n.platform, Platform::LinuxAarch64);
        assert_eq!(n.pr, Some(9));
    }

    #[test]
    fn wheel_tags() {
        for (v, interp, abi) in [
            ("3.12", "cp312", "cp312"),
            ("3.14t", "cp314", "cp314t"),
            ("3.9", "cp39", "cp39"),
        ] {
            let v: PythonVersion = v.parse().unwrap();
            assert_eq!(
                (v.interpreter_tag().as_str(), v.abi_tag().as_str()),
                (interp, abi)
            );
        }
    }

    #[test]
    fn names_the_wrong_part() {
        let cases = [
            (
                format!("cupy-cuda13x-py3.12-linux-64-pr123-{}", &SHA[..7]),
                NameError::Sha(SHA[..7].into()),
            ),
            (
                format!("cupy-cuda13x-py3.12-linux-64-pr123-{}", SHA.to_uppercase()),
                NameError::Sha(SHA.to_uppercase()),
            ),
            (
                format!("cupy-cuda13x-py3.12-linux-64-pr0-{SHA}"),
                NameError::Pr("pr0".into()),
            ),
            (
                format!("cupy-cuda13x-py3.12-linux-64-pr012-{SHA}"),
                NameError::Pr("pr012".into()),
            ),
            (
                format!("cupy-cuda13x-py3.12-linux-64-prx-{SHA}"),
                NameError::Pr("prx".into()),
            ),
            (
                format!("cupy-cuda13x-py3.12-mac-arm64-{SHA}"),
                NameError::Platform("mac-arm64".into()),
            ),
            (
                format!("cupy-cuda13x-py3-linux-64-{SHA}"),
                NameError::Python("3".into()),
            ),
            (
                format!("cupy-cuda13x-3.12-linux-64-{SHA}"),
                NameError::Python("3.12".into()),
            ),
            (
                format!("Cupy_cuda13x-py3.12-linux-64-{SHA}"),
                NameError::Dist("Cupy_cuda13x".into()),
            ),
            (
                format!("py3.12-linux-64-{SHA}"),
                NameError::Missing(format!("py3.12-linux-64-{SHA}"), "Python version"),
            ),
        ];
        for (input, want) in cases {
            assert_eq!(input.parse::<ArtifactName>().unwrap_err(), want, "{input}");
        }
    }
}
