//! Reading wheels. [`read_wheel`] is strict: it refuses anything a careful installer would
//! refuse, and names the member at fault.

use std::collections::{HashMap, HashSet};
use std::io::{Cursor, Read};
use std::path::{Path, PathBuf};

use rayon::prelude::*;
use sha2::{Digest as _, Sha256};
use zip::ZipArchive;
use zip::read::ZipReadOptions;

use crate::{DosTime, Record, WheelError, WheelFilename, record_hash};

/// Members larger than this are refused before decompression (zip-bomb guard). CuPy's largest
/// shared objects are a few hundred MB.
pub const MAX_MEMBER_SIZE: u64 = 4 << 30;

/// All members together, uncompressed: a wheel is read into memory, so a bomb of many
/// maximal members must stop before it is inflated.
pub const MAX_TOTAL_SIZE: u64 = 8 << 30;

/// One regular file of a wheel, decompressed.
#[derive(Clone, Debug)]
pub struct Member {
    pub name: String,
    pub data: Vec<u8>,
    pub sha256: [u8; 32],
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
    pub bytes: Vec<u8>,
    /// Regular files in archive order; directory entries are dropped.
    pub members: Vec<Member>,
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

/// The names in the central directory, duplicates included. The zip crate folds duplicates into
/// one index entry, so to name the duplicate we walk the directory records ourselves.
fn raw_central_names(bytes: &[u8], start: u64) -> Vec<Vec<u8>> {
    let mut out = Vec::new();
    let mut pos = start as usize;
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

fn open_archive<'a>(
    path: &Path,
    bytes: &'a [u8],
) -> Result<ZipArchive<Cursor<&'a [u8]>>, WheelError> {
    let archive = ZipArchive::new(Cursor::new(bytes)).map_err(|source| WheelError::BadZip {
        path: path.to_owned(),
        source,
    })?;
    if archive.has_duplicate_names() {
        let mut seen = HashSet::new();
        let dup = raw_central_names(bytes, archive.central_directory_start())
            .into_iter()
            .find(|n| !seen.insert(n.clone()))
            .map(|n| String::from_utf8_lossy(&n).into_owned())
            .unwrap_or_else(|| "<unknown>".into());
        return Err(WheelError::DuplicateMember {
            path: path.to_owned(),
            member: dup,
        });
    }
    Ok(archive)
}

/// A zip's bytes and its regular files.
#[derive(Debug)]
pub struct Archive {
    pub bytes: Vec<u8>,
    pub members: Vec<Member>,
}

impl Archive {
    pub fn sha256(&self) -> vouch_core::Sha256Digest {
        vouch_core::Sha256Digest::of(&self.bytes)
    }
}

/// Reads every regular file of a zip, in archive order, decompressing on all cores. Checks
/// names, entry kinds, sizes and CRCs, but nothing wheel-specific.
pub fn read_archive(path: &Path) -> Result<Archive, WheelError> {
    read_archive_with(path, &|_| Ok(())).map(|(archive, _)| archive)
}

/// A function applied to each member on the worker that decompressed it, while the data is
/// still hot in cache (normalize compresses there, instead of in a second pass).
pub(crate) type PerMember<'a, T> = &'a (dyn Fn(&Member) -> Result<T, WheelError> + Sync);

pub(crate) fn read_archive_with<T: Send>(
    path: &Path,
    per_member: PerMember<'_, T>,
) -> Result<(Archive, Vec<T>), WheelError> {
    let bytes = std::fs::read(path).map_err(|source| WheelError::Read {
        path: path.to_owned(),
        source,
    })?;
    let (members, extra) = members_of(path, &bytes, per_member)?.into_iter().unzip();
    Ok((Archive { bytes, members }, extra))
}

