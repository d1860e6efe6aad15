//! Deterministic repack. The output depends only on the members' names, contents and
//! executable bits, the epoch, and this crate's version (which pins the deflate implementation).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest as _, Sha256};
use zip::write::{PreparedZipFile, SimpleFileOptions};
use zip::{CompressionMethod, ZipWriter};

use crate::{DosTime, Record, RecordEntry, WheelError, read_wheel, record_hash};

/// Used when neither the caller nor `SOURCE_DATE_EPOCH` gives a time: 1980-01-01T00:00:00Z,
/// the earliest time a zip can hold.
pub const DEFAULT_EPOCH: u64 = crate::time::DOS_EPOCH;

/// One compression setting for every member, so the bytes never depend on how the input was
/// compressed. Level 6 is zlib's default, what `wheel pack` and pip's builds use.
pub const DEFLATE_LEVEL: i64 = 6;

#[derive(Clone, Copy, Debug)]
pub struct NormalizeOptions {
    /// Seconds since the Unix epoch, stamped on every member.
    pub epoch: u64,
}

impl Default for NormalizeOptions {
    fn default() -> Self {
        NormalizeOptions {
            epoch: DEFAULT_EPOCH,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct NormalizeReport {
    pub input: PathBuf,
    pub output: PathBuf,
    pub sha256: vouch_core::Sha256Digest,
    pub size: u64,
    pub members: usize,
    /// Whether the output bytes differ from the input bytes.
    pub changed: bool,
}

/// Where a member goes: payload first, then `.dist-info` files, RECORD last (the order the
/// wheel spec recommends so that installers can stream).
fn sort_key<'a>(name: &'a str, dist_info: &str, record: &str) -> (u8, &'a [u8]) {
    let rank = if name == record {
        2
    } else if name.split('/').next() == Some(dist_info) {
        1
    } else {
        0
    };
    (rank, name.as_bytes())
}

/// Normalizes `input` into `out_dir/<same file name>`. The output appears atomically: on any
/// error nothing is left behind, and an existing file of that name is replaced only on success.
pub fn normalize_wheel(
    input: &Path,
    out_dir: &Path,
    options: NormalizeOptions,
) -> Result<NormalizeReport, WheelError> {
    let wheel = read_wheel(input)?;
    let record_path = wheel.record_path();
    let signatures = [
        format!("{}/RECORD.jws", wheel.dist_info),
        format!("{}/RECORD.p7s", wheel.dist_info),
    ];

    let mut members: Vec<_> = wheel
        .members
        .iter()
        .filter(|m| {
            // A signature over the old RECORD cannot survive a new RECORD.
            let is_sig = signatures.contains(&m.name);
            if is_sig {
                tracing::warn!(member = %m.name, "dropping RECORD signature; it cannot cover the regenerated RECORD");
            }
            !is_sig && m.name != record_path
        })
        .collect();
    members.sort_by(|a, b| {
        sort_key(&a.name, &wheel.dist_info, &record_path).cmp(&sort_key(
            &b.name,
            &wheel.dist_info,
            &record_path,
        ))
    });

    let record = Record {
        entries: members
            .iter()
            .map(|m| RecordEntry {
                path: m.name.clone(),
                hash: Some(record_hash(&m.sha256)),
                size: Some(m.data.len() as u64),
            })
            .chain(std::iter::once(RecordEntry {
                path: record_path.clone(),
                hash: None,
                size: None,
            }))
            .collect(),
    }
    .render();

    let time = DosTime::from_unix(options.epoch).to_zip();
    let file_options = |executable: bool| {
        SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(DEFLATE_LEVEL))
            .last_modified_time(time)
            .unix_permissions(if executable { 0o755 } else { 0o644 })
    };

    let entries: Vec<(&str, bool, &[u8])> = members
        .iter()
        .map(|m| (m.name.as_str(), m.is_executable(), m.data.as_slice()))
        .chain(std::iter::once((
            record_path.as_str(),
            false,
            record.as_slice(),
        )))
        .collect();
    let prepared: Vec<PreparedZipFile> = entries
        .par_iter()
        .map(|(name, exec, data)| PreparedZipFile::from_data(name, file_options(*exec), data))
        .collect::<Result<_, _>>()
        .map_err(|source| WheelError::ZipWrite {
            path: input.to_owned(),
            source,
        })?;

    let file_name = input.file_name().expect("read_wheel checked the file name");
    let output = out_dir.join(file_name);
    std::fs::create_dir_all(out_dir).map_err(|source| WheelError::Write {
        path: out_dir.to_owned(),
        source,
    })?;
    let mut writer = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for file in prepared {
        writer
            .add_prepared_file(file)
            .map_err(|source| WheelError::ZipWrite {
                path: output.clone(),
                source,
            })?;
    }
    let bytes = writer
        .finish()
        .map_err(|source| WheelError::ZipWrite {
            path: output.clone(),
            source,
        })?
        .into_inner();
    let sha256 = vouch_core::Sha256Digest::from_bytes(Sha256::digest(&bytes).into());
    let changed = sha256 != wheel.sha256;

    let write_err = |source| WheelError::Write {
        path: output.clone(),
        source,
    };
    let mut tmp = tempfile::Builder::new()
        .prefix(".vouch-normalize-")
        .suffix(".tmp")
        .tempfile_in(out_dir)
        .map_err(write_err)?;
    tmp.write_all(&bytes).map_err(write_err)?;
    tmp.as_file().sync_all().map_err(write_err)?;
    tmp.persist(&output).map_err(|e| write_err(e.error))?;

    tracing::debug!(output = %output.display(), %sha256, members = entries.len(), "normalized wheel");
    Ok(NormalizeReport {
        input: input.to_owned(),
        output,
        sha256,
        size: bytes.len() as u64,
        members: entries.len(),
        changed,
    })
}
