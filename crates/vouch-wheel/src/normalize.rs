//! Deterministic repack. The output depends only on the members' names, contents and
//! executable bits, the epoch, and this crate's version (which pins the deflate implementation).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use serde::Serialize;
use zip::write::{PreparedZipFile, SimpleFileOptions};
use zip::{CompressionMethod, ZipWriter};

use crate::reader::read_wheel_with;
use crate::{DosTime, Record, RecordEntry, WheelError, record_hash};

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
    let time = DosTime::from_unix(options.epoch).to_zip();
    let file_options = |executable: bool| {
        SimpleFileOptions::default()
            .compression_method(CompressionMethod::Deflated)
            .compression_level(Some(DEFLATE_LEVEL))
            .last_modified_time(time)
            .unix_permissions(if executable { 0o755 } else { 0o644 })
    };
    let zip_err = |source| WheelError::ZipWrite {
        path: input.to_owned(),
        source,
    };
    // Compress each member on the worker that just inflated it; if the wheel then fails a
    // check, the work is thrown away, but a valid wheel (the common case) is read only once.
    let (wheel, prepared) = read_wheel_with(input, &|m| {
        PreparedZipFile::from_data(&m.name, file_options(m.is_executable()), &m.data)
            .map_err(zip_err)
    })?;
    let record_path = wheel.record_path();
    let signatures = [
        format!("{}/RECORD.jws", wheel.dist_info),
        format!("{}/RECORD.p7s", wheel.dist_info),
    ];

    let mut members: Vec<_> = wheel
        .members
        .iter()
        .zip(prepared)
        .filter(|(m, _)| {
            // A signature over the old RECORD cannot survive a new RECORD.
            let is_sig = signatures.contains(&m.name);
            if is_sig {
                tracing::warn!(member = %m.name, "dropping RECORD signature; it cannot cover the regenerated RECORD");
            }
            !is_sig && m.name != record_path
        })
        .collect();
    members.sort_by(|(a, _), (b, _)| {
        sort_key(&a.name, &wheel.dist_info, &record_path).cmp(&sort_key(
            &b.name,
            &wheel.dist_info,
            &record_path,
        ))
    });

    let record = Record {
        entries: members
            .iter()
            .map(|(m, _)| RecordEntry {
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
    let record_file =
        PreparedZipFile::from_data(&record_path, file_options(false), &record).map_err(zip_err)?;
    let count = members.len() + 1;

    let file_name = input.file_name().expect("read_wheel checked the file name");
    let output = out_dir.join(file_name);
    std::fs::create_dir_all(out_dir).map_err(|source| WheelError::Write {
        path: out_dir.to_owned(),
        source,
    })?;
    let mut writer = ZipWriter::new(std::io::Cursor::new(Vec::new()));
    for file in members
        .into_iter()
        .map(|(_, p)| p)
        .chain(std::iter::once(record_file))
    {
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
    let changed = bytes != wheel.bytes;

    let write_err = |source| WheelError::Write {
        path: output.clone(),
        source,
    };
    let mut builder = tempfile::Builder::new();
    builder.prefix(".vouch-normalize-").suffix(".tmp");
    // A release file, readable like any other the user writes (tempfile defaults to 0600).
    #[cfg(unix)]
    builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(0o644));
    let mut tmp = builder.tempfile_in(out_dir).map_err(write_err)?;
    // Hash on a second thread while this one writes: both are a pass over the whole output.
    let sha256 = std::thread::scope(|scope| {
        let hasher = scope.spawn(|| vouch_core::Sha256Digest::of(&bytes));
        let written = tmp.write_all(&bytes);
        let digest = hasher.join().expect("hashing does not panic");
        written.map(|()| digest)
    })
    .map_err(write_err)?;
    tmp.persist(&output).map_err(|e| write_err(e.error))?;

    tracing::debug!(output = %output.display(), %sha256, members = count, "normalized wheel");
    Ok(NormalizeReport {
        input: input.to_owned(),
        output,
        sha256,
        size: bytes.len() as u64,
        members: count,
        changed,
    })
}
