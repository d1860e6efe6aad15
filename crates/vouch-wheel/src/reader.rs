//! Reading wheels. [`read_wheel`] is strict: it refuses anything a careful installer would
//! refuse, and names the member at fault.
//!
//! Members are streamed, never held whole: each is inflated a buffer at a time, hashed,
//! CRC-checked and handed to a [`Sink`] (normalize's spools its recompressed copy to a temp
//! file). Memory therefore stays bounded by the number of workers, not by what the archive
//! declares or how well it compresses.

use std::collections::{HashMap, HashSet};
use std::fs::File;
use std::io::{self, Read, Seek, SeekFrom};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};

use sha2::{Digest as _, Sha256};
use vouch_core::portable_path;
use zip::ZipArchive;
use zip::read::ZipReadOptions;

use crate::{DosTime, Record, WheelError, WheelFilename, record_hash};

/// Members larger than this are refused before decompression (zip-bomb guard). CuPy's largest
/// shared objects are a few hundred MB.
pub const MAX_MEMBER_SIZE: u64 = 4 << 30;

/// All members together, uncompressed. Memory no longer depends on it (members are streamed);
/// it bounds the CPU time and temp space a small, highly compressed bomb can cost.
pub const MAX_TOTAL_SIZE: u64 = 8 << 30;

/// RECORD and METADATA, together, are the members held in memory. CuPy's RECORD is a few
/// hundred KB, its METADATA a few KB.
pub const MAX_RECORD_SIZE: u64 = 16 << 20;

/// Entries in one archive: as many as a zip holds without ZIP64. The zip reader, the temp
/// zips and the output each keep a few hundred bytes per entry, so millions of empty members
/// would cost memory no wheel needs; CuPy's wheels hold about 1,500.
pub const MAX_MEMBERS: usize = 65_535;

/// The central directory, which the zip reader holds in memory with its names and extra
/// fields, and whose names normalize copies a few times over. 65,535 members with 80-byte
/// names need 8 MB.
pub const MAX_DIRECTORY_SIZE: u64 = 8 << 20;

/// How much of a member a worker inflates at a time.
const CHUNK: usize = 256 << 10;

/// One regular file of a wheel, as read: its digests and metadata (the data itself went to the
/// reader's sink, not into memory).
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    /// Uncompressed size in bytes.
    pub size: u64,
    pub sha256: [u8; 32],
    /// CRC-32 of the uncompressed data, checked against the archive's.
    pub crc32: u32,
    /// Unix permission bits, when the archive records them.
    pub unix_mode: Option<u32>,
    pub modified: Option<DosTime>,
}

impl Member {
    pub fn is_executable(&self) -> bool {
        self.unix_mode.is_some_and(|m| m & 0o111 != 0)
    }
}

/// A wheel that passed every check of [`read_wheel`].
#[derive(Debug)]
pub struct WheelContents {
    pub path: PathBuf,
    pub filename: WheelFilename,
    /// `name-version.dist-info`, as spelled inside the archive.
    pub dist_info: String,
    /// The wheel file as read.
    pub sha256: vouch_core::Sha256Digest,
    pub size: u64,
    /// Regular files in archive order; directory entries are dropped.
    pub members: Vec<Member>,
    /// The `.dist-info/METADATA` member's bytes (core metadata: name, version,
    /// `Requires-Dist`), when the wheel has one. Kept while reading, so asking for it costs
    /// no second pass over the archive.
    pub metadata: Option<Vec<u8>>,
}

impl WheelContents {
    pub fn record_path(&self) -> String {
        format!("{}/RECORD", self.dist_info)
    }
}

fn unsafe_reason(name: &str) -> Option<&'static str> {
    if name.is_empty() {
        return Some("empty name");
    }
    if name.contains('\0') {
        return Some("NUL byte");
    }
    if name.contains('\\') {
        return Some("backslash separator");
    }
    if name.starts_with('/') {
        return Some("absolute path");
    }
    let first = name.split('/').next().unwrap_or_default();
    if first.len() >= 2 && first.as_bytes()[1] == b':' {
        return Some("drive letter");
    }
    let trimmed = name.strip_suffix('/').unwrap_or(name);
    for part in trimmed.split('/') {
        match part {
            ".." => return Some("`..` component"),
            "." => return Some("`.` component"),
            "" => return Some("empty path component"),
            _ => {}
        }
    }
    None
}

