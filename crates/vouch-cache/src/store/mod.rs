//! Backing stores. Keys are `<scope>/<key>`; a store never decides scopes, the gateway does.
//!
//! Each backend is one module that implements [`CacheStore`] and exports a [`Backend`]: which
//! specs it takes and how it opens them. [`BACKENDS`] lists them; every spec is parsed there.

mod dir;
mod redis;

use std::future::Future;
use std::path::PathBuf;
use std::pin::Pin;

use bytes::Bytes;

use crate::Scope;

#[derive(Debug, thiserror::Error)]
pub enum StoreError {
    #[error("cache store I/O on {path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("redis store")]
    Redis(#[source] ::redis::RedisError),
    /// A backend's service failed (unreachable, refused, timed out). New backends report
    /// here, so adding one needs no new variant and no new exit status.
    #[error("{backend} store")]
    Backend {
        backend: &'static str,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("a password file only applies to redis:// stores")]
    PasswordNotTaken,
    #[error("the store URL already has a password; give it only in the file")]
    PasswordTwice,
    #[error("cache key {0:?} is not a relative path of `[A-Za-z0-9._-]` parts")]
    BadKey(String),
    #[error("store {0:?}: expected {forms}", forms = forms())]
    BadSpec(String),
    #[error(
        "store {0:?} is not a redis:// URL; `cache check` probes what a redis:// credential may write (a directory has no credential to probe)"
    )]
    NotRedis(String),
}

/// `spec` with any `user:password@` cut out, for messages.
fn redact(spec: &str) -> String {
    match spec.split_once("://") {
        Some((scheme, rest)) => match rest.rsplit_once('@') {
            Some((_, host)) => format!("{scheme}://…@{host}"),
            None => spec.to_owned(),
        },
        None => spec.to_owned(),
    }
}

pub use dir::DirStore;
pub use redis::{RedisStore, check_redis_spec, with_password};

/// Every store vouch can open. A new backend is a module and one entry here.
const BACKENDS: &[Backend] = &[dir::BACKEND, redis::BACKEND];

pub(crate) type Opening<'a> =
    Pin<Box<dyn Future<Output = Result<AnyStore, StoreError>> + Send + 'a>>;

/// How one backend is chosen and opened.
pub(crate) struct Backend {
    /// What its specs look like, for the message that lists what a spec may be.
    form: &'static str,
    /// Whether `spec` names this backend; no two backends take one spec.
    takes: fn(&str) -> bool,
    open: for<'a> fn(&'a str) -> Opening<'a>,
}

fn forms() -> String {
    BACKENDS
        .iter()
        .map(|b| b.form)
        .collect::<Vec<_>>()
        .join(" or ")
}

fn backend(spec: &str) -> Result<&'static Backend, StoreError> {
    BACKENDS
        .iter()
        .find(|b| !spec.is_empty() && (b.takes)(spec))
        .ok_or_else(|| StoreError::BadSpec(redact(spec)))
}

/// A spec some backend takes (a directory path, `redis://…`); any other scheme is a mistake.
pub fn check_store_spec(spec: &str) -> Result<(), StoreError> {
    backend(spec).map(|_| ())
}

/// Checks a key from a client before it touches a path or a Redis key.
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
    fn exists(
        &self,
        scope: &Scope,
        key: &str,
    ) -> impl Future<Output = Result<bool, StoreError>> + Send;
    /// Atomic: a reader sees the whole entry or none of it.
    fn put(
        &self,
        scope: &Scope,
        key: &str,
        data: Bytes,
    ) -> impl Future<Output = Result<(), StoreError>> + Send;
    fn describe(&self) -> String;
}

/// Any backend, chosen at run time from its spec.
pub struct AnyStore(Box<dyn DynStore>);

impl AnyStore {
    pub fn new(store: impl CacheStore) -> Self {
        AnyStore(Box::new(store))
    }

    /// The store `spec` names (see [`check_store_spec`]).
    pub async fn open(spec: &str) -> Result<Self, StoreError> {
        (backend(spec)?.open)(spec).await
    }
}

type StoreFuture<'a, T> = Pin<Box<dyn Future<Output = Result<T, StoreError>> + Send + 'a>>;

/// [`CacheStore`] with boxed futures, so one [`AnyStore`] can hold any backend.
trait DynStore: Send + Sync + 'static {
    fn get<'a>(&'a self, scope: &'a Scope, key: &'a str) -> StoreFuture<'a, Option<Bytes>>;
    fn exists<'a>(&'a self, scope: &'a Scope, key: &'a str) -> StoreFuture<'a, bool>;
    fn put<'a>(&'a self, scope: &'a Scope, key: &'a str, data: Bytes) -> StoreFuture<'a, ()>;
    fn describe(&self) -> String;
}

impl<S: CacheStore> DynStore for S {
    fn get<'a>(&'a self, scope: &'a Scope, key: &'a str) -> StoreFuture<'a, Option<Bytes>> {
        Box::pin(CacheStore::get(self, scope, key))
    }

    fn exists<'a>(&'a self, scope: &'a Scope, key: &'a str) -> StoreFuture<'a, bool> {
        Box::pin(CacheStore::exists(self, scope, key))
    }

    fn put<'a>(&'a self, scope: &'a Scope, key: &'a str, data: Bytes) -> StoreFuture<'a, ()> {
        Box::pin(CacheStore::put(self, scope, key, data))
    }

    fn describe(&self) -> String {
        CacheStore::describe(self)
    }
}

impl CacheStore for AnyStore {
    async fn get(&self, scope: &Scope, key: &str) -> Result<Option<Bytes>, StoreError> {
        self.0.get(scope, key).await
    }

    async fn exists(&self, scope: &Scope, key: &str) -> Result<bool, StoreError> {
        self.0.exists(scope, key).await
    }

    async fn put(&self, scope: &Scope, key: &str, data: Bytes) -> Result<(), StoreError> {
        self.0.put(scope, key, data).await
    }

    fn describe(&self) -> String {
        self.0.describe()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn specs_pick_one_backend() {
        let cases = [
            ("/var/cache/vouch", Some("a directory path")),
            ("relative/dir", Some("a directory path")),
            (
                "redis://h:6379",
                Some("redis://[user[:password]@]host:port[/db]"),
            ),
            (
                "rediss://u:p@h:6380/1",
                Some("redis://[user[:password]@]host:port[/db]"),
            ),
            ("", None),
            ("s3://bucket", None),
            ("https://u:p@h/x", None),
        ];
        for (spec, want) in cases {
            assert_eq!(backend(spec).ok().map(|b| b.form), want, "{spec}");
        }
        assert_eq!(
            check_store_spec("https://u:p@h/x").unwrap_err().to_string(),
            "store \"https://…@h/x\": expected a directory path or redis://[user[:password]@]host:port[/db]"
        );
    }
}
