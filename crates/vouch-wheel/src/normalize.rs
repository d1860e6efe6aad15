//! Deterministic repack. The output depends only on the members' names, contents and
//! executable bits, the epoch, and this crate's version (which pins the deflate implementation).

use std::fs::File;
use std::io::{BufWriter, Seek as _, SeekFrom, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;
use zip::write::{PreparedZipFile, SimpleFileOptions};
use zip::{CompressionMethod, ZipArchive, ZipWriter};

use crate::reader::{Sink, read_wheel_with};
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

/// The zip options every member is written with. The size decides only whether a ZIP64 header
/// is needed, as it did when members were compressed in memory.
fn file_options(time: zip::DateTime, executable: bool, size: u64) -> SimpleFileOptions {
    SimpleFileOptions::default()
        .compression_method(CompressionMethod::Deflated)
        .compression_level(Some(DEFLATE_LEVEL))
        .last_modified_time(time)
        .unix_permissions(if executable { 0o755 } else { 0o644 })
        .large_file(size >= u64::from(u32::MAX))
}

/// How far ahead of the compressor a spool keeps the data it hands it (see [`Spool`]). One
/// call into the deflater fills at most its 32 KiB output buffer: at deflate's best ratio
/// (1032:1, a run of zeros) that is 33,816,576 bytes of input, which is what a call on zeros
/// was measured to consume. Add one block of symbols not yet written (16K symbols of at most
/// 258 bytes) and the 64 KiB the deflater reads ahead into its window: under 39 MB.
const LOOKAHEAD: usize = 40 << 20;

/// Data the deflater has consumed is dropped from the front of the buffer in steps this big:
/// the step bounds the extra memory, and the copy costs one pass per step.
const COMPACT: usize = 4 << 20;

/// One reader worker's members, recompressed as they are inflated into an unnamed temp zip in
/// the output directory. Once the wheel has passed every check, their compressed bytes are
/// copied into the output in normalized order: each member is compressed once, on the worker
/// that inflated it, and never held whole in memory.
///
/// The deflater (zlib-rs) does not produce the same bytes for every way of cutting its input:
/// a call that finds less input than it could read emits a different stream. Members used to
/// be compressed from memory in one `write_all`, so every call saw all the rest of the member.
/// The spool keeps that: each call is handed at least [`LOOKAHEAD`] bytes, more than one call
/// can consume, or the true rest of the member. The output thus stays a function of the
/// content alone (not of how the input wheel happened to be compressed) and byte-identical to
/// what in-memory compression wrote.
struct Spool {
    zip: ZipWriter<BufWriter<File>>,
    pending: Vec<u8>,
    /// How much of `pending` the deflater has consumed.
    consumed: usize,
    dir: PathBuf,
    input: PathBuf,
    time: zip::DateTime,
}

impl Spool {
    fn write_err(&self, source: std::io::Error) -> WheelError {
        WheelError::Write {
            path: self.dir.clone(),
            source,
        }
    }
}

impl Sink for Spool {
    /// Each spool may hold [`LOOKAHEAD`] plus [`COMPACT`] bytes: two of them, with the
    /// metadata of a wheel at the reader's limits, keep normalize under 256 MB.
    const WORKERS: usize = 2;

    fn start(&mut self, name: &str, executable: bool, size: u64) -> Result<(), WheelError> {
        self.pending.clear();
        self.consumed = 0;
        let most = usize::try_from(size).unwrap_or(usize::MAX);
        self.pending
            .reserve_exact(most.min(LOOKAHEAD + COMPACT + (1 << 20)));
        self.zip
            .start_file(name, file_options(self.time, executable, size))
            .map_err(|source| WheelError::ZipWrite {
                path: self.input.clone(),
                source,
            })
    }

    fn write(&mut self, data: &[u8]) -> Result<(), WheelError> {
        self.pending.extend_from_slice(data);
        while self.pending.len() - self.consumed > LOOKAHEAD {
            match self.zip.write(&self.pending[self.consumed..]) {
                Ok(0) => return Err(self.write_err(std::io::ErrorKind::WriteZero.into())),
                Ok(n) => self.consumed += n,
                Err(e) if e.kind() == std::io::ErrorKind::Interrupted => {}
                Err(e) => return Err(self.write_err(e)),
            }
        }
        if self.consumed >= COMPACT {
            self.pending.drain(..self.consumed);
            self.consumed = 0;
        }
        Ok(())
    }

    fn end(&mut self) -> Result<(), WheelError> {
        let written = self.zip.write_all(&self.pending[self.consumed..]);
        self.pending.clear();
        self.consumed = 0;
        written.map_err(|e| self.write_err(e))
    }
}

/// Normalizes `input` into `out_dir/<same file name>`. The output appears atomically: on any
/// error nothing is left behind, and an existing file of that name is replaced only on success.
pub fn normalize_wheel(
    input: &Path,
    out_dir: &Path,
    options: NormalizeOptions,
) -> Result<NormalizeReport, WheelError> {
    let time = DosTime::from_unix(options.epoch).to_zip();
    let dir_err = |source| WheelError::Write {
        path: out_dir.to_owned(),
        source,
    };
    std::fs::create_dir_all(out_dir).map_err(dir_err)?;
    let (wheel, streamed) = read_wheel_with(input, &|| {
        // Unnamed, so nothing is left in the output directory whatever happens.
        let file = tempfile::tempfile_in(out_dir).map_err(dir_err)?;
        Ok(Spool {
            zip: ZipWriter::new(BufWriter::with_capacity(1 << 20, file)),
            pending: Vec::new(),
            consumed: 0,
            dir: out_dir.to_owned(),
            input: input.to_owned(),
            time,
        })
    })?;
    let record_path = wheel.record_path();
    let signatures = [
        format!("{}/RECORD.jws", wheel.dist_info),
        format!("{}/RECORD.p7s", wheel.dist_info),
    ];

    let mut members: Vec<_> = wheel
        .members
        .iter()
        .zip(streamed.placement.iter().copied())
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
                size: Some(m.size),
            })
            .chain(std::iter::once(RecordEntry {
                path: record_path.clone(),
                hash: None,
                size: None,
            }))
            .collect(),
    }
    .render();
    let zip_err = |source| WheelError::ZipWrite {
        path: input.to_owned(),
        source,
    };
    let record_file = PreparedZipFile::from_data(
        &record_path,
        file_options(time, false, record.len() as u64),
        &record,
    )
    .map_err(zip_err)?;
    let count = members.len() + 1;

    let mut spools = Vec::with_capacity(streamed.sinks.len());
    for spool in streamed.sinks {
        let file = spool
            .zip
            .finish()
            .map_err(zip_err)?
            .into_inner()
            .map_err(|e| dir_err(e.into_error()))?;
        // Unbuffered: every member is a seek, which would throw a read buffer away.
        spools.push(
            ZipArchive::new(file).map_err(|source| WheelError::ZipWrite {
                path: out_dir.to_owned(),
                source,
            })?,
        );
    }

    let file_name = input.file_name().expect("read_wheel checked the file name");
    let output = out_dir.join(file_name);
    let out_zip_err = |source| WheelError::ZipWrite {
        path: output.clone(),
        source,
    };
    let write_err = |source| WheelError::Write {
        path: output.clone(),
        source,
    };
    let out = vouch_fs::Output::create(&output, vouch_fs::Mode::Public).map_err(write_err)?;
    let mut writer = ZipWriter::new(BufWriter::with_capacity(1 << 20, out));
    for (_, (spool, nth)) in members {
        let file = spools[spool].by_index_raw(nth).map_err(out_zip_err)?;
        writer.raw_copy_file(file).map_err(out_zip_err)?;
    }
    writer.add_prepared_file(record_file).map_err(out_zip_err)?;
    let mut out = writer
        .finish()
        .map_err(out_zip_err)?
        .into_inner()
        .map_err(|e| write_err(e.into_error()))?;
    drop(spools);

    // Hash what was written, read back from the file that will be renamed into place.
    out.seek(SeekFrom::Start(0)).map_err(write_err)?;
    let (sha256, size) = vouch_core::Sha256Digest::of_reader(&mut out).map_err(write_err)?;
    let changed = sha256 != wheel.sha256 || size != wheel.size;
    out.commit().map_err(write_err)?;

    tracing::debug!(output = %output.display(), %sha256, members = count, "normalized wheel");
    Ok(NormalizeReport {
        input: input.to_owned(),
        output,
        sha256,
        size,
        members: count,
        changed,
    })
}