/// A file read at explicit offsets, so every worker's clone of the archive reads on its own
/// position without reopening the path (which could name another file by then).
#[derive(Clone, Debug)]
struct SharedFile {
    file: Arc<File>,
    len: u64,
    pos: u64,
}

impl SharedFile {
    fn read_at(&self, buf: &mut [u8], offset: u64) -> io::Result<usize> {
        #[cfg(unix)]
        return std::os::unix::fs::FileExt::read_at(&*self.file, buf, offset);
        #[cfg(windows)]
        return std::os::windows::fs::FileExt::seek_read(&*self.file, buf, offset);
    }
}

impl Read for SharedFile {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.read_at(buf, self.pos)?;
        self.pos += n as u64;
        Ok(n)
    }
}

impl Seek for SharedFile {
    fn seek(&mut self, to: SeekFrom) -> io::Result<u64> {
        let target = match to {
            SeekFrom::Start(n) => Some(n),
            SeekFrom::Current(d) => self.pos.checked_add_signed(d),
            SeekFrom::End(d) => self.len.checked_add_signed(d),
        };
        self.pos = target.ok_or_else(|| {
            io::Error::new(
                io::ErrorKind::InvalidInput,
                "seek before the start of the file",
            )
        })?;
        Ok(self.pos)
    }
}

/// The names in the central directory, duplicates included. The zip crate folds duplicates into
/// one index entry, so to name the duplicate we walk the directory records ourselves.
fn raw_central_names(bytes: &[u8]) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = 0;
    while pos + 46 <= bytes.len() && bytes[pos..pos + 4] == [0x50, 0x4b, 0x01, 0x02] {
        let u16_at =
            |o: usize| usize::from(u16::from_le_bytes([bytes[pos + o], bytes[pos + o + 1]]));
        let (n, e, c) = (u16_at(28), u16_at(30), u16_at(32));
        let Some(name) = bytes.get(pos + 46..pos + 46 + n) else {
            break;
        };
        out.push(name.to_vec());
        pos += 46 + n + e + c;
    }
    out
}

/// What the end-of-central-directory record declares: the number of entries and the size of
/// the central directory, read before the zip crate parses (and allocates for) every entry.
/// `None` when the record is not where a plain zip has it; the zip crate then says what is
/// wrong.
fn declared_directory(file: &SharedFile) -> io::Result<Option<(u64, u64)>> {
    const EOCD: [u8; 4] = [0x50, 0x4b, 0x05, 0x06];
    const ZIP64_LOCATOR: [u8; 4] = [0x50, 0x4b, 0x06, 0x07];
    const ZIP64_EOCD: [u8; 4] = [0x50, 0x4b, 0x06, 0x06];
    let u64_at = |b: &[u8], o: usize| u64::from_le_bytes(b[o..o + 8].try_into().expect("8 bytes"));
    // The record is 22 bytes plus a comment of at most 64 KiB.
    let tail_len = file.len.min(22 + 0xffff);
    let mut tail = vec![0; tail_len as usize];
    read_exact_at(file, &mut tail, file.len - tail_len)?;
    let Some(at) = (0..tail.len().saturating_sub(21))
        .rev()
        .find(|&i| tail[i..i + 4] == EOCD)
    else {
        return Ok(None);
    };
    let entries = u16::from_le_bytes([tail[at + 10], tail[at + 11]]);
    let size = u32::from_le_bytes(tail[at + 12..at + 16].try_into().expect("4 bytes"));
    if entries != u16::MAX && size != u32::MAX {
        return Ok(Some((u64::from(entries), u64::from(size))));
    }
    // ZIP64: the locator sits just before the record and points at the ZIP64 record.
    let eocd_offset = file.len - tail_len + at as u64;
    let Some(locator_offset) = eocd_offset.checked_sub(20) else {
        return Ok(None);
    };
    let mut locator = [0u8; 20];
    read_exact_at(file, &mut locator, locator_offset)?;
    if locator[..4] != ZIP64_LOCATOR {
        return Ok(None);
    }
    let record_offset = u64_at(&locator, 8);
    if record_offset
        .checked_add(56)
        .is_none_or(|end| end > file.len)
    {
        return Ok(None);
    }
    let mut record = [0u8; 56];
    read_exact_at(file, &mut record, record_offset)?;
    if record[..4] != ZIP64_EOCD {
        return Ok(None);
    }
    Ok(Some((u64_at(&record, 32), u64_at(&record, 40))))
}

