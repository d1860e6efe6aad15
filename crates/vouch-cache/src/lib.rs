//! The scoped compiler cache. Writes follow trust and so do reads: a pull-request build, even
//! one a maintainer vouched for, reads only the branch scopes trusted builds write and writes
//! nothing; a trusted build reads its own scope and serves only entries authenticated with its
//! key (`entry`). The gateway enforces the policy for the compiler caches that talk to it; the
//! backing store's credentials are the write fence (`check`).

mod check;
mod entry;
mod gateway;
mod gateway_url;
mod grant;
mod scope;
mod store;
mod tools;
mod trigger;

pub use check::{CheckReport, Probe, check_fence, forbidden_scopes};
pub use entry::{EntryKeyError, EntryKeys, EntrySigner, EntryVerifier};
pub use gateway::{
    DEFAULT_MAX_ENTRY, GatewayError, GatewayStats, LayerStats, RunningGateway, Secret, router,
};
pub use gateway_url::{GatewayUrl, UrlError};
pub use grant::{Grant, GrantError, grant};
pub use scope::{Scope, ScopeError, ScopePolicy, Trigger};
pub use store::{AnyStore, CacheStore, Fence, StoreError, StoreSpec, check_key};
pub use tools::{Tool, ToolError, ToolSession, ToolStats, read_tool_stats, tool_env};
pub use trigger::TriggerError;
