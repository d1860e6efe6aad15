//! The scoped compiler cache around one build: a loopback gateway over the store with the
//! scope policy, the compiler cache pointed at it, and their counters afterwards.

use crate::{CellError, Reporter, record::CacheRecord};

/// What the caller decided: the tool, the store (with its secret), the scope policy and the
/// keys that sign what the build writes and check what it reads.
pub struct CacheSetup {
    pub tool: vouch_cache::Tool,
    pub store: vouch_cache::StoreSpec,
    pub policy: vouch_cache::ScopePolicy,
    pub keys: vouch_cache::EntryKeys,
}

/// A running gateway and compiler-cache session; [`RunningCache::finish`] stops both.
pub struct RunningCache {
    tool: vouch_cache::Tool,
    policy: vouch_cache::ScopePolicy,
    gateway: vouch_cache::RunningGateway,
    session: vouch_cache::ToolSession,
}

impl RunningCache {
    /// Starts the gateway and the tool, and points the build at them. `toolkit` is the
    /// build's pinned toolkit key, which every compile is keyed on (see
    /// [`vouch_cache::tool_env`]).
    pub fn start(
        setup: CacheSetup,
        toolkit: Option<&str>,
        options: &mut vouch_build::BuildOptions,
        reporter: &dyn Reporter,
    ) -> Result<RunningCache, CellError> {
        reporter.note(&format!(
            "cache: {} via {} ({})",
            setup.tool.name(),
            setup.store.display(),
            setup.policy.reason
        ));
        let gateway = vouch_cache::RunningGateway::start(
            &setup.store,
            setup.policy.clone(),
            setup.keys,
            std::net::SocketAddr::from(([127, 0, 0, 1], 0)),
            vouch_cache::DEFAULT_MAX_ENTRY,
        )?;
        reporter.secret(&gateway.url);
        let session = vouch_cache::ToolSession::start(setup.tool, &gateway.url, toolkit)?;
        options.env.extend(session.env.iter().cloned());
        // Cython's translations and auditwheel's repairs share the gateway, in its key/value
        // namespace: the same scopes decide what a pull request's build may read and write.
        options.kv_cache = Some(format!("{}/kv", gateway.url.trim_end_matches('/')));
        options.launcher = Some(session.binary.clone());
        Ok(RunningCache {
            tool: setup.tool,
            policy: setup.policy,
            gateway,
            session,
        })
    }

    /// Stops the tool (flushing its writes through the gateway) and reads both counters;
    /// `shim` is what the build's Cython translation and repair caches counted.
    pub fn finish(
        self,
        reporter: &dyn Reporter,
        shim: Option<vouch_build::ShimCacheStats>,
    ) -> Result<CacheRecord, CellError> {
        let compiler_cache = self
            .session
            .stats()
            .map_err(|e| tracing::warn!(error = %e, "no compiler-cache stats"))
            .ok();
        self.session.finish()?;
        let gateway = self.gateway.stats();
        reporter.note(&format!(
            "cache: {} hits, {} misses ({} entries passed over unauthenticated), {} writes to {}, {} refused",
            gateway.hits,
            gateway.misses,
            gateway.unauthenticated,
            gateway.writes,
            gateway.write_scope.as_deref().unwrap_or("-"),
            gateway.refused_writes
        ));
        let hit_rate = compiler_cache
            .as_ref()
            .and_then(|s| match (s.hits, s.misses) {
                (Some(h), Some(m)) if h + m > 0 => Some(h as f64 / (h + m) as f64),
                _ => None,
            });
        if let (Some(rate), Some(s)) = (hit_rate, &compiler_cache) {
            reporter.note(&format!(
                "compiler cache: {} hits, {} misses ({:.1}% hits)",
                s.hits.unwrap_or(0),
                s.misses.unwrap_or(0),
                rate * 100.0
            ));
        }
        let (cython, repair) = match shim {
            Some(s) => (Some(s.cython), Some(s.repair)),
            None => (None, None),
        };
        for (layer, stats) in [("Cython cache", &cython), ("repair cache", &repair)] {
            // A build with no repair step has nothing to say about the repair cache.
            let Some(c) = stats
                .as_ref()
                .filter(|c| **c != vouch_build::LayerStats::default())
            else {
                continue;
            };
            reporter.note(&format!(
                "{layer}: {} hits, {} misses, {} stored{}",
                c.hits,
                c.misses,
                c.stored,
                match c.hit_rate() {
                    Some(r) => format!(" ({:.1}% hits)", r * 100.0),
                    None => String::new(),
                }
            ));
            for note in &c.notes {
                reporter.note(&format!("{layer}: {note}"));
            }
        }
        Ok(CacheRecord {
            tool: self.tool,
            policy: self.policy,
            gateway,
            compiler_cache,
            hit_rate,
            cython,
            repair,
        })
    }
}
