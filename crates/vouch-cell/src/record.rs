//! The build record (`<wheel>.build.json`): what a cell build writes next to its wheel, what
//! `--reuse-from` reads back, and what later steps (attest, the step summary, the generated
//! workflows) may rely on. Its shape is versioned by [`SCHEMA`].

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};

/// The record's schema; a change that removes or retypes a field gets a new one.
pub const SCHEMA: &str = "https://vouch.build/cell-record/v1";

fn schema() -> String {
    SCHEMA.to_owned()
}

#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CellRecord {
    #[serde(default = "schema")]
    pub schema: String,
    pub cell: String,
    pub package: String,
    /// `<dist>-py<X.Y>-<plat>[-pr<N>]-<sha>`, when the commit is known.
    pub artifact: Option<String>,
    pub wheel: String,
    pub sha256: String,
    pub inputs_digest: String,
    pub inputs_files: usize,
    pub source_date_epoch: u64,
    pub toolchain: Option<vouch_toolchain::Installed>,
    pub cache: Option<CacheRecord>,
    pub repair: Option<vouch_build::RepairOutcome>,
    /// The variables the cell set for the build (never secrets: profile values).
    pub env: BTreeMap<String, String>,
    pub build_tools: Vec<String>,
    /// The lock the build venv was installed from: each tool's wheel and sha256. Absent for a
    /// profile without `[lock]`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub build_lock: Option<vouch_build::BuildLock>,
    pub seconds: Durations,
    /// Set when the wheel was copied from an earlier build with the same inputs digest.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub reused_from: Option<String>,
}

/// What the scoped compiler cache did during one build.
#[derive(Clone, Debug, Serialize, Deserialize)]
pub struct CacheRecord {
    pub tool: vouch_cache::Tool,
    pub policy: vouch_cache::ScopePolicy,
    pub gateway: vouch_cache::GatewayStats,
    pub compiler_cache: Option<vouch_cache::ToolStats>,
    /// Compiler-cache hits / (hits + misses), from the tool's own counters when it has them.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub hit_rate: Option<f64>,
    /// The Cython translation cache's counters (the build went through the same gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub cython: Option<vouch_build::LayerStats>,
    /// The `auditwheel repair` cache's counters (the same gateway).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub repair: Option<vouch_build::LayerStats>,
}

#[derive(Clone, Debug, Serialize, Deserialize, Default)]
pub struct Durations {
    pub toolchain: f64,
    pub build: f64,
    pub total: f64,
    /// The build's phases (absent for a reused wheel).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phases: Option<vouch_build::BuildPhases>,
}

impl CellRecord {
    /// The record's file name next to its wheel.
    pub fn file_name(&self) -> String {
        format!("{}.build.json", self.wheel)
    }
}

/// An earlier build of `cell` with the same inputs digest found in a directory.
pub struct Reusable {
    pub wheel: PathBuf,
    /// The wheel's bytes, already checked against the record's sha256.
    pub bytes: Vec<u8>,
    pub record: CellRecord,
}

/// Looks through `dir` for a record of `cell` with inputs `digest` whose wheel is still the
/// one recorded. Records and wheels that do not qualify are skipped with a warning: the
/// directory is data we do not control, so nothing in it can fail the build.
pub fn find_reusable(dir: &Path, cell: &str, digest: &str) -> std::io::Result<Option<Reusable>> {
    for e in std::fs::read_dir(dir)?.flatten() {
        let path = e.path();
        if !path.to_string_lossy().ends_with(".build.json") {
            continue;
        }
        let Ok(bytes) = std::fs::read(&path) else {
            continue;
        };
        let Ok(record) = serde_json::from_slice::<CellRecord>(&bytes) else {
            tracing::warn!(file = %path.display(), "not a build record; skipped");
            continue;
        };
        if record.cell != cell || record.inputs_digest != digest {
            continue;
        }
        // Its wheel must be a plain file name next to it, never a path.
        let plain =
            Path::new(&record.wheel).file_name() == Some(std::ffi::OsStr::new(&record.wheel));
        if !plain || !record.wheel.ends_with(".whl") {
            tracing::warn!(file = %path.display(), wheel = %record.wheel, "record names no plain wheel file; skipped");
            continue;
        }
        let wheel = dir.join(&record.wheel);
        let Ok(bytes) = std::fs::read(&wheel) else {
            tracing::warn!(wheel = %wheel.display(), "recorded wheel missing; not reused");
            continue;
        };
        if vouch_core::Sha256Digest::of(&bytes).to_string() != record.sha256 {
            tracing::warn!(wheel = %wheel.display(), "recorded wheel changed; not reused");
            continue;
        }
        return Ok(Some(Reusable {
            wheel,
            bytes,
            record,
        }));
    }
    Ok(None)
}
