//! How a library reports progress without printing: the caller passes a [`ProgressFn`] and
//! decides how (or whether) to show it.

/// Called as bytes arrive: `(bytes so far, expected total)`.
pub type ProgressFn = std::sync::Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;
