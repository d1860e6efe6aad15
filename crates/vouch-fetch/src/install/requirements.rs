//! Which requirements of a verified wheel the second install step hands to pip: its core
//! metadata's `Requires-Dist`, each marker evaluated by `pep508_rs` (never by hand) against the
//! target interpreter's marker environment with the requested extras in effect.

use std::collections::BTreeSet;
use std::path::Path;
use std::str::FromStr;

use pep508_rs::{ExtraName, MarkerEnvironment, MarkerTree, PackageName, Requirement};

use super::InstallError;

/// The fields of a wheel's `METADATA` the second step reads.
#[derive(Debug)]
pub(crate) struct CoreMetadata {
    pub name: PackageName,
    pub version: String,
    pub provides_extra: BTreeSet<ExtraName>,
    pub requires_dist: Vec<Requirement>,
}

/// The extras in effect and the requirements they select, markers removed.
#[derive(Debug, PartialEq, Eq)]
pub(crate) struct Selection {
    pub extras: Vec<String>,
    pub requirements: Vec<String>,
}

/// The header fields of a core-metadata file (an RFC 822 message: fields until the first
/// empty line, a line starting with blank space continuing the field before it).
fn fields(text: &str) -> Vec<(String, String)> {
    let mut out: Vec<(String, String)> = Vec::new();
    for line in text.lines() {
        if line.trim().is_empty() {
            break;
        }
        if line.starts_with([' ', '\t']) {
            if let Some((_, value)) = out.last_mut() {
                value.push(' ');
                value.push_str(line.trim());
            }
            continue;
        }
        if let Some((key, value)) = line.split_once(':') {
            out.push((key.trim().to_ascii_lowercase(), value.trim().to_owned()));
        }
    }
    out
}

impl CoreMetadata {
    pub fn parse(wheel: &Path, text: &str) -> Result<CoreMetadata, InstallError> {
        let bad = |reason: String| InstallError::BadMetadata {
            wheel: wheel.to_owned(),
            reason,
        };
        let fields = fields(text);
        let first = |key: &str| {
            fields
                .iter()
                .find(|(k, _)| k == key)
                .map(|(_, v)| v.as_str())
                .filter(|v| !v.is_empty())
        };
        let name = first("name").ok_or_else(|| bad("it has no Name field".into()))?;
        let name = PackageName::from_str(name)
            .map_err(|e| bad(format!("Name {name:?} is not a valid project name: {e}")))?;
        let version = first("version")
            .ok_or_else(|| bad("it has no Version field".into()))?
            .to_owned();
        let mut provides_extra = BTreeSet::new();
        let mut requires_dist = Vec::new();
        for (key, value) in &fields {
            match key.as_str() {
                "provides-extra" => {
                    provides_extra.insert(ExtraName::from_str(value).map_err(|e| {
                        bad(format!(
                            "Provides-Extra {value:?} is not a valid extra name: {e}"
                        ))
                    })?);
                }
                "requires-dist" => {
                    requires_dist.push(Requirement::from_str(value).map_err(|e| {
                        bad(format!(
                            "Requires-Dist {value:?} is not a PEP 508 requirement: {e}"
                        ))
                    })?);
                }
                _ => {}
            }
        }
        Ok(CoreMetadata {
            name,
            version,
            provides_extra,
            requires_dist,
        })
    }

