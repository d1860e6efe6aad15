//! A local directory laid out like the GitHub API (the embedded default: the whole flow on one
//! machine), and `publish`, which writes it.

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::de::DeserializeOwned;
use serde_json::json;
use vouch_github::{Artifact, Download, Repository, Run, Workflow};

use super::{ArtifactSource, BoxFuture, SourceInputs, SourceKind};
use crate::FetchError;

/// `store:DIR`: a directory laid out like GitHub's artifact API (what `vouch publish` writes).
pub const KIND: SourceKind = SourceKind::new("store", Some("DIR"), false, false, open);

fn open(dir: Option<&str>, _: SourceInputs) -> Result<Box<dyn ArtifactSource>, FetchError> {
    let root = PathBuf::from(dir.expect("the spec's argument is required"));
    Ok(Box::new(LocalStore { root }))
}

/// `<root>/repository.json`, `<root>/workflows/<file>.json`, `<root>/runs/<id>.json`,
/// `<root>/artifacts/<id>.json` and `<root>/artifacts/<id>.zip`, with the GitHub API's shapes.
pub struct LocalStore {
    pub root: PathBuf,
}

impl LocalStore {
    fn read_value(&self, path: &Path) -> Result<serde_json::Value, FetchError> {
        let text = std::fs::read_to_string(path).map_err(|e| FetchError::Store {
            path: path.to_owned(),
            reason: e.to_string(),
        })?;
        serde_json::from_str(&text).map_err(|e| FetchError::Store {
            path: path.to_owned(),
            reason: format!("not JSON: {e}"),
        })
    }

    fn read<T: DeserializeOwned>(&self, rel: &str) -> Result<T, FetchError> {
        let path = self.root.join(rel);
        let v = self.read_value(&path)?;
        serde_json::from_value(v).map_err(|e| FetchError::Store {
            path,
            reason: format!("not in the GitHub API's shape: {e}"),
        })
    }

    fn list(&self, name: &str) -> Result<Vec<Artifact>, FetchError> {
        let dir = self.root.join("artifacts");
        let listing = |e: std::io::Error| FetchError::Store {
            path: dir.clone(),
            reason: e.to_string(),
        };
        let mut out = Vec::new();
        for e in std::fs::read_dir(&dir).map_err(listing)? {
            let p = e.map_err(listing)?.path();
            if p.extension().is_none_or(|x| x != "json") {
                continue;
            }
            // Like the API's `?name=` filter: entries of other names are not parsed.
            let v = self.read_value(&p)?;
            if v["name"] == name {
                out.push(serde_json::from_value(v).map_err(|e| FetchError::Store {
                    path: p,
                    reason: format!("not in the GitHub API's shape: {e}"),
                })?);
            }
        }
        Ok(out)
    }

    fn copy_zip(&self, id: u64, dest: &Path) -> Result<Download, FetchError> {
        let from = self.root.join(format!("artifacts/{id}.zip"));
        let data = std::fs::read(&from).map_err(|e| FetchError::Store {
            path: from.clone(),
            reason: e.to_string(),
        })?;
        // `dest` is a fresh name in fetch's own private directory: create it, never open
        // something already there.
        std::fs::File::create_new(dest)
            .and_then(|mut f| f.write_all(&data))
            .map_err(|e| FetchError::Io {
                path: dest.to_owned(),
                source: e,
            })?;
        Ok(Download {
            bytes: data.len() as u64,
            sha256: vouch_core::Sha256Digest::of(&data),
        })
    }
}

impl ArtifactSource for LocalStore {
    fn repository<'a>(&'a self, _repo: &'a str) -> BoxFuture<'a, Result<Repository, FetchError>> {
        let r = self.read("repository.json");
        Box::pin(async move { r })
    }

    fn workflow<'a>(
        &'a self,
        _repo: &'a str,
        path: &'a str,
    ) -> BoxFuture<'a, Result<Workflow, FetchError>> {
        let file = path.rsplit('/').next().unwrap_or(path);
        let r = self.read(&format!("workflows/{file}.json"));
        Box::pin(async move { r })
    }

    fn artifacts_named<'a>(
        &'a self,
        _repo: &'a str,
        name: &'a str,
    ) -> BoxFuture<'a, Result<Vec<Artifact>, FetchError>> {
        let r = self.list(name);
        Box::pin(async move { r })
    }

    fn run<'a>(&'a self, _repo: &'a str, id: u64) -> BoxFuture<'a, Result<Run, FetchError>> {
        let r = self.read(&format!("runs/{id}.json"));
        Box::pin(async move { r })
    }

    fn download<'a>(
        &'a self,
        _repo: &'a str,
        artifact: &'a Artifact,
        dest: &'a Path,
    ) -> BoxFuture<'a, Result<Download, FetchError>> {
        let r = self.copy_zip(artifact.id, dest);
        Box::pin(async move { r })
    }
}

