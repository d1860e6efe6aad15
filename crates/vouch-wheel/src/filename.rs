//! Wheel filenames: `{name}-{version}(-{build})?-{python}-{abi}-{platform}.whl` (PEP 427, with
//! the name escaping of PEP 491 and the binary distribution format spec).

use std::fmt;
use std::str::FromStr;

use vouch_core::{ArtifactName, Platform, PythonVersion, normalize_dist_name};

use crate::WheelError;

#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct WheelFilename {
    /// The name as written in the filename (escaped, `_` for `-`).
    pub name: String,
    pub version: String,
    pub build: Option<String>,
    /// Compressed tag sets, e.g. `["py2", "py3"]` for `py2.py3`.
    pub python: Vec<String>,
    pub abi: Vec<String>,
    pub platform: Vec<String>,
}

/// One expanded compatibility tag.
#[derive(Clone, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct WheelTag {
    pub python: String,
    pub abi: String,
    pub platform: String,
}

impl fmt::Display for WheelTag {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}-{}", self.python, self.abi, self.platform)
    }
}

impl WheelFilename {
    /// The PEP 503 normalized distribution name (`sample-ext`).
    pub fn normalized_name(&self) -> String {
        normalize_dist_name(&self.name)
    }

    /// Every (python, abi, platform) combination the compressed tag sets expand to.
    pub fn tags(&self) -> Vec<WheelTag> {
        let mut out = Vec::new();
        for p in &self.python {
            for a in &self.abi {
                for pl in &self.platform {
                    out.push(WheelTag {
                        python: p.clone(),
                        abi: a.clone(),
                        platform: pl.clone(),
                    });
                }
            }
        }
        out
    }

    /// Whether `dir` (without the `.dist-info` suffix) names this wheel's distribution and
    /// version. Older tools wrote the unnormalized project name there.
    pub fn matches_dist_info(&self, dir: &str) -> bool {
        dir.rsplit_once('-').is_some_and(|(name, version)| {
            normalize_dist_name(name) == self.normalized_name() && version == self.version
        })
    }
}

/// Whether a wheel tag's interpreter and ABI are ones a cell building CPython `python` could
/// have made: its own `cpXY` (the free-threaded ABI exactly when the cell is free-threaded),
/// the stable ABI of an older or equal version, or pure Python 3.
fn tag_fits_python(t: &WheelTag, python: PythonVersion) -> bool {
    let cp = python.interpreter_tag();
    let pure = t.abi == "none"
        && (t.python == format!("py{}", python.major)
            || t.python == format!("py{}{}", python.major, python.minor)
            || t.python == cp);
    let own = t.python == cp && t.abi == python.abi_tag();
    // abi3 is a promise of the non-free-threaded ABI only.
    let stable = !python.free_threaded
        && t.abi == "abi3"
        && t.python
            .strip_prefix(&format!("cp{}", python.major))
            .and_then(|m| m.parse::<u8>().ok())
            .is_some_and(|m| m <= python.minor);
    pure || own || stable
}

impl WheelFilename {
    /// Whether a matrix cell building for CPython `python` on `platform` could have made this
    /// wheel: one tag fits the interpreter ([`tag_fits_python`]) and is for that platform
    /// ([`Platform::accepts_wheel_platform`]) or any platform.
    pub fn fits_cell(&self, python: PythonVersion, platform: Platform) -> bool {
        self.tags().iter().any(|t| {
            tag_fits_python(t, python)
                && (t.platform == "any" || platform.accepts_wheel_platform(&t.platform))
        })
    }

    /// Whether this is a wheel of the cell `name` names: its distribution, and
    /// [`Self::fits_cell`] for its Python and platform. `Err` says which part does not fit.
    pub fn fits(&self, name: &ArtifactName) -> Result<(), String> {
        if self.normalized_name() != name.dist {
            return Err(format!(
                "distribution {:?} is not the artifact's {:?}",
                self.normalized_name(),
                name.dist
            ));
        }
        if !self.tags().iter().any(|t| tag_fits_python(t, name.python)) {
            return Err(format!(
                "tags {} include no {}-{} (Python {})",
                self.tags()
                    .iter()
                    .map(|t| format!("{}-{}", t.python, t.abi))
                    .collect::<Vec<_>>()
                    .join(", "),
                name.python.interpreter_tag(),
                name.python.abi_tag(),
                name.python
            ));
        }
        if !self.fits_cell(name.python, name.platform) {
            return Err(format!(
                "platform tag {} is not one {} builds",
                self.platform.join("."),
                name.platform
            ));
        }
        Ok(())
    }
}

