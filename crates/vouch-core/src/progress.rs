//! How a library reports progress without printing: it is handed a [`Reporter`] (or, for one
//! download, a [`ProgressFn`]) and the caller decides how, or whether, to show it. The CLI
//! implements [`Reporter`] with its terminal output and Actions annotations.

/// Called as bytes arrive: `(bytes so far, expected total)`.
pub type ProgressFn = std::sync::Arc<dyn Fn(u64, Option<u64>) + Send + Sync>;

/// Where a long-running library call reports what a user should see.
pub trait Reporter {
    /// A progress line.
    fn note(&self, message: &str);
    /// Something the user should act on (an annotation in CI).
    fn warning(&self, message: &str);
    /// A value that must never appear in logs from here on (e.g. a gateway URL's secret).
    fn secret(&self, value: &str);
    /// A long step begins; it ends when the returned guard is dropped.
    fn step(&self, label: &str) -> Box<dyn Step>;
}

/// A long step in progress (see [`Reporter::step`]).
pub trait Step {
    /// Byte progress for a download within the step, if the reporter draws it.
    fn bytes_progress(&self) -> Option<ProgressFn> {
        None
    }
}
