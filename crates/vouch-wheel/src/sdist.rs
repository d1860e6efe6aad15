//! Deterministic repack of a source distribution (`.tar.gz`). The output depends only on the
//! members' names, contents, kinds (file, directory, symlink) and executable bits, the epoch,
//! and this crate's version (which pins the deflate implementation).
//!
//! The tar is POSIX pax (what the sdist spec asks for): a ustar header per member, with a pax
//! `path`/`linkpath` record only where the ustar fields cannot hold the name. Every header has
//! the epoch as mtime, uid/gid 0, empty user and group names, and mode 0644, 0755 (directories,
//! executables) or 0777 (symlinks). Times the input's pax headers carried (mtime, atime, ctime)
//! and its global header are dropped. The gzip header has mtime 0, no file name, no extra
//! fields, and the "unknown" OS byte, so renaming the file or building on another OS changes
//! nothing.

use std::collections::BTreeMap;
use std::io::{Read as _, Write as _};
use std::path::{Path, PathBuf};

use serde::Serialize;
use vouch_core::Sha256Digest;
use vouch_core::portable_path;

use crate::{MemberChange, WheelDiff};

/// gzip level 9, what Python's `tarfile` (and so setuptools' sdists) use.
pub const SDIST_GZIP_LEVEL: u32 = 9;

/// An sdist is held in memory while it is sorted: the sum of its members' sizes may not pass
/// this. CuPy's is about 30 MB unpacked.
pub const MAX_SDIST_SIZE: u64 = 1 << 30;

#[derive(Debug, thiserror::Error)]
pub enum SdistError {
    #[error("cannot read {path:?}")]
    Read {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("cannot write {path:?}")]
    Write {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path:?} is not a gzip-compressed tar archive; an sdist is a `.tar.gz`")]
    NotGzipTar {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("{path:?}: an sdist's file name ends in `.tar.gz`")]
    Name { path: PathBuf },
    #[error("{path:?}: member {member:?} {reason}")]
    Member {
        path: PathBuf,
        member: String,
        reason: String,
    },
    #[error(
        "{path:?}: member {member:?} cannot be unpacked under that name on Windows or macOS: {rule}"
    )]
    NonPortableName {
        path: PathBuf,
        member: String,
        rule: portable_path::PortableNameError,
    },
    #[error("{path:?}: members {collision}")]
    NameCollision {
        path: PathBuf,
        collision: portable_path::Collision,
    },
    #[error(
        "{path:?}: expected every member under one top directory (`<name>-<version>/`), found {found}"
    )]
    TopDirectory { path: PathBuf, found: String },
    #[error("{path:?}: its members hold more than {limit} bytes")]
    TooLarge { path: PathBuf, limit: u64 },
}

/// What a member is, with what normalization keeps of it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum SdistKind {
    Directory,
    /// A regular file (a hard link in the input becomes a copy of its target).
    File {
        data: Vec<u8>,
    },
    /// A symlink whose target stays under the top directory.
    Symlink {
        target: String,
    },
}

/// One member as read: its name (`/`-separated, no `./`, no trailing `/`) and the raw header
/// fields a diff reports.
#[derive(Clone, Debug)]
pub struct SdistMember {
    pub name: String,
    pub kind: SdistKind,
    pub mode: u32,
    pub mtime: u64,
}

impl SdistMember {
    fn executable(&self) -> bool {
        self.mode & 0o111 != 0
    }

    /// The mode the normalized archive gives the member.
    fn normalized_mode(&self) -> u32 {
        match &self.kind {
            SdistKind::Directory => 0o755,
            SdistKind::Symlink { .. } => 0o777,
            SdistKind::File { .. } if self.executable() => 0o755,
            SdistKind::File { .. } => 0o644,
        }
    }
}

#[derive(Clone, Debug, Serialize)]
pub struct SdistReport {
    pub input: PathBuf,
    pub output: PathBuf,
    pub sha256: Sha256Digest,
    pub size: u64,
    pub members: usize,
    /// Whether the output bytes differ from the input bytes.
    pub changed: bool,
}

/// The member name with `.` components and empty ones dropped, or why it is refused.
fn clean_name(raw: &str) -> Result<String, &'static str> {
    if raw.starts_with('/') {
        return Err("is an absolute path; members must be relative");
    }
    let mut parts = Vec::new();
    for part in raw.split('/') {
        match part {
            "" | "." => {}
            ".." => return Err("contains `..`: it would land outside the archive's directory"),
            p => parts.push(p),
        }
    }
    Ok(parts.join("/"))
}

