//! The GitHub Actions cache (the v2 service actions/cache uses), which GitHub itself scopes.
//!
//! The platform is the fence: a `pull_request` run writes only its `refs/pull/N/merge` scope
//! and reads the base and default branches; a run under `pull_request_target`,
//! `issue_comment` or `workflow_run` has the base branch's write access, so vouch never lets
//! a PR's build write there (`cache check`, and the scope policy's read-only modes).
//!
//! Limits: entries are immutable (a second write of a key is refused; keys name their
//! content, so that is no loss), 10 GB per repository with the oldest evicted first, entries
//! unused for 7 days evicted; keys at most 512 characters. There is no delete and no list, so
//! nothing can be probed or cleaned up. Reads are eventually consistent across scopes.
//! The service's address and token come from the job's environment, as actions/cache takes
//! them (`ACTIONS_RESULTS_URL`, `ACTIONS_RUNTIME_TOKEN`, `ACTIONS_CACHE_SERVICE_V2`).

use opendal::Operator;
use opendal::services::Ghac;

use super::{Backend, Fence, Location, permission_denied, root};
use crate::StoreError;

pub(super) const BACKEND: Backend = Backend {
    name: "gha",
    form: "gha[://prefix]",
    takes: |spec| spec == "gha" || spec.starts_with("gha://"),
    check: |l| prefix(l).map(|_| ()),
    build,
    no_secret: Some("the job's runtime token is its credential"),
    fence: Fence::Platform,
    denied: permission_denied,
    expiring: None,
};

/// Entries only match a lookup with the same version: vouch's own, so no other cache user
/// of the repository (actions/cache, sccache's own GHA mode) reads or shadows them.
const VERSION: &str = "vouch-cache-1";

fn prefix(l: &Location<'_>) -> Result<String, StoreError> {
    let Some(u) = &l.url else {
        return Ok("vouch".into());
    };
    if u.query().is_some() {
        return Err(l.bad("query", "gha stores take no options"));
    }
    let p = format!("{}{}", u.host_str().unwrap_or(""), u.path());
    let p = p.trim_matches('/');
    Ok(if p.is_empty() {
        "vouch".into()
    } else {
        p.to_owned()
    })
}

fn env(var: &'static str, why: &'static str) -> Result<String, StoreError> {
    std::env::var(var)
        .ok()
        .filter(|v| !v.is_empty())
        .ok_or(StoreError::MissingEnv {
            backend: BACKEND.name,
            var,
            why,
        })
}

fn build(l: &Location<'_>) -> Result<(Operator, String), StoreError> {
    let prefix = prefix(l)?;
    // OpenDAL picks the protocol from this variable alone, and v1 is retired on github.com.
    env(
        "ACTIONS_CACHE_SERVICE_V2",
        "vouch speaks the v2 cache service only (export it, as actions/cache does)",
    )?;
    // On GitHub Enterprise Server OpenDAL would silently fall back to v1.
    if let Ok(server) = std::env::var("GITHUB_SERVER_URL") {
        let host = url::Url::parse(&server)
            .ok()
            .and_then(|u| u.host_str().map(str::to_ascii_lowercase))
            .unwrap_or_default();
        if !(host == "github.com" || host.ends_with(".ghe.com") || host.ends_with(".localhost")) {
            return Err(StoreError::MissingEnv {
                backend: BACKEND.name,
                var: "GITHUB_SERVER_URL",
                why: "the v2 cache service of github.com or *.ghe.com (GitHub Enterprise Server has none)",
            });
        }
    }
    let endpoint = env("ACTIONS_RESULTS_URL", "the cache service's address")?;
    let token = env("ACTIONS_RUNTIME_TOKEN", "the job's cache token")?;
    let b = Ghac::default()
        .root(&root(&prefix))
        .version(VERSION)
        .endpoint(&endpoint)
        .runtime_token(&token);
    let op = Operator::new(b).map_err(l.open_error(BACKEND.name))?;
    Ok((op, format!("GitHub Actions cache /{prefix}")))
}