fn read_exact_at(file: &SharedFile, mut buf: &mut [u8], mut offset: u64) -> io::Result<()> {
    while !buf.is_empty() {
        match file.read_at(buf, offset) {
            Ok(0) => return Err(io::ErrorKind::UnexpectedEof.into()),
            Ok(n) => {
                buf = &mut buf[n..];
                offset += n as u64;
            }
            Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
            Err(e) => return Err(e),
        }
    }
    Ok(())
}

fn open_archive(path: &Path) -> Result<(SharedFile, ZipArchive<SharedFile>), WheelError> {
    let read_err = |source| WheelError::Read {
        path: path.to_owned(),
        source,
    };
    let file = File::open(path).map_err(read_err)?;
    let len = file.metadata().map_err(read_err)?.len();
    let shared = SharedFile {
        file: Arc::new(file),
        len,
        pos: 0,
    };
    if let Some((entries, size)) = declared_directory(&shared).map_err(read_err)? {
        if entries > MAX_MEMBERS as u64 {
            return Err(WheelError::TooManyMembers {
                path: path.to_owned(),
                count: entries,
                limit: MAX_MEMBERS,
            });
        }
        if size > MAX_DIRECTORY_SIZE {
            return Err(WheelError::DirectoryTooLarge {
                path: path.to_owned(),
                size,
                limit: MAX_DIRECTORY_SIZE,
            });
        }
    }
    let archive = ZipArchive::new(shared.clone()).map_err(|source| WheelError::BadZip {
        path: path.to_owned(),
        source,
    })?;
    if archive.len() > MAX_MEMBERS {
        return Err(WheelError::TooManyMembers {
            path: path.to_owned(),
            count: archive.len() as u64,
            limit: MAX_MEMBERS,
        });
    }
    if archive.has_duplicate_names() {
        // Only on this error path is the central directory read again, to name the duplicate.
        let start = archive.central_directory_start();
        let mut dir = vec![0; shared.len.saturating_sub(start) as usize];
        read_exact_at(&shared, &mut dir, start).map_err(read_err)?;
        let mut seen = HashSet::new();
        let dup = raw_central_names(&dir)
            .into_iter()
            .find(|n| !seen.insert(n.clone()))
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_else(|| "<unknown>".into());
        return Err(WheelError::DuplicateMember {
            path: path.to_owned(),
            member: dup,
        });
    }
    Ok((shared, archive))
}

/// Where a reader worker sends the members it inflates: each regular file is announced with
/// [`Sink::start`], then its data follows in order through [`Sink::write`].
/// [`Sink::end`] marks the end of its data.
pub(crate) trait Sink: Send {
    /// How many workers may inflate at once into sinks of this kind. Memory, not cores,
    /// bounds it for a sink that buffers.
    const WORKERS: usize;
    fn start(&mut self, name: &str, executable: bool, size: u64) -> Result<(), WheelError>;
    fn write(&mut self, data: &[u8]) -> Result<(), WheelError>;
    fn end(&mut self) -> Result<(), WheelError>;
}

/// Reading only to check and hash: a worker needs about 1 MB.
impl Sink for () {
    const WORKERS: usize = 8;
    fn start(&mut self, _: &str, _: bool, _: u64) -> Result<(), WheelError> {
        Ok(())
    }
    fn write(&mut self, _: &[u8]) -> Result<(), WheelError> {
        Ok(())
    }
    fn end(&mut self) -> Result<(), WheelError> {
        Ok(())
    }
}

