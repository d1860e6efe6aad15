//! Backing stores, all on Apache OpenDAL (the storage layer sccache itself uses). An entry
//! lives at `<prefix>/<scope>/@/<key>`; a store never decides scopes, the gateway does.
//!
//! A store is named by one URL, parsed in [`StoreSpec`]; each backend is one module under
//! `backends/` (its URL form, the secret it takes, how its credential is fenced, its limits).
//! Adding a backend is a module and one entry in `backends::BACKENDS`.

mod backends;
mod spec;

use std::future::Future;

use bytes::Bytes;
use opendal::{ErrorKind, Operator};

pub use backends::Fence;
pub use spec::StoreSpec;

use crate::Scope;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    /// The service failed (unreachable, refused, timed out, denied). Every backend reports
    /// here, so adding one needs no new variant and no new exit status.
    #[error("{backend} store: {operation} {path:?}")]
    Backend {
        backend: &'static str,
        operation: &'static str,
        path: String,
        /// Boxed: OpenDAL's error carries its context inline and is large.
        #[source]
        source: Box<opendal::Error>,
    },
    #[error("cannot open the {backend} store {spec:?}")]
    Open {
        backend: &'static str,
        spec: String,
        #[source]
        source: Box<opendal::Error>,
    },
    #[error("a password file does not apply to {backend} stores ({spec:?}): {why}")]
    SecretNotTaken {
        backend: &'static str,
        spec: String,
        why: &'static str,
    },
    #[error("the store URL {0:?} already has a password; give it only in the file")]
    SecretTwice(String),
    #[error("store {spec:?}: option {option:?} {problem}")]
    BadOption {
        spec: String,
        option: String,
        problem: String,
    },
    #[error("the {backend} store needs {var} in the environment: {why}")]
    MissingEnv {
        backend: &'static str,
        var: &'static str,
        why: &'static str,
    },
    #[error("cache key {0:?} is not a relative path of `[A-Za-z0-9._-]` parts")]
    BadKey(String),
    #[error("store {0:?}: expected {forms}", forms = backends::forms())]
    BadSpec(String),
}

/// Checks a key from a client before it touches a path or an object name.
pub fn check_key(key: &str) -> Result<(), StoreError> {
    let ok = !key.is_empty()
        && key.len() <= 1024
        && key.split('/').all(|p| {
            !p.is_empty()
                && p != "."
                && p != ".."
                && p.bytes()
                    .all(|b| b.is_ascii_alphanumeric() || b"._-".contains(&b))
        });
    if ok {
        Ok(())
    } else {
        Err(StoreError::BadKey(key.to_owned()))
    }
}

/// A place where cache entries live.
pub trait CacheStore: Send + Sync + 'static {
    fn get(
        &self,
        scope: &Scope,
        key: &str,
    ) -> impl Future<Output = Result<Option<Bytes>, StoreError>> + Send;
    /// Atomic: a reader sees the whole entry or none of it.
    fn put(
        &self,
        scope: &Scope,
        key: &str,
        data: Bytes,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn describe(&self) -> String;
}

/// An opened store: any backend, chosen at run time from its [`StoreSpec`].
pub struct AnyStore {
    op: Operator,
    backend: &'static backends::Backend,
    display: String,
}

/// Where an entry lives: `<scope>/@/<key>`. The `@` segment cannot occur in a scope (scope
/// names are `[A-Za-z0-9._/-]`) nor in a key, so no scope's entries can be another's: without
/// it the branch `main/kv` (scope `branch/main/kv`) would write exactly the keys main reads
/// under `kv/`.
pub(crate) fn object_path(scope: &Scope, key: &str) -> String {
    format!("{scope}/{SEPARATOR}/{key}")
}

const SEPARATOR: &str = "@";

impl AnyStore {
    /// The store `spec` names, with its secret.
    pub async fn open(spec: &StoreSpec) -> Result<Self, StoreError> {
        spec.open()
    }

    pub(crate) fn operator(&self) -> &Operator {
        &self.op
    }

    pub(crate) fn error(
        &self,
        operation: &'static str,
        path: String,
        source: opendal::Error,
    ) -> StoreError {
        StoreError::Backend {
            backend: self.backend.name,
            operation,
            path,
            source: Box::new(source),
        }
    }

    /// One write of `path`, as the service answers it.
    pub(crate) async fn write(&self, path: &str, data: Bytes) -> Result<(), opendal::Error> {
        let mut write = self.op.write_with(path, data);
        // Entries are opaque bytes; object stores that record a type get the one that says so
        // (GCS would otherwise store none and answer with a null type).
        if self.op.info().capability().write_with_content_type {
            write = write.content_type("application/octet-stream");
        }
        write.await.map(|_| ())
    }

    /// Whether `e` says the credential may not do what was asked (as opposed to the service
    /// failing): `cache check` reads a fence only from this.
    pub(crate) fn denied(&self, e: &StoreError) -> bool {
        match e {
            StoreError::Backend { source, .. } => (self.backend.denied)(source),
            _ => false,
        }
    }
}

impl CacheStore for AnyStore {
    async fn get(&self, scope: &Scope, key: &str) -> Result<Option<Bytes>, StoreError> {
        let path = object_path(scope, key);
        match self.op.read(&path).await {
            Ok(buf) => Ok(Some(buf.to_bytes())),
            Err(e) if e.kind() == ErrorKind::NotFound => Ok(None),
            Err(e) => Err(self.error("read", path, e)),
        }
    }

    async fn put(&self, scope: &Scope, key: &str, data: Bytes) -> Result<(), StoreError> {
        let path = object_path(scope, key);
        match self.write(&path, data).await {
            Ok(()) => Ok(()),
            // Immutable stores (the GitHub cache) refuse a second write of a key. The entry
            // already there need not be this one (a compiler cache's keys hash its inputs, not
            // its output, and anyone who can write the scope may have been first); it is not
            // trusted for that: every read checks the entry's tag (`crate::entry`). Not an
            // error either, since the build's own output is unaffected.
            Err(e) if e.kind() == ErrorKind::AlreadyExists => {
                tracing::debug!(%path, "the store already holds this key; kept the first entry");
                Ok(())
            }
            Err(e) => Err(self.error("write", path, e)),
        }
    }

    fn describe(&self) -> String {
        self.display.clone()
    }
}
