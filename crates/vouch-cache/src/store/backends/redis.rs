//! Redis: one store every runner shares, fenced by ACL users (`cache grant` makes one per PR).
//!
//! Limits: an entry is one string (512 MB at most), written with one SET, so it is atomic.
//! Keys are `<scope>/@/<key>` with no prefix, so an ACL key pattern such as `~pr/7/*` is the
//! fence. Redis evicts by its own `maxmemory-policy`; set one, or the cache grows until writes
//! fail.

use opendal::Operator;
use opendal::services::Redis;

use super::{Backend, Fence, Location};
use crate::StoreError;

pub(super) const BACKEND: Backend = Backend {
    name: "redis",
    form: "redis://[user@]host:port[/db]",
    takes: |spec| spec.starts_with("redis://") || spec.starts_with("rediss://"),
    check: |l| parse(l).map(|_| ()),
    build,
    no_secret: None,
    fence: Fence::Probe,
    denied: no_permission,
    expiring: Some(build_expiring),
};

pub(crate) struct RedisLocation {
    /// `redis://host:port`, without user or password.
    pub endpoint: String,
    pub username: Option<String>,
    pub db: Option<i64>,
}

pub(crate) fn parse(l: &Location<'_>) -> Result<RedisLocation, StoreError> {
    let u = l.url();
    let host = u
        .host_str()
        .filter(|h| !h.is_empty())
        .ok_or_else(|| l.bad("host", "is missing"))?;
    if u.query().is_some() {
        return Err(l.bad("query", "redis:// stores take no options"));
    }
    let db = match u.path().trim_matches('/') {
        "" => None,
        d => Some(
            d.parse::<i64>()
                .map_err(|_| l.bad("db", "must be a number (the URL's path)"))?,
        ),
    };
    Ok(RedisLocation {
        endpoint: format!("{}://{host}:{}", u.scheme(), u.port().unwrap_or(6379)),
        username: Some(u.username())
            .filter(|u| !u.is_empty())
            .map(str::to_owned),
        db,
    })
}

fn build(l: &Location<'_>) -> Result<(Operator, String), StoreError> {
    let (builder, r) = builder(l)?;
    let op = Operator::new(builder).map_err(l.open_error(BACKEND.name))?;
    let shown = match r.db {
        Some(db) => format!("redis {}/{db}", r.endpoint),
        None => format!("redis {}", r.endpoint),
    };
    Ok((op, shown))
}

/// Writes with SETEX: the key carries its own TTL from the write on.
fn build_expiring(l: &Location<'_>, ttl: std::time::Duration) -> Result<Operator, StoreError> {
    let (builder, _) = builder(l)?;
    Operator::new(builder.default_ttl(ttl)).map_err(l.open_error(BACKEND.name))
}

fn builder(l: &Location<'_>) -> Result<(Redis, RedisLocation), StoreError> {
    let r = parse(l)?;
    let mut builder = Redis::default().endpoint(&r.endpoint);
    if let Some(user) = &r.username {
        builder = builder.username(user);
    }
    if let Some(pw) = l.secret.map(str::to_owned).or_else(|| l.url_password()) {
        builder = builder.password(&pw);
    }
    if let Some(db) = r.db {
        builder = builder.db(db);
    }
    Ok((builder, r))
}

/// OpenDAL reports every Redis error as "unexpected"; an ACL refusal is the server's NOPERM.
fn no_permission(e: &opendal::Error) -> bool {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(e);
    while let Some(c) = cause {
        if let Some(r) = c.downcast_ref::<::redis::RedisError>() {
            return r.code() == Some("NOPERM");
        }
        cause = c.source();
    }
    false
}
