//! Entries as files in a directory: the store for one machine (or a shared mount).

use std::path::{Path, PathBuf};

use bytes::Bytes;

use super::{AnyStore, Backend, CacheStore, Opening, StoreError};
use crate::Scope;

/// Any spec that is not a URL is a directory path.
pub(super) const BACKEND: Backend = Backend {
    form: "a directory path",
    takes: |spec| !spec.contains("://"),
    open,
};

fn open(spec: &str) -> Opening<'_> {
    let store = DirStore::new(spec);
    Box::pin(async move { Ok(AnyStore::new(store)) })
}

/// Entries as files under `<root>/<scope>/<key>`, written through a temp file + rename.
pub struct DirStore {
    root: PathBuf,
}

impl DirStore {
    pub fn new(root: impl Into<PathBuf>) -> Self {
        DirStore { root: root.into() }
    }

    fn path(&self, scope: &Scope, key: &str) -> PathBuf {
        self.root.join(scope.as_str()).join(key)
    }
}

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> StoreError + '_ {
    move |source| StoreError::Io {
        path: path.to_owned(),
        source,
    }
}

impl CacheStore for DirStore {
    async fn get(&self, scope: &Scope, key: &str) -> Result<Option<Bytes>, StoreError> {
        let path = self.path(scope, key);
        // Entries are small and hot in the page cache; a thread hop per read (tokio::fs)
        // costs more than the read itself, and every compile waits on it.
        match std::fs::read(&path) {
            Ok(data) => Ok(Some(Bytes::from(data))),
            Err(e) if e.kind() == std::io::ErrorKind::NotFound => Ok(None),
            Err(e) => Err(io(&path)(e)),
        }
    }

    async fn exists(&self, scope: &Scope, key: &str) -> Result<bool, StoreError> {
        Ok(tokio::fs::try_exists(self.path(scope, key))
            .await
            .unwrap_or(false))
    }

    async fn put(&self, scope: &Scope, key: &str, data: Bytes) -> Result<(), StoreError> {
        let path = self.path(scope, key);
        let dir = path.parent().expect("keys have a scope parent").to_owned();
        tokio::task::spawn_blocking(move || {
            std::fs::create_dir_all(&dir).map_err(io(&dir))?;
            // A build killed mid-write leaves at most a temp file, never a short entry.
            let mut tmp = tempfile::NamedTempFile::new_in(&dir).map_err(io(&dir))?;
            std::io::Write::write_all(&mut tmp, &data).map_err(io(&path))?;
            tmp.persist(&path).map_err(|e| io(&path)(e.error))?;
            Ok(())
        })
        .await
        .map_err(|e| StoreError::Io {
            path: PathBuf::from("<writer task>"),
            source: std::io::Error::other(e),
        })?
    }

    fn describe(&self) -> String {
        format!("directory {}", self.root.display())
    }
}