/// Resolves a symlink's target against the member's directory; `None` when it leaves the top
/// directory (or is absolute), where unpacking would reach outside the sdist.
fn link_stays_inside(member: &str, target: &str) -> bool {
    if target.starts_with('/') || target.is_empty() {
        return false;
    }
    let mut dir: Vec<&str> = member.split('/').collect();
    dir.pop();
    for part in target.split('/') {
        match part {
            "" | "." => {}
            ".." => {
                dir.pop();
                // Popping the top directory itself leaves the sdist.
                if dir.is_empty() {
                    return false;
                }
            }
            p => dir.push(p),
        }
    }
    !dir.is_empty()
}

/// Reads and checks every member of the sdist at `path`. Refuses what is not a gzip tar,
/// member names that escape, links that escape, devices and FIFOs, names another platform
/// cannot hold, and members outside one top directory.
pub fn read_sdist(path: &Path) -> Result<Vec<SdistMember>, SdistError> {
    let file = std::fs::File::open(path).map_err(|source| SdistError::Read {
        path: path.to_owned(),
        source,
    })?;
    let mut gz = flate2::read::GzDecoder::new(std::io::BufReader::new(file));
    // A gzip stream that does not start with its magic reads as an I/O error: say what it is.
    let mut raw = Vec::new();
    (&mut gz)
        .take(MAX_SDIST_SIZE * 2)
        .read_to_end(&mut raw)
        .map_err(|source| SdistError::NotGzipTar {
            path: path.to_owned(),
            source,
        })?;
    if raw.len() as u64 >= MAX_SDIST_SIZE * 2 {
        return Err(SdistError::TooLarge {
            path: path.to_owned(),
            limit: MAX_SDIST_SIZE,
        });
    }
    let not_tar = |source| SdistError::NotGzipTar {
        path: path.to_owned(),
        source,
    };
    let mut archive = tar::Archive::new(raw.as_slice());
    let mut members: Vec<SdistMember> = Vec::new();
    let mut total = 0u64;
    for entry in archive.entries().map_err(not_tar)? {
        let mut entry = entry.map_err(not_tar)?;
        let header = entry.header();
        let kind = header.entry_type();
        if matches!(
            kind,
            tar::EntryType::XGlobalHeader | tar::EntryType::XHeader
        ) {
            continue;
        }
        let shown = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let bad = |reason: &str| SdistError::Member {
            path: path.to_owned(),
            member: shown.clone(),
            reason: reason.to_owned(),
        };
        let name = std::str::from_utf8(&entry.path_bytes())
            .map_err(|_| bad("has a name that is not UTF-8"))
            .and_then(|n| clean_name(n).map_err(bad))?;
        if name.is_empty() {
            continue; // the archive's own `./`
        }
        let mode = header.mode().map_err(not_tar)?;
        let mtime = header.mtime().map_err(not_tar)?;
        let kind = match kind {
            tar::EntryType::Directory => SdistKind::Directory,
            tar::EntryType::Regular | tar::EntryType::Continuous => {
                total += entry.size();
                if total > MAX_SDIST_SIZE {
                    return Err(SdistError::TooLarge {
                        path: path.to_owned(),
                        limit: MAX_SDIST_SIZE,
                    });
                }
                let mut data = Vec::with_capacity(entry.size() as usize);
                entry.read_to_end(&mut data).map_err(not_tar)?;
                SdistKind::File { data }
            }
            tar::EntryType::Symlink => {
                let target = link_target(&entry)
                    .ok_or_else(|| bad("is a symlink without a UTF-8 target"))?;
                if !link_stays_inside(&name, &target) {
                    return Err(bad(&format!(
                        "is a symlink to {target:?}, outside the sdist's top directory"
                    )));
                }
                SdistKind::Symlink { target }
            }
            tar::EntryType::Link => {
                let target = link_target(&entry)
                    .and_then(|t| clean_name(&t).ok())
                    .ok_or_else(|| bad("is a hard link without a valid target"))?;
                let data = members
                    .iter()
                    .find_map(|m| match &m.kind {
                        SdistKind::File { data } if m.name == target => Some(data.clone()),
                        _ => None,
                    })
                    .ok_or_else(|| {
                        bad(&format!(
                            "is a hard link to {target:?}, which is not an earlier regular file of the archive"
                        ))
                    })?;
                total += data.len() as u64;
                SdistKind::File { data }
            }
            other => {
                return Err(bad(&format!(
                    "is a {other:?}; an sdist holds only files, directories and symlinks"
                )));
            }
        };
        members.push(SdistMember {
            name,
            kind,
            mode,
            mtime,
        });
    }
    check_names(path, &members)?;
    Ok(members)
}