/// What [`stream_archive`] found.
pub(crate) struct Streamed<S> {
    pub sha256: vouch_core::Sha256Digest,
    pub size: u64,
    /// Regular files in archive order.
    pub members: Vec<Member>,
    /// The data of the members `keep` asked for (RECORD), by name.
    pub kept: HashMap<String, Vec<u8>>,
    /// One sink per worker.
    pub sinks: Vec<S>,
    /// For each member of `members`: which sink got it, and how many members that sink had
    /// been given before it.
    pub placement: Vec<(usize, usize)>,
}

/// A zip's digest and its regular files.
#[derive(Debug)]
pub struct Archive {
    pub sha256: vouch_core::Sha256Digest,
    pub size: u64,
    pub members: Vec<Member>,
}

impl Archive {
    pub fn sha256(&self) -> vouch_core::Sha256Digest {
        self.sha256
    }
}

/// Reads every regular file of a zip, in archive order, decompressing on all cores. Checks
/// names, entry kinds, sizes and CRCs, but nothing wheel-specific.
pub fn read_archive(path: &Path) -> Result<Archive, WheelError> {
    let s = stream_archive(path, &|_| false, &|| Ok(()))?;
    Ok(Archive {
        sha256: s.sha256,
        size: s.size,
        members: s.members,
    })
}

/// What the header pass learned about one regular file.
struct Planned {
    name: String,
    keep: bool,
}

