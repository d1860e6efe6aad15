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

/// `spec` with `password` put into its userinfo (percent-encoded), so the password can come
/// from a file and never appear on a command line or in the environment. Only a Redis URL
/// takes one, and only once.
pub fn with_password(spec: &str, password: &str) -> Result<String, StoreError> {
    let (scheme, rest) = spec
        .split_once("://")
        .filter(|_| is_redis(spec))
        .ok_or(StoreError::PasswordNotTaken)?;
    let (user, host) = match rest.split_once('@') {
        Some((u, _)) if u.contains(':') => return Err(StoreError::PasswordTwice),
        Some((u, h)) => (u, h),
        None => ("", rest),
    };
    let encoded: String = password
        .bytes()
        .map(|b| {
            if b.is_ascii_alphanumeric() || b"-._~".contains(&b) {
                (b as char).to_string()
            } else {
                format!("%{b:02X}")
            }
        })
        .collect();
    Ok(format!("{scheme}://{user}:{encoded}@{host}"))
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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_password_goes_into_a_redis_url_once_and_encoded() {
        let cases: &[(&str, &str, Result<&str, &str>)] = &[
            (
                "redis://ci@127.0.0.1:6379",
                "p@ss w:rd",
                Ok("redis://ci:p%40ss%20w%3Ard@127.0.0.1:6379"),
            ),
            (
                "rediss://cache.example:6380/2",
                "s3cret",
                Ok("rediss://:s3cret@cache.example:6380/2"),
            ),
            (
                "redis://ci:old@127.0.0.1:6379",
                "new",
                Err("the store URL already has a password; give it only in the file"),
            ),
            (
                "/srv/cache",
                "x",
                Err("a password file only applies to redis:// stores"),
            ),
            (
                "redisx://h:1",
                "x",
                Err("a password file only applies to redis:// stores"),
            ),
        ];
        for (spec, password, want) in cases {
            let got = with_password(spec, password).map_err(|e| e.to_string());
            let want = want.map(str::to_owned).map_err(str::to_owned);
            assert_eq!(got, want, "{spec}");
        }
    }
}
