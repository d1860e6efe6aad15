//! `vouch cache check`: the credential, not the gateway, is the fence. Probe whether the
//! credential this job holds can write a scope it must not, and fail closed if it can.

use serde::Serialize;

use crate::{Scope, ScopePolicy, StoreError};

#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    pub scope: String,
    pub may_write: bool,
    pub can_write: bool,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub store: String,
    pub probes: Vec<Probe>,
    /// True only when no forbidden scope accepted a write.
    pub fenced: bool,
}

const PROBE_KEY: &str = ".vouch-fence-probe";

/// Tries to write a probe key into the own write scope (if any) and into scopes this job must
/// not write (the trusted branches, and another PR). A forbidden write that succeeds is undone
/// and reported.
pub async fn check_redis_fence(
    url: &str,
    policy: &ScopePolicy,
    forbidden: &[Scope],
) -> Result<CheckReport, StoreError> {
    let store = crate::RedisStore::connect(url).await?;
    let mut conn = store.connection();
    let mut probes = Vec::new();
    let mut targets: Vec<(Scope, bool)> = forbidden
        .iter()
        .filter(|s| Some(*s) != policy.write.as_ref())
        .map(|s| (s.clone(), false))
        .collect();
    if let Some(w) = &policy.write {
        targets.insert(0, (w.clone(), true));
    }
    for (scope, may_write) in targets {
        let key = format!("{scope}/{PROBE_KEY}");
        let res: redis::RedisResult<()> = redis::cmd("SET")
            .arg(&key)
            .arg("probe")
            .arg("EX")
            .arg(60)
            .query_async(&mut conn)
            .await;
        let (can_write, detail) = match res {
            Ok(()) => {
                let _: redis::RedisResult<()> =
                    redis::cmd("DEL").arg(&key).query_async(&mut conn).await;
                (true, "write accepted".to_owned())
            }
            Err(e) => (
                false,
                format!("write refused: {}", e.code().unwrap_or("error")),
            ),
        };
        probes.push(Probe {
            scope: scope.to_string(),
            may_write,
            can_write,
            detail,
        });
    }
    let fenced = probes.iter().all(|p| p.may_write || !p.can_write);
    Ok(CheckReport {
        store: crate::CacheStore::describe(&store),
        probes,
        fenced,
    })
}