/// Checks every entry's name, kind and size from the central directory, then inflates the
/// regular files on all cores, largest first, into one `make_sink()` per worker.
pub(crate) fn stream_archive<S: Sink>(
    path: &Path,
    keep: &(dyn Fn(&str) -> bool + Sync),
    make_sink: &(dyn Fn() -> Result<S, WheelError> + Sync),
) -> Result<Streamed<S>, WheelError> {
    let (file, archive) = open_archive(path)?;
    let bad_zip = |source| WheelError::BadZip {
        path: path.to_owned(),
        source,
    };

    // One serial pass over the central directory, in archive order, so the first bad entry is
    // the one reported: names, kinds and sizes are checked before anything is inflated.
    let mut total = 0u64;
    let mut kept_total = 0u64;
    // Every name with whether it is a directory, in archive order, for the collision check.
    let mut names: Vec<(String, bool)> = Vec::with_capacity(archive.len());
    let mut plan: Vec<Option<Planned>> = Vec::with_capacity(archive.len());
    let mut compressed = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let f = archive.by_index_data(i).map_err(bad_zip)?;
        let name = std::str::from_utf8(f.name_raw())
            .map_err(|_| WheelError::UnsafeName {
                path: path.to_owned(),
                member: String::from_utf8_lossy(f.name_raw()).into_owned(),
                reason: "name is not UTF-8",
            })?
            .to_owned();
        if let Some(reason) = unsafe_reason(&name) {
            return Err(WheelError::UnsafeName {
                path: path.to_owned(),
                member: name,
                reason,
            });
        }
        if let Err(rule) = portable_path::check_path(&name) {
            return Err(WheelError::NonPortableName {
                path: path.to_owned(),
                member: name,
                rule,
            });
        }
        names.push((name.clone(), f.is_dir()));
        if f.is_dir() {
            plan.push(None);
            compressed.push(0);
            continue;
        }
        if f.is_symlink() {
            return Err(WheelError::NotAFile {
                path: path.to_owned(),
                member: name,
                kind: "symbolic link",
            });
        }
        let keep = keep(&name);
        if f.size() > MAX_MEMBER_SIZE {
            return Err(WheelError::TooLarge {
                path: path.to_owned(),
                member: name,
                size: f.size(),
                limit: MAX_MEMBER_SIZE,
            });
        }
        if keep {
            kept_total = kept_total.saturating_add(f.size());
            if kept_total > MAX_RECORD_SIZE {
                return Err(WheelError::TooLarge {
                    path: path.to_owned(),
                    member: name,
                    size: kept_total,
                    limit: MAX_RECORD_SIZE,
                });
            }
        }
        total = total.saturating_add(f.size());
        if total > MAX_TOTAL_SIZE {
            return Err(WheelError::TooLarge {
                path: path.to_owned(),
                member: format!("{name} (with the members before it)"),
                size: total,
                limit: MAX_TOTAL_SIZE,
            });
        }
        compressed.push(f.compressed_size());
        plan.push(Some(Planned { name, keep }));
    }
    portable_path::find_collision(names.iter().map(|(n, dir)| (n.as_str(), *dir))).map_err(
        |collision| WheelError::NameCollision {
            path: path.to_owned(),
            collision,
        },
    )?;
    drop(names);

    // Largest first, one member at a time per worker, so two cores finish together even when a
    // few huge shared objects sit next to each other in the archive.
    let mut order: Vec<usize> = (0..plan.len()).filter(|&i| plan[i].is_some()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(compressed[i]));
    let workers = std::thread::available_parallelism()
        .map_or(1, |n| n.get())
        .min(S::WORKERS)
        .min(order.len())
        .max(1);
    let next = AtomicUsize::new(0);
    let failed = AtomicBool::new(false);

    struct Done {
        index: usize,
        member: Member,
        kept: Option<Vec<u8>>,
        nth: usize,
    }
    let worker = |archive: &mut ZipArchive<SharedFile>,
                  sink: &mut S,
                  done: &mut Vec<Done>|
     -> Result<(), (usize, WheelError)> {
        let mut buf = vec![0u8; CHUNK];
        while !failed.load(Ordering::Relaxed) {
            let Some(&i) = order.get(next.fetch_add(1, Ordering::Relaxed)) else {
                break;
            };
            let planned = plan[i].as_ref().expect("only regular files are queued");
            let (member, kept) =
                inflate(path, archive, i, planned, sink, &mut buf).map_err(|e| (i, e))?;
            done.push(Done {
                index: i,
                member,
                kept,
                nth: done.len(),
            });
        }
        Ok(())
    };

    let (results, whole) = std::thread::scope(|scope| {
        let whole = scope.spawn(|| hash_file(&file));
        let handles: Vec<_> = (0..workers)
            .map(|_| {
                let mut archive = archive.clone();
                let worker = &worker;
                let failed = &failed;
                scope.spawn(move || {
                    let mut sink = make_sink().map_err(|e| (0, e))?;
                    let mut done = Vec::new();
                    worker(&mut archive, &mut sink, &mut done).inspect_err(|_| {
                        failed.store(true, Ordering::Relaxed);
                    })?;
                    Ok::<_, (usize, WheelError)>((sink, done))
                })
            })
            .collect();
        let results: Vec<_> = handles
            .into_iter()
            .map(|h| h.join().expect("reader workers do not panic"))
            .collect();
        (results, whole.join().expect("hashing does not panic"))
    });

    // Report the failing member that comes first in the archive, whichever worker met it.
    let mut first_error: Option<(usize, WheelError)> = None;
    let mut sinks = Vec::with_capacity(workers);
    let mut all = Vec::with_capacity(order.len());
    for (w, result) in results.into_iter().enumerate() {
        match result {
            Ok((sink, done)) => {
                sinks.push(sink);
                all.extend(done.into_iter().map(|d| (w, d)));
            }
            Err((i, e)) => {
                if first_error.as_ref().is_none_or(|(j, _)| i < *j) {
                    first_error = Some((i, e));
                }
            }
        }
    }
    if let Some((_, e)) = first_error {
        return Err(e);
    }
    let (sha256, size) = whole.map_err(|source| WheelError::Read {
        path: path.to_owned(),
        source,
    })?;
    all.sort_unstable_by_key(|(_, d)| d.index);
    let mut kept = HashMap::new();
    let mut members = Vec::with_capacity(all.len());
    let mut placement = Vec::with_capacity(all.len());
    for (w, d) in all {
        if let Some(data) = d.kept {
            kept.insert(d.member.name.clone(), data);
        }
        placement.push((w, d.nth));
        members.push(d.member);
    }
    Ok(Streamed {
        sha256,
        size,
        members,
        kept,
        sinks,
        placement,
    })
}