fn members_of<T: Send>(
    path: &Path,
    bytes: &[u8],
    per_member: PerMember<'_, T>,
) -> Result<Vec<(Member, T)>, WheelError> {
    let archive = open_archive(path, bytes)?;
    // One pass over the central directory: bound the total before inflating anything, and
    // order the work largest first, one task per member, so two cores finish together even when
    // a few huge shared objects sit next to each other in the archive.
    let mut headers = archive.clone();
    let mut total = 0u64;
    let mut sizes = Vec::with_capacity(archive.len());
    for i in 0..archive.len() {
        let f = headers
            .by_index_raw(i)
            .map_err(|source| WheelError::BadZip {
                path: path.to_owned(),
                source,
            })?;
        total = total.saturating_add(f.size());
        if total > MAX_TOTAL_SIZE {
            return Err(WheelError::TooLarge {
                path: path.to_owned(),
                member: format!(
                    "{} (with the members before it)",
                    String::from_utf8_lossy(f.name_raw())
                ),
                size: total,
                limit: MAX_TOTAL_SIZE,
            });
        }
        sizes.push(f.compressed_size());
    }
    let mut order: Vec<usize> = (0..archive.len()).collect();
    order.sort_by_key(|&i| std::cmp::Reverse(sizes[i]));
    let mut results: Vec<(usize, Option<(Member, T)>)> = order
        .into_par_iter()
        .with_max_len(1)
        .map_init(
            || archive.clone(),
            |archive, i| -> Result<(usize, Option<(Member, T)>), WheelError> {
                let options = ZipReadOptions::new().enforce_header_consistency(true);
                let mut file = archive
                    .by_index_with_options(i, options)
                    .map_err(|source| WheelError::BadZip {
                        path: path.to_owned(),
                        source,
                    })?;
                let name = std::str::from_utf8(file.name_raw())
                    .map_err(|_| WheelError::UnsafeName {
                        path: path.to_owned(),
                        member: String::from_utf8_lossy(file.name_raw()).into_owned(),
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
                if file.is_dir() {
                    return Ok((i, None));
                }
                if file.is_symlink() {
                    return Err(WheelError::NotAFile {
                        path: path.to_owned(),
                        member: name,
                        kind: "symbolic link",
                    });
                }
                if file.size() > MAX_MEMBER_SIZE {
                    return Err(WheelError::TooLarge {
                        path: path.to_owned(),
                        member: name,
                        size: file.size(),
                        limit: MAX_MEMBER_SIZE,
                    });
                }
                let declared = file.size();
                // Reserve only a little up front: the declared size is the sender's claim.
                let mut data = Vec::with_capacity(declared.min(64 << 20) as usize);
                // The declared size bounds the read: a lying header cannot make us inflate more.
                (&mut file)
                    .take(declared)
                    .read_to_end(&mut data)
                    .map_err(|source| WheelError::CorruptMember {
                        path: path.to_owned(),
                        member: name.clone(),
                        source,
                    })?;
                if data.len() as u64 != declared {
                    return Err(WheelError::CorruptMember {
                        path: path.to_owned(),
                        member: name,
                        source: std::io::Error::other(format!(
                            "{} bytes, but the header declares {declared}",
                            data.len()
                        )),
                    });
                }
                let sha256 = Sha256::digest(&data).into();
                let member = Member {
                    unix_mode: file.unix_mode().map(|m| m & 0o7777),
                    modified: file.last_modified().map(DosTime::from_zip),
                    name,
                    data,
                    sha256,
                };
                let extra = per_member(&member)?;
                Ok((i, Some((member, extra))))
            },
        )
        .collect::<Result<_, _>>()?;
    results.sort_unstable_by_key(|(i, _)| *i);
    Ok(results.into_iter().filter_map(|(_, m)| m).collect())
}

/// Reads a wheel and checks it: a valid filename, exactly one matching `.dist-info`, a RECORD
/// that lists every member (but itself and signatures) with a sha256 that matches, and nothing
/// listed that is absent.
pub fn read_wheel(path: &Path) -> Result<WheelContents, WheelError> {
    read_wheel_with(path, &|_| Ok(())).map(|(wheel, _)| wheel)
}

/// [`read_wheel`], applying `per_member` to each member as it is decompressed. The results are
/// in the order of [`WheelContents::members`].
pub(crate) fn read_wheel_with<T: Send>(
    path: &Path,
    per_member: PerMember<'_, T>,
) -> Result<(WheelContents, Vec<T>), WheelError> {
    let file_name =
        path.file_name()
            .and_then(|n| n.to_str())
            .ok_or_else(|| WheelError::Filename {
                name: path.display().to_string(),
                reason: "not a UTF-8 file name".into(),
            })?;
    let filename: WheelFilename = file_name.parse()?;
    let (Archive { bytes, members }, extra) = read_archive_with(path, per_member)?;
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
    let record_member = members
        .iter()
        .find(|m| m.name == record_path)
        .ok_or_else(|| WheelError::MissingRecord {
            path: path.to_owned(),
            member: record_path.clone(),
        })?;
    let record = Record::parse(&record_member.data).map_err(|e| WheelError::RecordSyntax {
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
            && size != member.data.len() as u64
        {
            return Err(WheelError::SizeMismatch {
                path: path.to_owned(),
                member: entry.path.clone(),
                expected: size,
                found: member.data.len() as u64,
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
            bytes,
            members,
        },
        extra,
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
}
