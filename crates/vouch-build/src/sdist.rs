//! Builds the sdist of a project reproducibly: the same venv, work directory and scrubbed
//! environment as a wheel build, `python -m build --sdist`, then
//! [`vouch_wheel::normalize_sdist`] (the backend's tar records the build's times, owner and
//! umask; the normalized one does not).

use std::path::PathBuf;

use serde::Serialize;

use crate::{BuildError, BuildOptions, EpochSource, Prepared, run_logged};

#[derive(Clone, Debug, Serialize)]
pub struct SdistOutput {
    pub sdist: PathBuf,
    pub sha256: vouch_core::Sha256Digest,
    pub source_date_epoch: u64,
    pub epoch_source: EpochSource,
    pub python: String,
    /// `name==version` of everything in the build venv.
    pub build_tools: Vec<String>,
    /// The hash-locked tools, when the build had a lock.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub build_lock: Option<crate::BuildLock>,
    pub seconds: f64,
}

/// Builds the sdist of the source directory `options.source` and writes it, normalized, to
/// `options.out_dir`. The epoch follows the wheel build's rules (given, else the source's last
/// commit, else the default).
pub fn build_sdist(options: &BuildOptions) -> Result<SdistOutput, BuildError> {
    let started = std::time::Instant::now();
    // An sdist of an sdist would stamp the newest member time as the epoch and hide what the
    // checkout held: the sdist is made from the source tree only.
    if options.source.is_file() {
        return Err(BuildError::Sdist {
            path: options.source.clone(),
            message: "is a file; an sdist is built from a source directory".to_owned(),
        });
    }
    let prepared = Prepared::new(options)?;
    let cmd = prepared.pep517_command(options, "--sdist")?;
    run_logged(cmd, "the PEP 517 sdist build")?;
    let raw = prepared.single_output(".tar.gz")?;
    let report = vouch_wheel::normalize_sdist(&raw, &options.out_dir, prepared.epoch)?;
    tracing::info!(sdist = %report.output.display(), sha256 = %report.sha256, "built sdist");
    Ok(SdistOutput {
        sdist: report.output,
        sha256: report.sha256,
        source_date_epoch: prepared.epoch,
        epoch_source: prepared.epoch_source,
        python: prepared.python.version,
        build_tools: prepared.venv.frozen,
        build_lock: prepared.venv.lock,
        seconds: started.elapsed().as_secs_f64(),
    })
}