fn check_component(
    name: &str,
    what: &str,
    s: &str,
    allowed: impl Fn(char) -> bool,
) -> Result<(), WheelError> {
    if s.is_empty() {
        return Err(WheelError::Filename {
            name: name.to_owned(),
            reason: format!("empty {what}"),
        });
    }
    if let Some(c) = s.chars().find(|&c| !allowed(c)) {
        return Err(WheelError::Filename {
            name: name.to_owned(),
            reason: format!("{what} {s:?} contains {c:?}"),
        });
    }
    Ok(())
}

impl FromStr for WheelFilename {
    type Err = WheelError;

    fn from_str(file: &str) -> Result<Self, Self::Err> {
        let bad = |reason: &str| WheelError::Filename {
            name: file.to_owned(),
            reason: reason.to_owned(),
        };
        let stem = file
            .strip_suffix(".whl")
            .ok_or_else(|| bad("does not end in .whl"))?;
        let parts: Vec<&str> = stem.split('-').collect();
        let (name, version, build, py, abi, plat) = match parts.as_slice() {
            [n, v, p, a, pl] => (*n, *v, None, *p, *a, *pl),
            [n, v, b, p, a, pl] => (*n, *v, Some(*b), *p, *a, *pl),
            _ => {
                return Err(bad(
                    "expected {name}-{version}(-{build})?-{python}-{abi}-{platform}.whl (5 or 6 parts separated by `-`)",
                ));
            }
        };
        check_component(file, "name", name, |c| {
            c.is_ascii_alphanumeric() || c == '_' || c == '.'
        })?;
        check_component(file, "version", version, |c| {
            c.is_ascii_alphanumeric() || matches!(c, '.' | '_' | '+' | '!')
        })?;
        if let Some(b) = build {
            check_component(file, "build tag", b, |c| {
                c.is_ascii_alphanumeric() || c == '_' || c == '.'
            })?;
            if !b.starts_with(|c: char| c.is_ascii_digit()) {
                return Err(bad("build tag must start with a digit"));
            }
        }
        let tagset = |what: &str, s: &str| -> Result<Vec<String>, WheelError> {
            check_component(file, what, s, |c| {
                c.is_ascii_alphanumeric() || c == '_' || c == '.'
            })?;
            s.split('.')
                .map(|t| {
                    if t.is_empty() {
                        Err(bad(&format!("empty {what} in {s:?}")))
                    } else {
                        Ok(t.to_owned())
                    }
                })
                .collect()
        };
        Ok(WheelFilename {
            name: name.to_owned(),
            version: version.to_owned(),
            build: build.map(str::to_owned),
            python: tagset("python tag", py)?,
            abi: tagset("abi tag", abi)?,
            platform: tagset("platform tag", plat)?,
        })
    }
}

