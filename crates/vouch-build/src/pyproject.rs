use std::path::Path;

use crate::BuildError;

/// The `[build-system]` table of a project (PEP 518/517), with the spec's defaults.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct BuildSystem {
    pub requires: Vec<String>,
    pub backend: String,
}

#[derive(serde::Deserialize)]
struct PyProject {
    #[serde(rename = "build-system")]
    build_system: Option<Table>,
}

#[derive(serde::Deserialize)]
struct Table {
    requires: Option<Vec<String>>,
    #[serde(rename = "build-backend")]
    build_backend: Option<String>,
}

impl BuildSystem {
    pub fn read(source: &Path) -> Result<Self, BuildError> {
        let path = source.join("pyproject.toml");
        let legacy = BuildSystem {
            requires: vec!["setuptools>=40.8.0".into()],
            backend: "setuptools.build_meta:__legacy__".into(),
        };
        let text = match std::fs::read_to_string(&path) {
            Ok(t) => t,
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
                if source.join("setup.py").is_file() {
                    return Ok(legacy);
                }
                return Err(BuildError::Project {
                    path: source.to_owned(),
                    reason: "it has neither pyproject.toml nor setup.py".into(),
                });
            }
            Err(e) => return Err(BuildError::Io { path, source: e }),
        };
        let parsed: PyProject = toml::from_str(&text).map_err(|e| BuildError::Project {
            path: path.clone(),
            reason: e.to_string(),
        })?;
        let Some(table) = parsed.build_system else {
            return Ok(legacy);
        };
        Ok(BuildSystem {
            requires: table.requires.ok_or_else(|| BuildError::Project {
                path,
                reason: "[build-system] has no `requires` key".into(),
            })?,
            backend: table.build_backend.unwrap_or(legacy.backend),
        })
    }
}
