use std::fs::File;
use std::path::{Path, PathBuf};

use crate::BuildError;

/// Marks a directory as one vouch made, so it may be emptied next time.
const MARKER: &str = ".vouch-workdir";

/// The build's working directory: a fixed path, held under an exclusive lock for the whole
/// build (concurrent builds with the same work dir wait their turn), emptied before use and
/// removed after. vouch empties only a directory it made itself (it holds the marker file) or
/// an empty one, and never one that holds, or lies inside, a path it must not lose (the
/// source, the output directory).
pub struct WorkDir {
    root: PathBuf,
    _lock: File,
}

/// `path` made absolute and, where it exists, canonical (symlinks resolved), so that
/// containment checks compare like with like.
fn resolved(path: &Path) -> Result<PathBuf, BuildError> {
    let abs = std::path::absolute(path).map_err(|source| BuildError::Io {
        path: path.to_owned(),
        source,
    })?;
    // The longest existing ancestor is canonicalized; the rest is appended as given.
    let mut existing = abs.as_path();
    let mut rest = Vec::new();
    loop {
        if let Ok(c) = std::fs::canonicalize(existing) {
            let mut out = c;
            for part in rest.iter().rev() {
                out.push(part);
            }
            return Ok(out);
        }
        match (existing.parent(), existing.file_name()) {
            (Some(parent), Some(name)) => {
                rest.push(name.to_owned());
                existing = parent;
            }
            _ => return Ok(abs),
        }
    }
}

impl WorkDir {
    /// Locks and empties `root`. `keep` are paths the build must not lose: `root` may neither
    /// be one of them, contain one, nor lie inside one.
    pub fn lock(root: &Path, keep: &[&Path]) -> Result<WorkDir, BuildError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| BuildError::Io { path, source }
        };
        let refuse = |reason: String| BuildError::WorkDir {
            path: root.to_owned(),
            reason,
        };
        let root = &resolved(root)?;
        // Inside another build's work directory, this build's files would be emptied by that
        // one (when it starts, or when it ends) while this build runs.
        if let Some(outer) = root.ancestors().skip(1).find(|a| a.join(MARKER).is_file()) {
            return Err(refuse(format!(
                "lies inside {outer:?}, another vouch work directory, which is emptied when a build takes it; choose a directory outside it"
            )));
        }
        for k in keep {
            let k = resolved(k)?;
            if root == &k || k.starts_with(root) {
                return Err(refuse(format!(
                    "holds {k:?}, which the build reads or writes; emptying it would lose it"
                )));
            }
            if root.starts_with(&k) {
                return Err(refuse(format!(
                    "lies inside {k:?}, which the build reads or writes; choose a directory outside it"
                )));
            }
        }
        let parent = root.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let lock_path = root.with_extension("lock");
        tracing::debug!(dir = %root.display(), "waiting for the work directory lock");
        let lock = vouch_fs::lock_file(&lock_path).map_err(io(&lock_path))?;
        match std::fs::symlink_metadata(root) {
            Ok(meta) if !meta.is_dir() => {
                return Err(refuse("exists and is not a directory".into()));
            }
            Ok(_) => {
                let made_by_vouch = root.join(MARKER).is_file();
                let empty = std::fs::read_dir(root).map_err(io(root))?.next().is_none();
                if !made_by_vouch && !empty {
                    return Err(refuse(format!(
                        "is not empty and was not made by vouch (no {MARKER} file); vouch empties only its own work directories"
                    )));
                }
                vouch_fs::seal::remove_tree(root).map_err(BuildError::Sealed)?;
            }
            Err(_) => {}
        }
        std::fs::create_dir_all(root).map_err(io(root))?;
        std::fs::write(root.join(MARKER), b"").map_err(io(root))?;
        Ok(WorkDir {
            root: root.to_owned(),
            _lock: lock,
        })
    }

    pub fn root(&self) -> &Path {
        &self.root
    }
}

impl Drop for WorkDir {
    fn drop(&mut self) {
        // Still under the lock: the field is dropped after this body.
        let _ = vouch_fs::seal::remove_tree(&self.root);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn issue12_refuses_to_wipe_what_vouch_did_not_make() {
        let d = tempfile::tempdir().unwrap();
        let src = d.path().join("checkout");
        std::fs::create_dir_all(&src).unwrap();
        std::fs::write(src.join("uncommitted.py"), b"work").unwrap();
        let out = d.path().join("dist");

        // The source itself, a parent of it, a directory inside it, the output's parent.
        for wd in [
            src.clone(),
            d.path().to_owned(),
            src.join("build"),
            out.join("w"),
        ] {
            let err = WorkDir::lock(&wd, &[&src, &out]).err().expect("refused");
            assert!(matches!(err, BuildError::WorkDir { .. }), "{wd:?}: {err}");
        }
        // Relative spellings resolve to the same place.
        let cwd = std::env::current_dir().unwrap();
        let rel = pathdiff(&src, &cwd);
        assert!(WorkDir::lock(&rel, &[&src]).is_err());

        // A foreign non-empty directory is kept.
        let foreign = d.path().join("foreign");
        std::fs::create_dir_all(&foreign).unwrap();
        std::fs::write(foreign.join("notes.txt"), b"mine").unwrap();
        let err = WorkDir::lock(&foreign, &[&src]).err().expect("refused");
        assert!(err.to_string().contains("not made by vouch"), "{err}");
        assert!(foreign.join("notes.txt").is_file());
        assert!(src.join("uncommitted.py").is_file());

        // Nothing inside another work directory (it would be emptied under this build).
        let outer = d.path().join("outer");
        std::fs::create_dir_all(&outer).unwrap();
        let held = WorkDir::lock(&outer, &[&src]).unwrap();
        let err = WorkDir::lock(&outer.join("inner"), &[&src])
            .err()
            .expect("refused");
        assert!(
            err.to_string().contains("another vouch work directory"),
            "{err}"
        );
        drop(held);

        // An empty one is taken and marked.
        let fresh = d.path().join("fresh");
        std::fs::create_dir_all(&fresh).unwrap();
        let w = WorkDir::lock(&fresh, &[&src]).unwrap();
        assert!(w.root().join(MARKER).is_file());
        drop(w);
        // One a killed build left behind (marked) is emptied.
        std::fs::create_dir_all(&fresh).unwrap();
        std::fs::write(fresh.join(MARKER), b"").unwrap();
        std::fs::write(fresh.join("obj.o"), b"x").unwrap();
        let w = WorkDir::lock(&fresh, &[&src]).unwrap();
        assert!(!w.root().join("obj.o").exists());
    }

    /// `path` relative to `base` (both absolute), with `..` as needed.
    fn pathdiff(path: &Path, base: &Path) -> PathBuf {
        let p: Vec<_> = path.components().collect();
        let b: Vec<_> = base.components().collect();
        let common = p.iter().zip(&b).take_while(|(x, y)| x == y).count();
        let mut out = PathBuf::new();
        for _ in common..b.len() {
            out.push("..");
        }
        for c in &p[common..] {
            out.push(c);
        }
        out
    }
}