/// Inflates entry `i` into `sink`, hashing it and checking its size and CRC-32 on the way.
fn inflate<S: Sink>(
    path: &Path,
    archive: &mut ZipArchive<SharedFile>,
    i: usize,
    planned: &Planned,
    sink: &mut S,
    buf: &mut [u8],
) -> Result<(Member, Option<Vec<u8>>), WheelError> {
    let name = &planned.name;
    let options = ZipReadOptions::new().enforce_header_consistency(true);
    let mut file = archive
        .by_index_with_options(i, options)
        .map_err(|source| WheelError::BadZip {
            path: path.to_owned(),
            source,
        })?;
    let corrupt = |source| WheelError::CorruptMember {
        path: path.to_owned(),
        member: name.clone(),
        source,
    };
    let declared = file.size();
    let recorded_crc = file.crc32();
    let unix_mode = file.unix_mode().map(|m| m & 0o7777);
    let modified = file.last_modified().map(DosTime::from_zip);
    sink.start(name, unix_mode.is_some_and(|m| m & 0o111 != 0), declared)?;
    let mut kept = planned.keep.then(Vec::new);
    let mut sha = Sha256::new();
    let mut crc = crc32fast::Hasher::new();
    let mut read = 0u64;
    // The declared size bounds the read: a lying header cannot make us inflate more. (It also
    // stops the zip crate from ever seeing the end of the stream, where it would check the
    // CRC itself; hence the check below.)
    let mut data = (&mut file).take(declared);
    loop {
        let n = match data.read(buf) {
            Ok(0) => break,
            Ok(n) => n,
            Err(e) if e.kind() == io::ErrorKind::Interrupted => continue,
            Err(e) => return Err(corrupt(e)),
        };
        let chunk = &buf[..n];
        sha.update(chunk);
        crc.update(chunk);
        if let Some(k) = &mut kept {
            k.extend_from_slice(chunk);
        }
        sink.write(chunk)?;
        read += n as u64;
    }
    if read != declared {
        return Err(corrupt(io::Error::other(format!(
            "{read} bytes, but the header declares {declared}"
        ))));
    }
    sink.end()?;
    let found = crc.finalize();
    if found != recorded_crc {
        return Err(WheelError::CrcMismatch {
            path: path.to_owned(),
            member: name.clone(),
            expected: recorded_crc,
            found,
        });
    }
    Ok((
        Member {
            name: name.clone(),
            size: read,
            sha256: sha.finalize().into(),
            crc32: found,
            unix_mode,
            modified,
        },
        kept,
    ))
}

/// The sha256 and length of the whole file, read through the handle the members come from.
fn hash_file(file: &SharedFile) -> io::Result<(vouch_core::Sha256Digest, u64)> {
    let mut reader = file.clone();
    reader.pos = 0;
    vouch_core::Sha256Digest::of_reader(reader)
}

/// Reads a wheel and checks it: a valid filename, exactly one matching `.dist-info`, a RECORD
/// that lists every member (but itself and signatures) with a sha256 that matches, and nothing
/// listed that is absent.
pub fn read_wheel(path: &Path) -> Result<WheelContents, WheelError> {
    read_wheel_with(path, &|| Ok(())).map(|(wheel, _)| wheel)
}

