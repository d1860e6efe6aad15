//! Policy files: an auditor keeps the expected identities of the projects they check.
//!
//! ```toml
//! # applies to every file
//! issuer = "https://token.actions.githubusercontent.com"
//! runner = "github-hosted"
//!
//! [[project]]
//! name = "cupy-cuda13x"           # distribution name (normalized)
//! repository = "cupy/cupy"
//! build_workflow = ".github/workflows/ci.yml"
//! ref = "refs/tags/v*"
//! ```
//!
//! `run_id`, `pr` and `cell` are enforced exactly as `vouch verify --run-id/--pr/--cell`: the
//! certificate's run, the pull request (the certificate's ref and the statement's claim), and
//! the statement's cell. With `predicate_type = "pr-build"` (a PR build signed by the signer
//! workflow), `pr`, `pr_head_sha` and `pr_build_workflow` are held to the statement's request
//! and build run, and `signer_workflow` must name the signer with its ref.

use std::path::Path;

use serde::Deserialize;

use crate::Policy;

/// A policy file that cannot be used. Not a verification failure: nothing was checked yet.
#[derive(Debug, thiserror::Error)]
pub enum PolicyFileError {
    #[error("cannot read policy file {path:?}")]
    Read {
        path: std::path::PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("policy file {path:?}: {message}")]
    Invalid {
        path: std::path::PathBuf,
        message: String,
    },
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicySpec {
    pub repository: Option<String>,
    /// The owner whose repositories may have signed (gh's `--owner`).
    pub owner: Option<String>,
    pub signer_workflow: Option<String>,
    pub build_workflow: Option<String>,
    #[serde(rename = "ref")]
    pub git_ref: Option<String>,
    pub sha: Option<String>,
    pub event: Option<String>,
    pub issuer: Option<String>,
    /// `github-hosted`, `self-hosted`, or `any`.
    pub runner: Option<String>,
    pub predicate_type: Option<String>,
    /// The workflow run that must have signed (OID .1.21, or the statement's invocation id).
    pub run_id: Option<u64>,
    /// The pull request the build must be for.
    pub pr: Option<u64>,
    /// The matrix cell the vouch statement must claim.
    pub cell: Option<String>,
    /// pr-build statements: the PR head commit the build run must have built.
    pub pr_head_sha: Option<String>,
    /// pr-build statements: the workflow file that must have run the build.
    pub pr_build_workflow: Option<String>,
}

#[derive(Clone, Debug, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct ProjectPolicy {
    pub name: String,
    #[serde(flatten)]
    pub spec: PolicySpec,
}

#[derive(Clone, Debug, Default, Deserialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct PolicyFile {
    #[serde(flatten)]
    pub default: PolicySpec,
    #[serde(default)]
    pub project: Vec<ProjectPolicy>,
}

impl PolicySpec {
    /// Overlays the keys this spec sets onto `p`.
    pub fn apply(&self, p: &mut Policy) {
        let set = |dst: &mut Option<String>, src: &Option<String>| {
            if src.is_some() {
                dst.clone_from(src);
            }
        };
        set(&mut p.repository, &self.repository);
        set(&mut p.owner, &self.owner);
        set(&mut p.signer_workflow, &self.signer_workflow);
        set(&mut p.build_workflow, &self.build_workflow);
        set(&mut p.git_ref, &self.git_ref);
        set(&mut p.sha, &self.sha);
        set(&mut p.event, &self.event);
        set(&mut p.cell, &self.cell);
        set(&mut p.pr_head_sha, &self.pr_head_sha);
        set(&mut p.pr_build_workflow, &self.pr_build_workflow);
        if let Some(r) = self.run_id {
            p.run_id = Some(r.to_string());
        }
        if self.pr.is_some() {
            p.pr = self.pr;
        }
        if let Some(i) = &self.issuer {
            p.issuer.clone_from(i);
        }
        if let Some(r) = &self.runner {
            p.runner = (r != "any").then(|| r.clone());
        }
        if let Some(t) = &self.predicate_type {
            p.predicate_type = match t.as_str() {
                "slsa" => vouch_core::statement::PREDICATE_SLSA_V1.to_owned(),
                "pep740" => crate::PREDICATE_PEP740.to_owned(),
                "pr-build" => crate::PREDICATE_PR_BUILD_V1.to_owned(),
                uri => uri.to_owned(),
            };
        }
    }
}

