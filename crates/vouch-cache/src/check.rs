//! `vouch cache check`: the credential, not the gateway, is the fence. Probe whether the
//! credential this job holds can write a scope it must not, fail closed if it can, and leave
//! nothing behind: each probe is removed, and where the store can expire a write (Redis) it is
//! written to expire on its own too, so a credential that may write but not delete leaves no
//! probe in a trusted scope for longer than [`PROBE_TTL`]. (A probe is never served to a build
//! either way: it carries no entry frame, see `crate::entry`.)

use serde::Serialize;

use crate::store::{AnyStore, Fence, StoreSpec};
use crate::{Scope, ScopePolicy, StoreError, Trigger};

#[derive(Clone, Debug, Serialize)]
pub struct Probe {
    pub scope: String,
    pub may_write: bool,
    pub can_write: bool,
    /// The probe neither landed nor was refused (the service failed): no verdict, so a
    /// forbidden scope counts as open.
    pub inconclusive: bool,
    pub detail: String,
}

#[derive(Clone, Debug, Serialize)]
pub struct CheckReport {
    pub store: String,
    pub fence: Fence,
    pub probes: Vec<Probe>,
    /// True only when no forbidden scope accepted (or may have accepted) a write, and the own
    /// scope (if any) did: a credential refused everywhere (expired, mistyped, a skewed
    /// clock's signature) proves nothing about the fence.
    pub fenced: bool,
}

const PROBE_KEY: &str = ".vouch-fence-probe";

/// How long a probe outlives a failed removal, where the store can expire a write.
pub const PROBE_TTL: std::time::Duration = std::time::Duration::from_secs(300);

/// The scopes a build under `trigger` must never write: the trusted branches, another PR, and
/// any other branch or tag (a credential fenced only for the default branch would still let a
/// PR pre-fill the scope of the next release tag).
pub fn forbidden_scopes(trigger: &Trigger) -> Result<Vec<Scope>, crate::ScopeError> {
    let mut forbidden = vec![Scope::branch(&trigger.default_branch)?];
    if let Some(b) = &trigger.base_ref {
        forbidden.push(Scope::branch(b.strip_prefix("refs/heads/").unwrap_or(b))?);
    }
    forbidden.push(Scope::pr(trigger.pr.map_or(1, |n| n.saturating_add(1))));
    forbidden.push(Scope::branch("vouch-fence-probe")?);
    forbidden.push("tag/vouch-fence-probe".parse()?);
    Ok(forbidden)
}

/// Probes `spec`'s credential against `policy` for a build under `trigger`, writing into
/// `forbidden` (see [`forbidden_scopes`]) where the store can be probed.
pub async fn check_fence(
    spec: &StoreSpec,
    policy: &ScopePolicy,
    trigger: &Trigger,
    forbidden: &[Scope],
) -> Result<CheckReport, StoreError> {
    let store = AnyStore::open(spec).await?;
    let probes = match spec.fence() {
        Fence::Probe => {
            let expiring = spec.open_expiring(PROBE_TTL)?;
            probe(&store, expiring.as_ref(), policy, forbidden).await
        }
        Fence::Platform => platform(trigger),
    };
    let fenced = probes.iter().all(|p| {
        if p.may_write {
            p.can_write
        } else {
            !p.can_write && !p.inconclusive
        }
    });
    Ok(CheckReport {
        store: crate::CacheStore::describe(&store),
        fence: spec.fence(),
        probes,
        fenced,
    })
}

async fn probe(
    store: &AnyStore,
    expiring: Option<&AnyStore>,
    policy: &ScopePolicy,
    forbidden: &[Scope],
) -> Vec<Probe> {
    let mut targets: Vec<(Scope, bool)> = forbidden
        .iter()
        .filter(|s| Some(*s) != policy.write.as_ref())
        .map(|s| (s.clone(), false))
        .collect();
    if let Some(w) = &policy.write {
        targets.insert(0, (w.clone(), true));
    }
    let op = store.operator();
    let mut probes = Vec::new();
    for (scope, may_write) in targets {
        let path = crate::store::object_path(&scope, PROBE_KEY);
        // Straight to the service: the store's own `put` takes "already exists" as done. An
        // expiring write first; a credential refused that one (Redis: SETEX not granted) is
        // asked the plain write too, since that is what a build's writes would be.
        let written = match expiring {
            Some(e) => match write_probe(e, &path).await {
                Err(err) if e.denied(&err) => write_probe(store, &path).await,
                other => other,
            },
            None => write_probe(store, &path).await,
        };
        let (can_write, inconclusive, detail) = match written {
            Ok(()) => match op.delete(&path).await {
                Ok(()) => (true, false, "write accepted (probe removed)".to_owned()),
                Err(e) => {
                    tracing::warn!(%path, error = %e, "cannot remove the fence probe");
                    (
                        true,
                        false,
                        format!("write accepted; removing the probe {path:?} failed: {e}"),
                    )
                }
            },
            Err(e) if store.denied(&e) => (false, false, "write refused (permission)".to_owned()),
            Err(e) => {
                let mut chain = e.to_string();
                let mut cause = std::error::Error::source(&e);
                while let Some(c) = cause {
                    chain.push_str(&format!(": {c}"));
                    cause = c.source();
                }
                (false, true, format!("no verdict: {chain}"))
            }
        };
        probes.push(Probe {
            scope: scope.to_string(),
            may_write,
            can_write,
            inconclusive,
            detail,
        });
    }
    probes
}

async fn write_probe(store: &AnyStore, path: &str) -> Result<(), StoreError> {
    store
        .write(path, "probe".into())
        .await
        .map_err(|e| store.error("write", path.to_owned(), e))
}

/// The GitHub cache cannot be probed (no delete), and needs not be: GitHub scopes a run's
/// writes by its trigger. A `pull_request` run writes only its merge ref; the runs that act
/// for a PR with the base branch's access (`pull_request_target`, `issue_comment`,
/// `workflow_run`) could write what trusted builds read.
fn platform(trigger: &Trigger) -> Vec<Probe> {
    let row = |scope: String, may_write: bool, can_write: bool, detail: &str| Probe {
        scope,
        may_write,
        can_write,
        inconclusive: false,
        detail: detail.to_owned(),
    };
    let base = trigger
        .base_ref
        .as_deref()
        .map_or(trigger.default_branch.as_str(), |b| {
            b.strip_prefix("refs/heads/").unwrap_or(b)
        });
    match trigger.event.as_str() {
        "pull_request" => vec![
            row(
                format!(
                    "refs/pull/{}/merge",
                    trigger.pr.map_or("N".into(), |n| n.to_string())
                ),
                true,
                true,
                "GitHub lets a pull_request run write only its merge ref",
            ),
            row(
                format!("refs/heads/{base}"),
                false,
                false,
                "read-only for a pull_request run (GitHub's cache scoping)",
            ),
        ],
        "pull_request_target" | "issue_comment" | "workflow_run" => vec![row(
            format!("refs/heads/{base}"),
            false,
            true,
            "this trigger runs with the base branch's cache access: a PR's build here could poison it",
        )],
        e if vouch_core::ci::BRANCH_EVENTS.contains(&e) => vec![row(
            trigger.git_ref.clone(),
            true,
            true,
            "a trusted run writes its own ref",
        )],
        other => vec![row(
            "(unknown)".into(),
            false,
            true,
            &format!("{other:?}: cannot tell what GitHub lets this trigger write"),
        )],
    }
}
