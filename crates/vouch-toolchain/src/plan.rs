//! What an install would fetch, resolved from the profile alone: every file with its sha256
//! pins, for any platform on any host. Nothing is downloaded and no interpreter is needed.

use std::path::Path;

use serde::Serialize;
use vouch_core::Platform;
use vouch_profile::Toolchain;

use crate::{ToolchainError, archive_file_name, parse_requirements, target, toolchain_key};

/// One file an install fetches.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct PlannedFile {
    /// `nvidia-cublas==13.1.0.3` for a wheel, the archive's file name for an archive.
    pub name: String,
    /// Where an archive comes from (a URL or a path relative to the profile); wheels come from
    /// pip's index.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub url: Option<String>,
    /// The sha256 values the file must have (a wheel may list several; one must match).
    pub sha256: Vec<String>,
}

/// A toolkit install, resolved but not run.
#[derive(Clone, Debug, Serialize, PartialEq, Eq)]
pub struct Plan {
    pub platform: String,
    /// The host's platform, when vouch knows it.
    pub host: Option<String>,
    /// The toolkit is for another platform than the host: it is laid out and checked, and its
    /// `nvcc` is not run.
    pub foreign: bool,
    /// The cache key the pins give (the same as an install's).
    pub key: String,
    /// `wheels` (NVIDIA's PyPI wheels through pip) or `archives` (redistributable archives).
    pub source: &'static str,
    /// The requirements file, relative to the profile, for wheels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub requirements: Option<String>,
    /// `CUDA_PATH` inside the unpacked tree, for wheels.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub root: Option<String>,
    /// The `--platform` tags pip downloads with, for wheels.
    #[serde(skip_serializing_if = "Vec::is_empty")]
    pub pip_platforms: Vec<String>,
    pub files: Vec<PlannedFile>,
}

pub fn plan(
    spec: &Toolchain,
    profile_dir: &Path,
    platform: Platform,
) -> Result<Plan, ToolchainError> {
    let key = toolchain_key(spec, profile_dir)?;
    let host = Platform::host();
    let mut plan = Plan {
        platform: platform.to_string(),
        host: host.map(|h| h.to_string()),
        foreign: host != Some(platform),
        key,
        source: "archives",
        requirements: None,
        root: spec.root.clone(),
        pip_platforms: Vec::new(),
        files: Vec::new(),
    };
    if let Some(req) = &spec.wheels {
        plan.source = if spec.archives.is_empty() {
            "wheels"
        } else {
            "archives+wheels"
        };
        plan.requirements = Some(req.clone());
        plan.pip_platforms = target::pip_platforms(platform);
        plan.files = parse_requirements(&profile_dir.join(req))?
            .into_iter()
            .map(|pin| PlannedFile {
                name: pin.requirement,
                url: None,
                sha256: pin.sha256,
            })
            .collect();
    } else if spec.archives.is_empty() {
        return Err(ToolchainError::Empty);
    }
    plan.files.extend(spec.archives.iter().map(|a| PlannedFile {
        name: archive_file_name(&a.url),
        url: Some(a.url.clone()),
        sha256: vec![a.sha256.to_ascii_lowercase()],
    }));
    Ok(plan)
}