    /// The requirements to install with `requested` extras in `env`: the unconditional ones,
    /// and those whose markers hold with the extras in effect. A requirement on this very
    /// distribution (`pkg[all]` listing `pkg[test]`) adds its extras to those in effect
    /// instead of being installed: from the index it would bring an unverified copy of the
    /// wheel.
    pub fn select(
        &self,
        wheel: &Path,
        requested: &[String],
        env: &MarkerEnvironment,
    ) -> Result<Selection, InstallError> {
        let mut active = BTreeSet::new();
        for raw in requested {
            let extra = ExtraName::from_str(raw).map_err(|source| InstallError::InvalidExtra {
                extra: raw.clone(),
                reason: source.to_string(),
            })?;
            if !self.provides_extra.contains(&extra) {
                return Err(InstallError::UnknownExtra {
                    extra: raw.clone(),
                    wheel: wheel.to_owned(),
                    provided: self.provides_extra.iter().map(|e| e.to_string()).collect(),
                });
            }
            active.insert(extra);
        }
        // Only grows, within the extras the requirements name: ends.
        loop {
            let extras: Vec<ExtraName> = active.iter().cloned().collect();
            let before = active.len();
            for r in &self.requires_dist {
                if r.name == self.name && r.evaluate_markers(env, &extras) {
                    active.extend(r.extras.iter().cloned());
                }
            }
            if active.len() == before {
                break;
            }
        }
        let extras: Vec<ExtraName> = active.iter().cloned().collect();
        let mut requirements: Vec<String> = Vec::new();
        for r in &self.requires_dist {
            if r.name == self.name || !r.evaluate_markers(env, &extras) {
                continue;
            }
            let mut plain = r.clone();
            // Evaluated here; left in, pip would evaluate `extra` without the extras.
            plain.marker = MarkerTree::TRUE;
            let line = plain.to_string();
            if !requirements.contains(&line) {
                requirements.push(line);
            }
        }
        Ok(Selection {
            extras: extras.iter().map(ToString::to_string).collect(),
            requirements,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use pep508_rs::MarkerEnvironmentBuilder;

    const METADATA: &str = "Metadata-Version: 2.1
Name: CuPy_CUDA13x
Version: 14.2.0
Summary: CuPy: NumPy & SciPy for GPU
Requires-Dist: numpy<2.6,>=2.0
Requires-Dist: cuda-pathfinder>=1.3; python_version >= \"3.11\"
Requires-Dist: pytest>=7.2; extra == \"test\"
Requires-Dist: hypothesis<6.55.0,>=6.37.2;
  extra == 'test'
Requires-Dist: pywin32; sys_platform == \"win32\" and extra == \"test\"
Requires-Dist: scipy>=1.10; extra == \"all\"
Requires-Dist: cupy-cuda13x[test]; extra == \"all\"
Requires-Dist: cupy_cuda13x[ctk]; extra == \"dev\"
Requires-Dist: nvidia-cuda-runtime==13.*; extra == \"ctk\"
Requires-Dist: Cython>=3; extra == 'Dev_Tools'
Provides-Extra: test
Provides-Extra: all
Provides-Extra: dev
Provides-Extra: ctk
Provides-Extra: dev-tools

Requires-Dist: in-the-description; extra == \"test\"
";

    fn env(sys_platform: &str, python: &str) -> MarkerEnvironment {
        MarkerEnvironment::try_from(MarkerEnvironmentBuilder {
            implementation_name: "cpython",
            implementation_version: "3.12.3",
            os_name: if sys_platform == "win32" {
                "nt"
            } else {
                "posix"
            },
            platform_machine: "x86_64",
            platform_python_implementation: "CPython",
            platform_release: "",
            platform_system: if sys_platform == "win32" {
                "Windows"
            } else {
                "Linux"
            },
            platform_version: "",
            python_full_version: &format!("{python}.0"),
            python_version: python,
            sys_platform,
        })
        .unwrap()
    }

    #[test]
    fn parses_the_header_fields_only() {
        let m = CoreMetadata::parse(Path::new("w.whl"), METADATA).unwrap();
        assert_eq!(m.name.to_string(), "cupy-cuda13x");
        assert_eq!(m.version, "14.2.0");
        assert_eq!(
            m.provides_extra
                .iter()
                .map(|e| e.to_string())
                .collect::<Vec<_>>(),
            ["all", "ctk", "dev", "dev-tools", "test"]
        );
        // The continuation line is part of hypothesis's requirement; the body is not metadata.
        assert_eq!(m.requires_dist.len(), 10);
        assert_eq!(
            m.requires_dist[3].marker.contents().unwrap().to_string(),
            "extra == 'test'"
        );
    }

    #[test]
    fn selection_table() {
        let m = CoreMetadata::parse(Path::new("w.whl"), METADATA).unwrap();
        let base = ["numpy>=2.0,<2.6", "cuda-pathfinder>=1.3"];
        type Case<'a> = (
            &'a [&'a str],
            (&'a str, &'a str),
            &'a [&'a str],
            &'a [&'a str],
        );
        let cases: &[Case] = &[
            // No extra: the unconditional requirements and those whose markers hold.
            (&[], ("linux", "3.12"), &[], &base),
            (&[], ("linux", "3.10"), &[], &["numpy>=2.0,<2.6"]),
            (
                &["test"],
                ("linux", "3.12"),
                &["test"],
                &[
                    base[0],
                    base[1],
                    "pytest>=7.2",
                    "hypothesis>=6.37.2,<6.55.0",
                ],
            ),
            // The platform marker evaluated with the extra in effect.
            (
                &["test"],
                ("win32", "3.12"),
                &["test"],
                &[
                    base[0],
                    base[1],
                    "pytest>=7.2",
                    "hypothesis>=6.37.2,<6.55.0",
                    "pywin32",
                ],
            ),
            // `all` names the wheel's own `test` extra: expanded here, never sent to pip.
            (
                &["all"],
                ("linux", "3.12"),
                &["all", "test"],
                &[
                    base[0],
                    base[1],
                    "pytest>=7.2",
                    "hypothesis>=6.37.2,<6.55.0",
                    "scipy>=1.10",
                ],
            ),
            // Two levels, and an unnormalized self-reference (`cupy_cuda13x[ctk]`).
            (
                &["dev"],
                ("linux", "3.12"),
                &["ctk", "dev"],
                &[base[0], base[1], "nvidia-cuda-runtime==13.*"],
            ),
            // Extras are compared normalized (PEP 685), and each requirement listed once.
            (
                &["all", "TEST", "dev.tools"],
                ("linux", "3.12"),
                &["all", "dev-tools", "test"],
                &[
                    base[0],
                    base[1],
                    "pytest>=7.2",
                    "hypothesis>=6.37.2,<6.55.0",
                    "scipy>=1.10",
                    "cython>=3",
                ],
            ),
        ];
        for (requested, (platform, python), extras, want) in cases {
            let requested: Vec<String> = requested.iter().map(|s| (*s).to_owned()).collect();
            let got = m
                .select(Path::new("w.whl"), &requested, &env(platform, python))
                .unwrap();
            assert_eq!(
                (got.extras.as_slice(), got.requirements.as_slice()),
                (
                    &extras.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()[..],
                    &want.iter().map(|s| (*s).to_owned()).collect::<Vec<_>>()[..]
                ),
                "{requested:?} on {platform} {python}"
            );
        }
    }

    #[test]
    fn refusals() {
        let m = CoreMetadata::parse(Path::new("d/w.whl"), METADATA).unwrap();
        let e = env("linux", "3.12");
        let err = |extras: &[&str]| {
            let extras: Vec<String> = extras.iter().map(|s| (*s).to_owned()).collect();
            m.select(Path::new("d/w.whl"), &extras, &e)
                .unwrap_err()
                .to_string()
        };
        assert_eq!(
            err(&["test", "tset"]),
            "--extras: \"tset\" is not an extra of d/w.whl; it provides all, ctk, dev, dev-tools, test"
        );
        assert_eq!(
            err(&["a b"]),
            "--extras: \"a b\" is not a valid extra name (Not a valid package or extra name: \"a b\". Names must start and end with a letter or digit and may only contain -, _, ., and alphanumeric characters.)"
        );
        let none = CoreMetadata::parse(Path::new("p.whl"), "Name: p\nVersion: 1\n").unwrap();
        assert_eq!(
            none.select(Path::new("p.whl"), &["test".into()], &e)
                .unwrap_err()
                .to_string(),
            "--extras: \"test\" is not an extra of p.whl; it provides none"
        );
        for (text, why) in [
            ("Version: 1\n", "p.whl: METADATA: it has no Name field"),
            ("Name: p\n", "p.whl: METADATA: it has no Version field"),
            (
                "Name: p\nVersion: 1\nRequires-Dist: numpy >=< 2\n",
                "p.whl: METADATA: Requires-Dist \"numpy >=< 2\" is not a PEP 508 requirement",
            ),
        ] {
            let got = CoreMetadata::parse(Path::new("p.whl"), text)
                .unwrap_err()
                .to_string();
            assert!(got.starts_with(why), "{got}");
        }
    }
}
