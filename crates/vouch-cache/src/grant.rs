//! `vouch cache grant`: a credential for one pull request's build. A PR build writes nothing
//! (reads follow trust: nothing may read what any run of a PR wrote), so the credential only
//! reads the branch scopes trusted builds write. That matters because it is not a secret: for
//! Redis it travels in the `/test` request artifact, which anyone can download from a public
//! repository, so it must grant nothing a stranger could misuse. For Redis vouch mints it (an
//! ACL user that expires); for S3 and GCS it prints the IAM policy a cloud admin attaches to the
//! identity the PR job assumes. Should a policy ever give a PR a write scope, the grant follows
//! it.

use std::time::Duration;

use serde_json::json;

use crate::store::StoreSpec;
use crate::{Scope, ScopePolicy, StoreError};

#[derive(Debug, thiserror::Error)]
pub enum GrantError {
    #[error(transparent)]
    Store(#[from] StoreError),
    #[error("redis {endpoint}: {what}")]
    Redis {
        endpoint: String,
        what: &'static str,
        #[source]
        source: ::redis::RedisError,
    },
    #[error("{backend} stores need no grant: {why}")]
    NothingToGrant {
        backend: &'static str,
        why: &'static str,
    },
    #[error("cannot draw a random password")]
    Random(#[source] getrandom::Error),
}

/// What a grant hands the PR job.
pub enum Grant {
    /// A Redis ACL user: the store URL to give the PR job (no password) and the password for
    /// its password file.
    Redis {
        user: String,
        store: String,
        password: secrecy::SecretString,
        expires_in: Duration,
    },
    /// The IAM document a cloud admin attaches (nothing was changed by vouch).
    Policy(serde_json::Value),
}

/// The ACL user of PR `n`.
fn pr_user(n: u64) -> String {
    format!("vouch-pr-{n}")
}

/// Records a grant's expiry (unix seconds); the user is removed by the first grant after it.
/// Outside the scope namespace, so no build's key pattern reaches it.
fn marker(user: &str) -> String {
    format!("vouch-grants/{user}")
}

/// Grants PR `pr` of a repository whose PRs read `policy.read` and write `policy.write`
/// (none, under today's policy).
pub async fn grant(
    admin: &StoreSpec,
    pr: u64,
    policy: &ScopePolicy,
    ttl: Duration,
) -> Result<Grant, GrantError> {
    let write = policy.write.as_ref();
    match admin.backend() {
        "redis" => redis_grant(admin, pr, write, &policy.read, ttl).await,
        "s3" => {
            let s = admin.s3_location()?;
            Ok(Grant::Policy(s3_policy(
                &s.bucket,
                &s.prefix,
                write,
                &policy.read,
            )))
        }
        "gcs" => {
            let g = admin.gcs_location()?;
            Ok(Grant::Policy(gcs_bindings(
                &g.bucket,
                &g.prefix,
                pr,
                write,
                &policy.read,
            )))
        }
        "gha" => Err(GrantError::NothingToGrant {
            backend: "gha",
            why: "GitHub scopes each run's cache token by its trigger",
        }),
        other => Err(GrantError::NothingToGrant {
            backend: other,
            why: "the store has no credential of its own to narrow (file modes decide)",
        }),
    }
}

fn object_prefix(prefix: &str, scope: &Scope) -> String {
    if prefix.is_empty() {
        format!("{scope}/")
    } else {
        format!("{prefix}/{scope}/")
    }
}

/// Read the read scopes, write (and delete, so `cache check` can remove its probe) the write
/// scope if there is one. `s3:ListBucket` limited to those prefixes: without it AWS answers a
/// missing key with 403 instead of 404, and a miss would look like a refusal.
fn s3_policy(
    bucket: &str,
    prefix: &str,
    write: Option<&Scope>,
    read: &[Scope],
) -> serde_json::Value {
    let objects = |scopes: &[&Scope]| -> Vec<String> {
        scopes
            .iter()
            .map(|s| format!("arn:aws:s3:::{bucket}/{}*", object_prefix(prefix, s)))
            .collect()
    };
    let reads: Vec<&Scope> = read.iter().collect();
    let mut statements = vec![json!({
        "Sid": "VouchReadScopes",
        "Effect": "Allow",
        "Action": ["s3:GetObject"],
        "Resource": objects(&reads),
    })];
    if let Some(w) = write {
        statements.push(json!({
            "Sid": "VouchWriteOwnScope",
            "Effect": "Allow",
            "Action": ["s3:PutObject", "s3:DeleteObject"],
            "Resource": objects(&[w]),
        }));
    }
    statements.push(json!({
        "Sid": "VouchListReadScopes",
        "Effect": "Allow",
        "Action": ["s3:ListBucket"],
        "Resource": [format!("arn:aws:s3:::{bucket}")],
        "Condition": {"StringLike": {"s3:prefix": reads
            .iter()
            .map(|s| format!("{}*", object_prefix(prefix, s)))
            .collect::<Vec<_>>()}},
    }));
    json!({"Version": "2012-10-17", "Statement": statements})
}

/// Conditional bucket IAM bindings (policy version 3): `objectViewer` on each read prefix, and
/// `objectUser` on the write prefix if there is one (it includes delete, so the probe can be
/// removed; `objectCreator` cannot delete). `member` is a placeholder for the PR job's
/// identity.
fn gcs_bindings(
    bucket: &str,
    prefix: &str,
    pr: u64,
    write: Option<&Scope>,
    read: &[Scope],
) -> serde_json::Value {
    let cond = |title: String, scopes: &[&Scope]| {
        let expr = scopes
            .iter()
            .map(|s| {
                format!(
                    "resource.name.startsWith(\"projects/_/buckets/{bucket}/objects/{}\")",
                    object_prefix(prefix, s)
                )
            })
            .collect::<Vec<_>>()
            .join(" || ");
        json!({"title": title, "expression": expr})
    };
    let member = format!("principal://REPLACE-with-the-identity-of-pr-{pr}-jobs");
    let reads: Vec<&Scope> = read.iter().collect();
    let mut bindings = Vec::new();
    if let Some(w) = write {
        bindings.push(json!({
            "role": "roles/storage.objectUser",
            "members": [member.clone()],
            "condition": cond(format!("vouch-pr-{pr}-write"), &[w]),
        }));
    }
    bindings.push(json!({
        "role": "roles/storage.objectViewer",
        "members": [member],
        "condition": cond(format!("vouch-pr-{pr}-read"), &reads),
    }));
    json!({"version": 3, "bindings": bindings})
}

async fn redis_grant(
    admin: &StoreSpec,
    pr: u64,
    write: Option<&Scope>,
    read: &[Scope],
    ttl: Duration,
) -> Result<Grant, GrantError> {
    let (r, url) = admin.redis_location()?;
    let err = |what: &'static str| {
        let endpoint = r.endpoint.clone();
        move |source| GrantError::Redis {
            endpoint,
            what,
            source,
        }
    };
    // The admin's URL with its password from the file, for this connection only.
    let mut admin_url = url.clone();
    if let Some(p) = admin.secret() {
        let _ = admin_url.set_password(Some(p));
    }
    let client = redis::Client::open(admin_url.as_str()).map_err(err("cannot connect"))?;
    let mut c = client
        .get_multiplexed_async_connection()
        .await
        .map_err(err("cannot connect"))?;
    sweep(&mut c)
        .await
        .map_err(err("cannot remove expired grants"))?;
    let user = pr_user(pr);
    let mut bytes = [0u8; 24];
    getrandom::fill(&mut bytes).map_err(GrantError::Random)?;
    let password: String = bytes.iter().map(|b| format!("{b:02x}")).collect();
    let mut acl = redis::cmd("ACL");
    acl.arg("SETUSER")
        .arg(&user)
        .arg("reset")
        .arg("on")
        .arg(format!(">{password}"));
    if let Some(w) = write {
        acl.arg(format!("~{w}/*"));
    }
    for s in read.iter().filter(|s| Some(*s) != write) {
        // Read-only key patterns (Redis 7 `%R~`): the fence that keeps a PR out of what
        // trusted builds read.
        acl.arg(format!("%R~{s}/*"));
    }
    // What OpenDAL's Redis service sends (GET, GETRANGE, EXISTS+STRLEN for stat, SET/SETEX,
    // DEL), and what a client sends on connecting — nothing more: `+@connection` would also
    // allow CLIENT PAUSE/KILL/LIST on the shared server.
    acl.arg("resetchannels").arg("-@all");
    let mut commands = vec![
        "auth",
        "hello",
        "ping",
        "client|setname",
        "get",
        "getrange",
        "strlen",
        "exists",
    ];
    if write.is_some() {
        commands.extend(["set", "setex", "del"]);
    }
    if r.db.is_some() {
        commands.push("select");
    }
    for c in commands {
        acl.arg(format!("+{c}"));
    }
    acl.query_async::<()>(&mut c)
        .await
        .map_err(err("ACL SETUSER was refused (the admin user needs +acl)"))?;
    // The expiry as a plain value, not a key TTL: under a `volatile-*` eviction policy keys
    // with a TTL go first, and a lost marker would revoke a live grant.
    redis::cmd("SET")
        .arg(marker(&user))
        .arg(now_secs() + ttl.as_secs().max(1))
        .query_async::<()>(&mut c)
        .await
        .map_err(err("cannot record the grant's expiry"))?;
    tracing::info!(%user, ttl_s = ttl.as_secs(), "granted a per-PR cache user");
    let mut store = url;
    let _ = store.set_password(None);
    let _ = store.set_username(&user);
    Ok(Grant::Redis {
        user,
        store: store.to_string(),
        password: password.into(),
        expires_in: ttl,
    })
}

fn now_secs() -> u64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_secs())
}

