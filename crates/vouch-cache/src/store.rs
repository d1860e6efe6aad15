//! Backing stores. Keys are `<scope>/<key>`; a store never decides scopes, the gateway does.

use std::future::Future;
use std::path::{Path, PathBuf};

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
    Redis(#[source] redis::RedisError),
    #[error("cache key {0:?} is not a relative path of `[A-Za-z0-9._-]` parts")]
    BadKey(String),
    #[error("store {0:?}: expected a directory path or redis://[user[:password]@]host:port[/db]")]
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

fn is_redis(spec: &str) -> bool {
    spec.starts_with("redis://") || spec.starts_with("rediss://")
}

/// A directory path or a `redis://`/`rediss://` URL; any other scheme is a mistake.
pub fn check_store_spec(spec: &str) -> Result<(), StoreError> {
    if spec.is_empty() || (spec.contains("://") && !is_redis(spec)) {
        return Err(StoreError::BadSpec(redact(spec)));
    }
    Ok(())
}

/// A `redis://`/`rediss://` URL, for what only makes sense with a credential.
pub fn check_redis_spec(spec: &str) -> Result<(), StoreError> {
    if is_redis(spec) {
        Ok(())
    } else {
        Err(StoreError::NotRedis(redact(spec)))
    }
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

/// Entries as Redis strings under `<scope>/<key>`, so an ACL key pattern such as `pr/7/*`
/// fences what a credential may write.
pub struct RedisStore {
    conn: redis::aio::MultiplexedConnection,
    display: String,
}

impl RedisStore {
    pub async fn connect(url: &str) -> Result<Self, StoreError> {
        check_redis_spec(url)?;
        let client = redis::Client::open(url).map_err(StoreError::Redis)?;
        let conn = client
            .get_multiplexed_async_connection()
            .await
            .map_err(StoreError::Redis)?;
        // Never show the password.
        let info = client.get_connection_info();
        let display = format!("redis {}", info.addr());
        Ok(RedisStore { conn, display })
    }

    pub fn connection(&self) -> redis::aio::MultiplexedConnection {
        self.conn.clone()
    }
}

fn redis_key(scope: &Scope, key: &str) -> String {
    format!("{scope}/{key}")
}

impl CacheStore for RedisStore {
    async fn get(&self, scope: &Scope, key: &str) -> Result<Option<Bytes>, StoreError> {
        let mut c = self.conn.clone();
        let v: Option<Vec<u8>> = redis::cmd("GET")
            .arg(redis_key(scope, key))
            .query_async(&mut c)
            .await
            .map_err(StoreError::Redis)?;
        Ok(v.map(Bytes::from))
    }

    async fn exists(&self, scope: &Scope, key: &str) -> Result<bool, StoreError> {
        let mut c = self.conn.clone();
        redis::cmd("EXISTS")
            .arg(redis_key(scope, key))
            .query_async(&mut c)
            .await
            .map_err(StoreError::Redis)
    }

    async fn put(&self, scope: &Scope, key: &str, data: Bytes) -> Result<(), StoreError> {
        let mut c = self.conn.clone();
        redis::cmd("SET")
            .arg(redis_key(scope, key))
            .arg(data.as_ref())
            .query_async::<()>(&mut c)
            .await
            .map_err(StoreError::Redis)
    }

    fn describe(&self) -> String {
        self.display.clone()
    }
}

/// A directory or a Redis store, chosen at run time.
pub enum AnyStore {
    Dir(DirStore),
    Redis(RedisStore),
}

impl AnyStore {
    /// `redis://…` or a directory path.
    pub async fn open(spec: &str) -> Result<Self, StoreError> {
        check_store_spec(spec)?;
        if is_redis(spec) {
            Ok(AnyStore::Redis(RedisStore::connect(spec).await?))
        } else {
            Ok(AnyStore::Dir(DirStore::new(spec)))
        }
    }
}

impl CacheStore for AnyStore {
    async fn get(&self, scope: &Scope, key: &str) -> Result<Option<Bytes>, StoreError> {
        match self {
            AnyStore::Dir(s) => s.get(scope, key).await,
            AnyStore::Redis(s) => s.get(scope, key).await,
        }
    }

    async fn exists(&self, scope: &Scope, key: &str) -> Result<bool, StoreError> {
        match self {
            AnyStore::Dir(s) => s.exists(scope, key).await,
            AnyStore::Redis(s) => s.exists(scope, key).await,
        }
    }

    async fn put(&self, scope: &Scope, key: &str, data: Bytes) -> Result<(), StoreError> {
        match self {
            AnyStore::Dir(s) => s.put(scope, key, data).await,
            AnyStore::Redis(s) => s.put(scope, key, data).await,
        }
    }

    fn describe(&self) -> String {
        match self {
            AnyStore::Dir(s) => s.describe(),
            AnyStore::Redis(s) => s.describe(),
        }
    }
}