fn link_target(entry: &tar::Entry<'_, &[u8]>) -> Option<String> {
    let bytes = entry.link_name_bytes()?;
    std::str::from_utf8(&bytes).ok().map(str::to_owned)
}

/// One top directory; names Windows and macOS can create; no two that fold into one.
fn check_names(path: &Path, members: &[SdistMember]) -> Result<(), SdistError> {
    let mut tops: Vec<&str> = members
        .iter()
        .map(|m| m.name.split('/').next().unwrap_or_default())
        .collect();
    tops.sort_unstable();
    tops.dedup();
    let only_top_is_dir = members
        .iter()
        .all(|m| m.name.contains('/') || m.kind == SdistKind::Directory);
    if tops.len() != 1 || !only_top_is_dir {
        return Err(SdistError::TopDirectory {
            path: path.to_owned(),
            found: if tops.is_empty() {
                "an empty archive".to_owned()
            } else {
                format!("{tops:?}")
            },
        });
    }
    for m in members {
        for part in m.name.split('/') {
            portable_path::check_component(part).map_err(|rule| SdistError::NonPortableName {
                path: path.to_owned(),
                member: m.name.clone(),
                rule,
            })?;
        }
    }
    portable_path::find_collision(
        members
            .iter()
            .map(|m| (m.name.as_str(), m.kind == SdistKind::Directory)),
    )
    .map_err(|collision| SdistError::NameCollision {
        path: path.to_owned(),
        collision,
    })
}

/// The normalized, uncompressed tar of `members` (sorted by name bytes here).
fn write_tar(members: &mut [SdistMember], epoch: u64) -> std::io::Result<Vec<u8>> {
    members.sort_by(|a, b| a.name.as_bytes().cmp(b.name.as_bytes()));
    let mut tar = tar::Builder::new(Vec::new());
    for m in members.iter() {
        let mut header = tar::Header::new_ustar();
        let mut pax: Vec<(&str, &[u8])> = Vec::new();
        // Names the ustar fields cannot hold (too long, or not ASCII) go in a pax record; the
        // ustar field then holds a fixed stand-in that older readers can still use.
        if !m.name.is_ascii() || header.set_path(&m.name).is_err() {
            pax.push(("path", m.name.as_bytes()));
            header.set_path(ascii_stand_in(&m.name))?;
        }
        let (kind, data): (tar::EntryType, &[u8]) = match &m.kind {
            SdistKind::Directory => (tar::EntryType::Directory, b""),
            SdistKind::File { data } => (tar::EntryType::Regular, data),
            SdistKind::Symlink { target } => {
                if !target.is_ascii() || header.set_link_name(target).is_err() {
                    pax.push(("linkpath", target.as_bytes()));
                    header.set_link_name(ascii_stand_in(target))?;
                }
                (tar::EntryType::Symlink, b"")
            }
        };
        header.set_entry_type(kind);
        header.set_size(data.len() as u64);
        header.set_mode(m.normalized_mode());
        header.set_mtime(epoch);
        header.set_uid(0);
        header.set_gid(0);
        header.set_username("")?;
        header.set_groupname("")?;
        header.set_cksum();
        tar.append_pax_extensions(pax)?;
        tar.append(&header, data)?;
    }
    tar.into_inner()
}

/// The last 99 bytes of the name with every non-ASCII byte as `_`: what the ustar field holds
/// when a pax record carries the real name.
fn ascii_stand_in(name: &str) -> String {
    let ascii: String = name
        .bytes()
        .map(|b| {
            if b.is_ascii() && b != 0 {
                b as char
            } else {
                '_'
            }
        })
        .collect();
    let start = ascii.len().saturating_sub(99);
    ascii[start..].trim_start_matches(['/', '.']).to_owned()
}

