use std::fs::File;
use std::path::{Path, PathBuf};

use crate::BuildError;

/// The build's working directory: a fixed path, held under an exclusive lock for the whole
/// build (concurrent builds with the same work dir wait their turn), emptied before use and
/// removed after.
pub struct WorkDir {
    root: PathBuf,
    _lock: File,
}

impl WorkDir {
    pub fn lock(root: &Path) -> Result<WorkDir, BuildError> {
        let io = |path: &Path| {
            let path = path.to_owned();
            move |source| BuildError::Io { path, source }
        };
        let parent = root.parent().unwrap_or(Path::new("."));
        std::fs::create_dir_all(parent).map_err(io(parent))?;
        let lock_path = root.with_extension("lock");
        let lock = File::options()
            .create(true)
            .truncate(false)
            .write(true)
            .open(&lock_path)
            .map_err(io(&lock_path))?;
        tracing::debug!(dir = %root.display(), "waiting for the work directory lock");
        lock.lock().map_err(io(&lock_path))?;
        if root.exists() {
            std::fs::remove_dir_all(root).map_err(io(root))?;
        }
        std::fs::create_dir_all(root).map_err(io(root))?;
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
        let _ = std::fs::remove_dir_all(&self.root);
    }
}