/// The run a published artifact claims to come from.
#[derive(Clone, Debug)]
pub struct RunInfo {
    pub repo: String,
    pub run_id: u64,
    pub workflow_id: u64,
    pub workflow_path: String,
    pub event: String,
    pub head_sha: String,
    /// The branch the run's head is on (a signer run's: the default branch).
    pub head_branch: Option<String>,
    pub pr: Option<u64>,
    /// Recorded in the store's `repository.json` when the store has none yet.
    pub default_branch: String,
}

/// Zips `files` (flat) into the store as artifact `name` of run `run`. Returns the artifact id.
pub fn publish(
    root: &Path,
    name: &str,
    run: &RunInfo,
    files: &[PathBuf],
) -> Result<u64, FetchError> {
    let io = |p: &Path| {
        let p = p.to_owned();
        move |e| FetchError::Io { path: p, source: e }
    };
    for d in ["artifacts", "runs", "workflows"] {
        std::fs::create_dir_all(root.join(d)).map_err(io(&root.join(d)))?;
    }
    let next_id = std::fs::read_dir(root.join("artifacts"))
        .map_err(io(root))?
        .filter_map(|e| e.ok()?.path().file_stem()?.to_str()?.parse::<u64>().ok())
        .max()
        .unwrap_or(1000)
        + 1;
    let zip_path = root.join(format!("artifacts/{next_id}.zip"));
    // Built in memory, then written like every other output (exclusive temp file + rename).
    let mut zw = zip::ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for f in files {
        let name = f
            .file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| FetchError::Store {
                path: f.clone(),
                reason: "no file name".into(),
            })?;
        zw.start_file(name, zip::write::SimpleFileOptions::default())
            .map_err(|e| FetchError::Store {
                path: zip_path.clone(),
                reason: e.to_string(),
            })?;
        zw.write_all(&std::fs::read(f).map_err(io(f))?)
            .map_err(io(&zip_path))?;
    }
    let data = zw
        .finish()
        .map_err(|e| FetchError::Store {
            path: zip_path.clone(),
            reason: e.to_string(),
        })?
        .into_inner();
    vouch_fs::write_atomically(&zip_path, &data, vouch_fs::Mode::Public).map_err(io(&zip_path))?;
    let repo_obj = json!({ "id": 1, "full_name": run.repo, "fork": false });
    let repo_file = root.join("repository.json");
    if !repo_file.exists() {
        let mut full = repo_obj.clone();
        full["default_branch"] = json!(run.default_branch);
        vouch_fs::write_atomically(
            &repo_file,
            serde_json::to_string_pretty(&full)
                .expect("json")
                .as_bytes(),
            vouch_fs::Mode::Public,
        )
        .map_err(io(&repo_file))?;
    }
    let artifact = json!({
        "id": next_id, "name": name, "size_in_bytes": data.len(), "expired": false,
        "created_at": format!("2026-01-01T00:{:02}:{:02}Z", (next_id / 60) % 60, next_id % 60),
        "digest": vouch_core::Sha256Digest::of(&data).to_string(),
        "archive_download_url": format!("/repos/{}/actions/artifacts/{next_id}/zip", run.repo),
        "workflow_run": {
            "id": run.run_id, "repository_id": 1, "head_repository_id": 1,
            "head_sha": run.head_sha, "head_branch": run.head_branch,
        },
    });
    let run_obj = json!({
        "id": run.run_id, "workflow_id": run.workflow_id, "path": run.workflow_path, "event": run.event,
        "status": "completed", "conclusion": "success", "head_sha": run.head_sha,
        "head_branch": run.head_branch, "run_attempt": 1,
        "repository": repo_obj, "head_repository": repo_obj,
        "pull_requests": run.pr.map(|n| vec![json!({"number": n})]).unwrap_or_default(),
    });
    // A run's `path` may carry `@ref`; the workflow object's does not.
    let wf_path = run
        .workflow_path
        .split('@')
        .next()
        .unwrap_or(&run.workflow_path);
    let wf = json!({ "id": run.workflow_id, "path": wf_path, "name": wf_path });
    let file = wf_path.rsplit('/').next().unwrap_or(wf_path);
    for (rel, v) in [
        (format!("artifacts/{next_id}.json"), artifact),
        (format!("runs/{}.json", run.run_id), run_obj),
        (format!("workflows/{file}.json"), wf),
    ] {
        let p = root.join(rel);
        vouch_fs::write_atomically(
            &p,
            serde_json::to_string_pretty(&v).expect("json").as_bytes(),
            vouch_fs::Mode::Public,
        )
        .map_err(io(&p))?;
    }
    Ok(next_id)
}