/// Repacks the sdist at `input` into `out_dir` under the same file name, normalized as the
/// module describes. The output appears whole or not at all; `out_dir` may be the input's own
/// directory.
pub fn normalize_sdist(
    input: &Path,
    out_dir: &Path,
    epoch: u64,
) -> Result<SdistReport, SdistError> {
    let file_name = input
        .file_name()
        .and_then(|n| n.to_str())
        .filter(|n| n.ends_with(".tar.gz"))
        .ok_or_else(|| SdistError::Name {
            path: input.to_owned(),
        })?
        .to_owned();
    let input_digest = Sha256Digest::of_file(input).map_err(|source| SdistError::Read {
        path: input.to_owned(),
        source,
    })?;
    let mut members = read_sdist(input)?;
    let tar = write_tar(&mut members, epoch).map_err(|source| SdistError::Write {
        path: input.to_owned(),
        source,
    })?;
    let dest = out_dir.join(&file_name);
    let write_err = |source| SdistError::Write {
        path: dest.clone(),
        source,
    };
    let out = vouch_fs::Output::create(&dest, vouch_fs::Mode::Public).map_err(write_err)?;
    // One write of the whole tar: the compressed bytes never depend on how the input was cut.
    let mut gz = flate2::GzBuilder::new()
        .mtime(0)
        .write(out, flate2::Compression::new(SDIST_GZIP_LEVEL));
    gz.write_all(&tar).map_err(write_err)?;
    let output = gz
        .finish()
        .and_then(vouch_fs::Output::commit)
        .map_err(write_err)?;
    let sha256 = Sha256Digest::of_file(&output).map_err(write_err)?;
    let size = std::fs::metadata(&output).map_err(write_err)?.len();
    tracing::debug!(input = %input.display(), output = %output.display(), %sha256, "normalized sdist");
    Ok(SdistReport {
        input: input.to_owned(),
        output,
        changed: sha256 != input_digest,
        sha256,
        size,
        members: members.len(),
    })
}