impl PolicyFile {
    pub fn load(path: &Path) -> Result<PolicyFile, PolicyFileError> {
        let text = crate::read_regular_to_string(path).map_err(|source| PolicyFileError::Read {
            path: path.to_owned(),
            source,
        })?;
        let file: PolicyFile = toml::from_str(&text).map_err(|e| PolicyFileError::Invalid {
            path: path.to_owned(),
            message: e.message().to_owned(),
        })?;
        // A short or mistyped commit could never match a certificate: say so now rather than
        // fail every file later with a policy mismatch.
        let specs = std::iter::once((None, &file.default)).chain(
            file.project
                .iter()
                .map(|p| (Some(p.name.as_str()), &p.spec)),
        );
        for (name, spec) in specs {
            for (key, sha) in [("sha", &spec.sha), ("pr_head_sha", &spec.pr_head_sha)] {
                if let Some(sha) = sha
                    && !crate::is_commit_sha(sha)
                {
                    return Err(PolicyFileError::Invalid {
                        path: path.to_owned(),
                        message: format!(
                            "{}{key} = {sha:?} is not a full commit SHA (40 lowercase hex digits)",
                            name.map_or_else(String::new, |n| format!("[[project]] {n:?}: "))
                        ),
                    });
                }
            }
        }
        Ok(file)
    }

    /// The spec for distribution `dist` (normalized name), if the file names it.
    pub fn project(&self, dist: &str) -> Option<&PolicySpec> {
        let dist = vouch_core::normalize_dist_name(dist);
        self.project
            .iter()
            .find(|p| vouch_core::normalize_dist_name(&p.name) == dist)
            .map(|p| &p.spec)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The example policy committed for CuPy loads and says what its comments say.
    #[test]
    fn cupys_example_policy_loads() {
        let path = Path::new(env!("CARGO_MANIFEST_DIR"))
            .join("../../pyproject-templates/cupy/policy.toml");
        let file = PolicyFile::load(&path).unwrap();
        for dist in ["cupy-cuda13x", "cupy_cuda12x", "cupy"] {
            let spec = file.project(dist).unwrap_or_else(|| panic!("{dist}"));
            assert_eq!(spec.repository.as_deref(), Some("cupy/cupy"));
            assert_eq!(spec.git_ref.as_deref(), Some("refs/tags/v*"));
        }
        assert_eq!(file.default.runner.as_deref(), Some("github-hosted"));
    }

    #[test]
    fn parses_and_overlays() {
        let f: PolicyFile = toml::from_str(
            "runner = \"any\"\n[[project]]\nname = \"CuPy_cuda13x\"\nrepository = \"cupy/cupy\"\nref = \"refs/tags/v*\"\npredicate_type = \"pep740\"\n",
        )
        .unwrap();
        let mut p = Policy::default();
        f.default.apply(&mut p);
        assert_eq!(p.runner, None);
        f.project("cupy-cuda13x").unwrap().apply(&mut p);
        assert_eq!(p.repository.as_deref(), Some("cupy/cupy"));
        assert_eq!(p.git_ref.as_deref(), Some("refs/tags/v*"));
        assert_eq!(p.predicate_type, crate::PREDICATE_PEP740);
        let f: PolicyFile =
            toml::from_str("run_id = 12\npr = 7\n[[project]]\nname = \"a\"\ncell = \"c1\"\n")
                .unwrap();
        let mut p = Policy::default();
        f.default.apply(&mut p);
        f.project("a").unwrap().apply(&mut p);
        assert_eq!(
            (p.run_id.as_deref(), p.pr, p.cell.as_deref()),
            (Some("12"), Some(7), Some("c1"))
        );
        let f: PolicyFile = toml::from_str(
            "predicate_type = \"pr-build\"\npr_build_workflow = \".github/workflows/vouch-build.yml\"\n",
        )
        .unwrap();
        let mut p = Policy::default();
        f.default.apply(&mut p);
        assert_eq!(p.predicate_type, crate::PREDICATE_PR_BUILD_V1);
        assert_eq!(
            p.pr_build_workflow.as_deref(),
            Some(".github/workflows/vouch-build.yml")
        );
        let err = toml::from_str::<PolicyFile>("repo = \"x\"").unwrap_err();
        assert!(err.message().contains("unknown field `repo`"), "{err}");
    }
}