/// Whether `user` is one `grant` made (`vouch-pr-<digits>`), so the sweep never touches a
/// hand-made user that merely shares the prefix.
fn granted_user(user: &str) -> bool {
    user.strip_prefix("vouch-pr-")
        .is_some_and(|n| !n.is_empty() && n.bytes().all(|b| b.is_ascii_digit()))
}

/// Deletes every granted user whose expiry has passed (or whose record is gone): Redis ACL
/// users have no TTL of their own, so a grant lives until the next grant after its expiry.
async fn sweep(c: &mut redis::aio::MultiplexedConnection) -> redis::RedisResult<()> {
    let users: Vec<String> = redis::cmd("ACL").arg("USERS").query_async(c).await?;
    let now = now_secs();
    for user in users.iter().filter(|u| granted_user(u)) {
        let expires: Option<u64> = redis::cmd("GET").arg(marker(user)).query_async(c).await?;
        if expires.is_none_or(|t| t <= now) {
            redis::cmd("ACL")
                .arg("DELUSER")
                .arg(user)
                .query_async::<()>(c)
                .await?;
            redis::cmd("DEL")
                .arg(marker(user))
                .query_async::<()>(c)
                .await?;
            tracing::info!(%user, "removed an expired per-PR cache user");
        }
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_granted_users_are_swept() {
        for (u, want) in [
            ("vouch-pr-7", true),
            ("vouch-pr-12345", true),
            ("vouch-pr-", false),
            ("vouch-pr-admin", false),
            ("vouch-pr-7x", false),
            ("default", false),
        ] {
            assert_eq!(granted_user(u), want, "{u}");
        }
    }

    #[test]
    fn s3_policy_with_and_without_a_prefix() {
        let read = [Scope::pr(7), Scope::branch("main").unwrap()];
        let p = s3_policy("b", "", Some(&Scope::pr(7)), &read);
        assert_eq!(
            p["Statement"][1]["Resource"],
            json!(["arn:aws:s3:::b/pr/7/*"])
        );
        assert_eq!(
            p["Statement"][2]["Condition"]["StringLike"]["s3:prefix"],
            json!(["pr/7/*", "branch/main/*"])
        );
        let p = s3_policy("b", "ci/vouch", Some(&Scope::pr(7)), &read);
        assert_eq!(
            p["Statement"][0]["Resource"],
            json!([
                "arn:aws:s3:::b/ci/vouch/pr/7/*",
                "arn:aws:s3:::b/ci/vouch/branch/main/*"
            ])
        );
    }
}