/// Member-level comparison of two sdists, in the shape of a wheel diff.
pub fn diff_sdists(a: &Path, b: &Path) -> Result<WheelDiff, SdistError> {
    let digest = |p: &Path| {
        Sha256Digest::of_file(p).map_err(|source| SdistError::Read {
            path: p.to_owned(),
            source,
        })
    };
    let sha256 = [digest(a)?, digest(b)?];
    let (list_a, list_b) = (read_sdist(a)?, read_sdist(b)?);
    let order = |l: &[SdistMember]| l.iter().map(|m| m.name.clone()).collect::<Vec<_>>();
    let (order_a, order_b) = (order(&list_a), order(&list_b));
    let by_name = |l: Vec<SdistMember>| {
        l.into_iter()
            .map(|m| (m.name.clone(), m))
            .collect::<BTreeMap<_, _>>()
    };
    let (ma, mb) = (by_name(list_a), by_name(list_b));
    let only = |x: &BTreeMap<String, SdistMember>, y: &BTreeMap<String, SdistMember>| {
        x.keys()
            .filter(|k| !y.contains_key(*k))
            .cloned()
            .collect::<Vec<_>>()
    };
    let (only_in_a, only_in_b) = (only(&ma, &mb), only(&mb, &ma));
    let mut changed = Vec::new();
    for (name, x) in &ma {
        let Some(y) = mb.get(name) else { continue };
        let content = x.kind != y.kind;
        let mode = (x.mode != y.mode).then(|| [x.mode, y.mode].map(|m| Some(format!("{m:04o}"))));
        let timestamp =
            (x.mtime != y.mtime).then(|| [x.mtime, y.mtime].map(|t| Some(t.to_string())));
        let file_digest = |m: &SdistMember| match &m.kind {
            SdistKind::File { data } => Sha256Digest::of(data).to_string(),
            SdistKind::Directory => "directory".to_owned(),
            SdistKind::Symlink { target } => format!("symlink to {target}"),
        };
        if content || mode.is_some() || timestamp.is_some() {
            changed.push(MemberChange {
                name: name.clone(),
                content,
                sha256: content.then(|| [file_digest(x), file_digest(y)]),
                mode,
                timestamp,
            });
        }
    }
    let order_differs = only_in_a.is_empty() && only_in_b.is_empty() && order_a != order_b;
    Ok(WheelDiff {
        identical: sha256[0] == sha256[1],
        sha256,
        only_in_a,
        only_in_b,
        changed,
        order_differs,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn names_that_escape_are_refused() {
        assert_eq!(clean_name("./a/./b/"), Ok("a/b".to_owned()));
        assert!(clean_name("/etc/passwd").is_err());
        assert!(clean_name("a/../../b").is_err());
    }

    #[test]
    fn links_resolve_against_their_directory() {
        assert!(link_stays_inside("p-1/a/l", "../b"));
        assert!(link_stays_inside("p-1/a/l", "x/./y"));
        assert!(!link_stays_inside("p-1/a/l", "../../etc"));
        assert!(!link_stays_inside("p-1/l", ".."));
        assert!(!link_stays_inside("p-1/l", "/etc/passwd"));
    }

    /// A `.tar.gz` of raw GNU headers (so names the tar crate's builder would refuse can be
    /// written): `(name, kind, link target, data)`.
    fn archive(dir: &Path, members: &[(&str, tar::EntryType, &str, &str)]) -> PathBuf {
        let path = dir.join("demo-1.0.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        let mut tar = tar::Builder::new(gz);
        for (name, kind, link, data) in members {
            let mut header = tar::Header::new_gnu();
            header.set_entry_type(*kind);
            header.set_mode(0o640);
            header.set_mtime(1_234_567_890);
            header.set_size(data.len() as u64);
            let data = data.as_bytes();
            header.as_old_mut().name[..name.len()].copy_from_slice(name.as_bytes());
            header.as_old_mut().linkname[..link.len()].copy_from_slice(link.as_bytes());
            header.set_cksum();
            tar.append(&header, data).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        path
    }

    fn refused(members: &[(&str, tar::EntryType, &str, &str)]) -> String {
        let tmp = tempfile::tempdir().unwrap();
        let path = archive(tmp.path(), members);
        let out = tmp.path().join("out");
        let err = normalize_sdist(&path, &out, 0).unwrap_err();
        assert!(
            !out.join("demo-1.0.tar.gz").exists()
                && std::fs::read_dir(&out).map_or(true, |d| d.count() == 0),
            "a refused sdist left output behind"
        );
        err.to_string()
    }

    const F: tar::EntryType = tar::EntryType::Regular;
    const D: tar::EntryType = tar::EntryType::Directory;
    const S: tar::EntryType = tar::EntryType::Symlink;
    const H: tar::EntryType = tar::EntryType::Link;

    #[test]
    fn bad_sdists_are_refused_with_the_member_at_fault() {
        for (members, want) in [
            (
                &[("demo-1.0/../../x", F, "", "x")][..],
                "member \"demo-1.0/../../x\" contains `..`",
            ),
            (
                &[("/etc/x", F, "", "x")][..],
                "member \"/etc/x\" is an absolute path",
            ),
            (
                &[("demo-1.0/l", S, "../../etc/passwd", "")][..],
                "member \"demo-1.0/l\" is a symlink to \"../../etc/passwd\", outside the sdist's top directory",
            ),
            (
                &[("demo-1.0/l", S, "/etc/passwd", "")][..],
                "outside the sdist's top directory",
            ),
            (
                &[("demo-1.0/h", H, "demo-1.0/missing", "")][..],
                "is a hard link to \"demo-1.0/missing\", which is not an earlier regular file",
            ),
            (
                &[("demo-1.0/fifo", tar::EntryType::Fifo, "", "")][..],
                "is a Fifo; an sdist holds only files, directories and symlinks",
            ),
            (
                &[("demo-1.0/a", F, "", "a"), ("other-2.0/b", F, "", "b")][..],
                "expected every member under one top directory (`<name>-<version>/`), found [\"demo-1.0\", \"other-2.0\"]",
            ),
            (&[("setup.py", F, "", "x")][..], "one top directory"),
            (&[][..], "found an empty archive"),
            (
                &[("demo-1.0/A.py", F, "", "a"), ("demo-1.0/a.py", F, "", "b")][..],
                "collide: names that differ only in case",
            ),
            (
                &[("demo-1.0/aux.py", F, "", "a")][..],
                "Windows device name AUX",
            ),
        ] {
            let message = refused(members);
            assert!(message.contains(want), "{members:?}: {message}");
        }
    }

    #[test]
    fn what_is_not_a_gzip_tar_is_refused() {
        let tmp = tempfile::tempdir().unwrap();
        let plain = tmp.path().join("plain-1.0.tar.gz");
        std::fs::write(&plain, b"not gzip at all").unwrap();
        let err = normalize_sdist(&plain, tmp.path(), 0).unwrap_err();
        assert!(matches!(err, SdistError::NotGzipTar { .. }), "{err:?}");
        assert!(
            err.to_string()
                .ends_with("is not a gzip-compressed tar archive; an sdist is a `.tar.gz`")
        );
        // gzip, but what it holds is not a tar.
        let gz_text = tmp.path().join("text-1.0.tar.gz");
        let mut enc = flate2::write::GzEncoder::new(
            std::fs::File::create(&gz_text).unwrap(),
            flate2::Compression::default(),
        );
        enc.write_all(&[b'x'; 700]).unwrap();
        enc.finish().unwrap();
        let err = normalize_sdist(&gz_text, tmp.path(), 0).unwrap_err();
        assert!(matches!(err, SdistError::NotGzipTar { .. }), "{err:?}");
        let zip = tmp.path().join("demo-1.0.zip");
        std::fs::write(&zip, b"PK").unwrap();
        let err = normalize_sdist(&zip, tmp.path(), 0).unwrap_err();
        assert!(matches!(err, SdistError::Name { .. }), "{err:?}");
        // Nothing but the inputs is left in the directory.
        let mut left: Vec<_> = std::fs::read_dir(tmp.path())
            .unwrap()
            .map(|e| e.unwrap().file_name().into_string().unwrap())
            .collect();
        left.sort();
        assert_eq!(
            left,
            ["demo-1.0.zip", "plain-1.0.tar.gz", "text-1.0.tar.gz"]
        );
    }

    #[test]
    fn links_are_kept_or_copied_and_the_output_is_a_fixed_point() {
        let tmp = tempfile::tempdir().unwrap();
        let long = format!("demo-1.0/{}/caf\u{e9}.py", "d".repeat(120));
        let path = archive(
            tmp.path(),
            &[
                ("demo-1.0/z.py", F, "", "z"),
                ("demo-1.0/", D, "", ""),
                ("demo-1.0/h.py", H, "demo-1.0/z.py", ""),
                ("demo-1.0/l.py", S, "z.py", ""),
            ],
        );
        // The long, non-ASCII name goes through a pax `path` record.
        let mut members = read_sdist(&path).unwrap();
        members.push(SdistMember {
            name: long.clone(),
            kind: SdistKind::File {
                data: b"x".to_vec(),
            },
            mode: 0o700,
            mtime: 5,
        });
        let tar = write_tar(&mut members, 7).unwrap();
        let mut read = tar::Archive::new(tar.as_slice());
        let names: Vec<(String, tar::EntryType, u32)> = read
            .entries()
            .unwrap()
            .map(|e| {
                let e = e.unwrap();
                let h = e.header();
                (
                    String::from_utf8(e.path_bytes().into_owned()).unwrap(),
                    h.entry_type(),
                    h.mode().unwrap(),
                )
            })
            .collect();
        assert_eq!(
            names,
            [
                ("demo-1.0".to_owned(), D, 0o755),
                (long, F, 0o755),
                ("demo-1.0/h.py".to_owned(), F, 0o644),
                ("demo-1.0/l.py".to_owned(), S, 0o777),
                ("demo-1.0/z.py".to_owned(), F, 0o644),
            ]
        );
        let once = normalize_sdist(&path, &tmp.path().join("once"), 7).unwrap();
        assert!(once.changed);
        let twice = normalize_sdist(&once.output, &tmp.path().join("twice"), 7).unwrap();
        assert!(
            !twice.changed,
            "normalizing a normalized sdist changes nothing"
        );
        assert_eq!(once.sha256, twice.sha256);
    }

    #[test]
    fn stand_in_is_ascii_and_fits() {
        let long = format!("p-1/{}/ü.py", "d".repeat(300));
        let s = ascii_stand_in(&long);
        assert!(s.is_ascii() && s.len() <= 99, "{s}");
        assert!(s.ends_with("/__.py"), "{s}");
    }
}