impl fmt::Display for WheelFilename {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "{}-{}", self.name, self.version)?;
        if let Some(b) = &self.build {
            write!(f, "-{b}")?;
        }
        write!(
            f,
            "-{}-{}-{}.whl",
            self.python.join("."),
            self.abi.join("."),
            self.platform.join(".")
        )
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_and_renders() {
        for name in [
            "cupy_cuda13x-14.2.0-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
            "sample_ext-0.1.0-cp311-cp311-linux_x86_64.whl",
            "six-1.16.0-py2.py3-none-any.whl",
            "pkg-1.0-1build-py3-none-any.whl",
            "cupy_cuda13x-14.2.0-cp314-cp314t-win_amd64.whl",
        ] {
            let parsed: WheelFilename = name.parse().unwrap();
            assert_eq!(parsed.to_string(), name);
        }
        let six: WheelFilename = "six-1.16.0-py2.py3-none-any.whl".parse().unwrap();
        assert_eq!(six.tags().len(), 2);
        assert_eq!(six.tags()[1].to_string(), "py3-none-any");
        let c: WheelFilename = "Cupy_CUDA13x-14.2.0-cp312-cp312-linux_x86_64.whl"
            .parse()
            .unwrap();
        assert_eq!(c.normalized_name(), "cupy-cuda13x");
        assert!(c.matches_dist_info("cupy_cuda13x-14.2.0"));
        assert!(!c.matches_dist_info("cupy_cuda12x-14.2.0"));
    }

    #[test]
    fn fits_table() {
        let py = |s: &str| s.parse::<PythonVersion>().unwrap();
        let cases = [
            (
                "c-1-cp312-cp312-manylinux_2_28_x86_64.whl",
                "3.12",
                Platform::Linux64,
                true,
            ),
            (
                "c-1-cp312-cp312-manylinux2014_x86_64.manylinux_2_17_x86_64.whl",
                "3.12",
                Platform::Linux64,
                true,
            ),
            (
                "c-1-cp312-cp312-linux_x86_64.whl",
                "3.12",
                Platform::Linux64,
                true,
            ),
            (
                "c-1-cp312-cp312-musllinux_1_2_aarch64.whl",
                "3.12",
                Platform::LinuxAarch64,
                true,
            ),
            (
                "c-1-cp312-cp312-manylinux_2_28_x86_64.whl",
                "3.12",
                Platform::LinuxAarch64,
                false,
            ),
            (
                "c-1-cp312-cp312-manylinux_2_28_x86_64.whl",
                "3.13",
                Platform::Linux64,
                false,
            ),
            (
                "c-1-cp312-cp312-manylinux_2_28_x86_64.whl",
                "3.12",
                Platform::Win64,
                false,
            ),
            (
                "c-1-cp314-cp314t-win_amd64.whl",
                "3.14t",
                Platform::Win64,
                true,
            ),
            (
                "c-1-cp314-cp314t-win_amd64.whl",
                "3.14",
                Platform::Win64,
                false,
            ),
            (
                "c-1-cp314-cp314-win_amd64.whl",
                "3.14t",
                Platform::Win64,
                false,
            ),
            ("c-1-cp38-abi3-win_amd64.whl", "3.12", Platform::Win64, true),
            (
                "c-1-cp313-abi3-win_amd64.whl",
                "3.12",
                Platform::Win64,
                false,
            ),
            (
                "c-1-cp38-abi3-win_amd64.whl",
                "3.14t",
                Platform::Win64,
                false,
            ),
            (
                "c-1-py3-none-any.whl",
                "3.14t",
                Platform::LinuxAarch64,
                true,
            ),
            ("c-1-py2.py3-none-any.whl", "3.12", Platform::Win64, true),
            ("c-1-py2-none-any.whl", "3.12", Platform::Win64, false),
        ];
        for (name, python, platform, want) in cases {
            let w: WheelFilename = name.parse().unwrap();
            assert_eq!(
                w.fits_cell(py(python), platform),
                want,
                "{name} for {python} {platform}"
            );
        }
    }

    #[test]
    fn fits_the_artifacts_cell() {
        let sha = "0123456789abcdef0123456789abcdef01234567";
        let cell = |n: &str| -> ArtifactName { format!("{n}-{sha}").parse().unwrap() };
        let cases = [
            (
                "cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                "cupy-cuda13x-py3.12-linux-64-pr7",
                None,
            ),
            (
                "cupy_cuda13x-14.2.0-cp314-cp314t-win_amd64.whl",
                "cupy-cuda13x-py3.14t-win-64",
                None,
            ),
            (
                "cupy_cuda12x-14.2.0-cp312-cp312-manylinux_2_28_x86_64.whl",
                "cupy-cuda13x-py3.12-linux-64",
                Some("distribution \"cupy-cuda12x\" is not the artifact's \"cupy-cuda13x\""),
            ),
            (
                "cupy_cuda13x-14.2.0-cp311-cp311-manylinux_2_28_x86_64.whl",
                "cupy-cuda13x-py3.12-linux-64",
                Some("tags cp311-cp311 include no cp312-cp312 (Python 3.12)"),
            ),
            (
                "cupy_cuda13x-14.2.0-cp314-cp314-win_amd64.whl",
                "cupy-cuda13x-py3.14t-win-64",
                Some("tags cp314-cp314 include no cp314-cp314t (Python 3.14t)"),
            ),
            (
                "cupy_cuda13x-14.2.0-cp312-cp312-manylinux_2_28_aarch64.whl",
                "cupy-cuda13x-py3.12-linux-64",
                Some("platform tag manylinux_2_28_aarch64 is not one linux-64 builds"),
            ),
        ];
        for (wheel, artifact, want) in cases {
            let w: WheelFilename = wheel.parse().unwrap();
            assert_eq!(w.fits(&cell(artifact)).err().as_deref(), want, "{wheel}");
        }
    }

    #[test]
    fn rejects() {
        for (name, why) in [
            ("six-1.16.0-py2.py3-none-any.zip", "does not end in .whl"),
            ("six-1.16.0-none-any.whl", "5 or 6 parts"),
            (
                "six-1.16.0-b1-py3-none-any.whl",
                "build tag must start with a digit",
            ),
            ("si x-1.0-py3-none-any.whl", "name \"si x\" contains ' '"),
            ("six-1.0-py3..py2-none-any.whl", "empty python tag"),
        ] {
            let err = name.parse::<WheelFilename>().unwrap_err().to_string();
            assert!(err.contains(why), "{name}: {err}");
        }
    }
}
