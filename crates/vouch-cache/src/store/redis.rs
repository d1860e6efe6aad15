//! Entries as Redis strings: a store shared by every runner, fenced by ACL key patterns.

use bytes::Bytes;

use super::{AnyStore, Backend, CacheStore, Opening, StoreError, redact};
use crate::Scope;

pub(super) const BACKEND: Backend = Backend {
    form: "redis://[user[:password]@]host:port[/db]",
    takes: is_redis,
    open,
};

fn open(spec: &str) -> Opening<'_> {
    Box::pin(async move { Ok(AnyStore::new(RedisStore::connect(spec).await?)) })
}

fn is_redis(spec: &str) -> bool {
    spec.starts_with("redis://") || spec.starts_with("rediss://")
}

/// A `redis://`/`rediss://` URL, for what only makes sense with a credential.
pub fn check_redis_spec(spec: &str) -> Result<(), StoreError> {
    if is_redis(spec) {
        Ok(())
    } else {
        Err(StoreError::NotRedis(redact(spec)))
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
