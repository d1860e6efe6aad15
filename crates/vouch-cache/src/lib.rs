//! The scoped compiler cache. A pull-request build, even one a maintainer vouched for, reads
//! the shared cache but writes only its own `pr/<N>` scope; a trusted build never reads a PR
//! scope. The gateway enforces the policy for the compiler caches that talk to it; the backing
//! store's credentials are the real fence (`check`).

mod check;
mod gateway;
mod gateway_url;
mod grant;
mod scope;
mod store;
mod tools;
mod trigger;

pub use check::{CheckReport, Probe, check_fence, forbidden_scopes};
pub use gateway::{
    DEFAULT_MAX_ENTRY, GatewayError, GatewayStats, LayerStats, RunningGateway, Secret, router,
};
pub use gateway_url::{GatewayUrl, UrlError};
pub use grant::{Grant, GrantError, grant};
pub use scope::{Scope, ScopeError, ScopePolicy, Trigger};
pub use store::{AnyStore, CacheStore, Fence, StoreError, StoreSpec, check_key};
pub use tools::{Tool, ToolError, ToolSession, ToolStats, read_tool_stats, tool_env};
pub use trigger::TriggerError;