/// [`read_wheel`], streaming each member into the sink of the worker that inflates it. The
/// members come back with their placement (see [`Streamed`]).
pub(crate) fn read_wheel_with<S: Sink>(
    path: &Path,
    make_sink: &(dyn Fn() -> Result<S, WheelError> + Sync),
) -> Result<(WheelContents, Streamed<S>), WheelError> {
    let file_name =
        path.file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| WheelError::Filename {
                name: path.display().to_string(),
                reason: "not a UTF-8 file name".into(),
            })?;
    let filename: WheelFilename = file_name.parse()?;
    let is_kept = |name: &str| {
        name.split_once('/').is_some_and(|(top, rest)| {
            (rest == "RECORD" || rest == "METADATA")
                && top
                    .strip_suffix(".dist-info")
                    .is_some_and(|d| filename.matches_dist_info(d))
        })
    };
    let mut streamed = stream_archive(path, &is_kept, make_sink)?;
    let members = std::mem::take(&mut streamed.members);
    let expected = format!("{}-{}.dist-info", filename.name, filename.version);

    let dist_infos: Vec<&str> = members
        .iter()
        .filter_map(|m| m.name.split_once('/').map(|(top, _)| top))
        .filter(|top| top.ends_with(".dist-info"))
        .collect::<std::collections::BTreeSet<_>>()
        .into_iter()
        .collect();
    let dist_info = match dist_infos.as_slice() {
        [one] if filename.matches_dist_info(one.trim_end_matches(".dist-info")) => {
            (*one).to_owned()
        }
        _ => {
            return Err(WheelError::DistInfo {
                path: path.to_owned(),
                expected,
                found: if dist_infos.is_empty() {
                    "none".into()
                } else {
                    dist_infos.join(", ")
                },
            });
        }
    };

    let record_path = format!("{dist_info}/RECORD");
    let record_data =
        streamed
            .kept
            .remove(&record_path)
            .ok_or_else(|| WheelError::MissingRecord {
                path: path.to_owned(),
                member: record_path.clone(),
            })?;
    let metadata = streamed.kept.remove(&format!("{dist_info}/METADATA"));
    streamed.kept.clear();
    let record = Record::parse(&record_data).map_err(|e| WheelError::RecordSyntax {
        path: path.to_owned(),
        member: record_path.clone(),
        line: e.line,
        reason: e.reason,
    })?;

    let by_name: HashMap<&str, &Member> = members.iter().map(|m| (m.name.as_str(), m)).collect();
    let mut listed = HashSet::new();
    for entry in &record.entries {
        if !listed.insert(entry.path.as_str()) {
            return Err(WheelError::RecordSyntax {
                path: path.to_owned(),
                member: record_path.clone(),
                line: 0,
                reason: format!("{:?} is listed twice", entry.path),
            });
        }
        if entry.path == record_path {
            continue;
        }
        let member = by_name
            .get(entry.path.as_str())
            .ok_or_else(|| WheelError::MissingMember {
                path: path.to_owned(),
                member: entry.path.clone(),
            })?;
        let hash = entry
            .hash
            .as_deref()
            .ok_or_else(|| WheelError::MissingHash {
                path: path.to_owned(),
                member: entry.path.clone(),
            })?;
        let (algorithm, _) = hash.split_once('=').unwrap_or((hash, ""));
        if algorithm != "sha256" {
            // sha384/sha512 are allowed by the spec but nobody writes them; refusing keeps one
            // hash path to audit.
            return Err(WheelError::WeakHash {
                path: path.to_owned(),
                member: entry.path.clone(),
                algorithm: algorithm.to_owned(),
            });
        }
        let found = record_hash(&member.sha256);
        if found != hash {
            return Err(WheelError::HashMismatch {
                path: path.to_owned(),
                member: entry.path.clone(),
                expected: hash.to_owned(),
                found,
            });
        }
        if let Some(size) = entry.size
            && size != member.size
        {
            return Err(WheelError::SizeMismatch {
                path: path.to_owned(),
                member: entry.path.clone(),
                expected: size,
                found: member.size,
            });
        }
    }
    let signatures = [
        format!("{dist_info}/RECORD.jws"),
        format!("{dist_info}/RECORD.p7s"),
    ];
    if let Some(m) = members.iter().find(|m| {
        !listed.contains(m.name.as_str()) && m.name != record_path && !signatures.contains(&m.name)
    }) {
        return Err(WheelError::NotInRecord {
            path: path.to_owned(),
            member: m.name.clone(),
        });
    }

    Ok((
        WheelContents {
            path: path.to_owned(),
            filename,
            dist_info,
            sha256: streamed.sha256,
            size: streamed.size,
            members,
            metadata,
        },
        streamed,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unsafe_names() {
        for (name, why) in [
            ("../evil.py", "`..` component"),
            ("pkg/../../evil.py", "`..` component"),
            ("/etc/passwd", "absolute path"),
            ("C:/x.py", "drive letter"),
            ("pkg\\x.py", "backslash separator"),
            ("pkg//x.py", "empty path component"),
        ] {
            assert_eq!(unsafe_reason(name), Some(why), "{name}");
        }
        assert_eq!(unsafe_reason("pkg/sub/"), None);
        assert_eq!(unsafe_reason("pkg/x..y.py"), None);
    }

    /// METADATA comes back with the checked wheel; a wheel without one reads as `None`.
    #[test]
    fn keeps_metadata() {
        use std::io::Write as _;
        let dir = tempfile::tempdir().unwrap();
        let write = |with_metadata: bool| {
            let path = dir.path().join("p-1.0-py3-none-any.whl");
            let mut members: Vec<(&str, &[u8])> = vec![("p.py", b"x = 1\n")];
            if with_metadata {
                members.push(("p-1.0.dist-info/METADATA", b"Name: p\nVersion: 1.0\n"));
            }
            let mut record = String::new();
            for (name, data) in &members {
                let digest: [u8; 32] = Sha256::digest(data).into();
                record.push_str(&format!("{name},{},{}\n", record_hash(&digest), data.len()));
            }
            record.push_str("p-1.0.dist-info/RECORD,,\n");
            let mut w = zip::ZipWriter::new(File::create(&path).unwrap());
            for (name, data) in members
                .iter()
                .copied()
                .chain([("p-1.0.dist-info/RECORD", record.as_bytes())])
            {
                w.start_file(name, zip::write::SimpleFileOptions::default())
                    .unwrap();
                w.write_all(data).unwrap();
            }
            w.finish().unwrap();
            read_wheel(&path).unwrap().metadata
        };
        assert_eq!(
            write(true).as_deref(),
            Some(&b"Name: p\nVersion: 1.0\n"[..])
        );
        assert_eq!(write(false), None);
    }

    #[test]
    fn issue12_refuses_more_entries_than_the_limit_before_parsing_them() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("many.zip");
        let mut w = zip::ZipWriter::new(io::BufWriter::new(File::create(&path).unwrap()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        for i in 0..=MAX_MEMBERS {
            w.start_file(format!("{i}"), opts).unwrap();
        }
        w.finish().unwrap();
        let err = read_archive(&path).unwrap_err();
        assert!(
            matches!(err, WheelError::TooManyMembers { count, .. } if count == MAX_MEMBERS as u64 + 1),
            "{err}"
        );
        assert!(
            err.to_string()
                .ends_with("declares 65536 entries, over the limit of 65535")
        );
    }

    #[test]
    fn issue12_refuses_a_central_directory_over_the_limit_before_parsing_it() {
        let dir = tempfile::tempdir().unwrap();
        let path = dir.path().join("long.zip");
        let mut w = zip::ZipWriter::new(io::BufWriter::new(File::create(&path).unwrap()));
        let opts = zip::write::SimpleFileOptions::default()
            .compression_method(zip::CompressionMethod::Stored);
        // 300 names of 30,000 bytes: 9 MB of central directory in few entries.
        for i in 0..300 {
            w.start_file(format!("{i:05}{}", "x".repeat(29_995)), opts)
                .unwrap();
        }
        w.finish().unwrap();
        // Not `unwrap_err`: an accepted archive would print 9 MB of names.
        match read_archive(&path) {
            Err(WheelError::DirectoryTooLarge { size, limit, .. }) => {
                assert_eq!(limit, MAX_DIRECTORY_SIZE);
                assert!(size > MAX_DIRECTORY_SIZE);
            }
            Err(e) => panic!("{e}"),
            Ok(a) => panic!("accepted, with {} members", a.members.len()),
        }
    }
}
