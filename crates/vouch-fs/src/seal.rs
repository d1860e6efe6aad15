//! Sealed trees: a directory that later builds will run (a build venv, a CUDA toolkit) is
//! recorded file by file when it is made, made read-only, and checked against that record
//! before every reuse, so nothing a build changed in it reaches the next build.
//!
//! The record keeps each file's sha256 and, as a fast path, the identity `lstat` gives it
//! (inode, mtime, ctime, size). A write to a file changes its ctime, which no unprivileged
//! process can set back, so an unchanged identity means unchanged bytes; anything else is
//! hashed. Extra files (a dropped `.pth`), missing ones, changed links and changed execute
//! bits fail the check.
//!
//! The record lives beside the tree. On its own it is only as safe as the directory holding
//! both: code that runs as the same user and sets out to rewrite vouch's cache can rewrite the
//! record too. A [`SealKey`] closes that: records written with it carry an HMAC, and a reader
//! holding the key accepts no record without a valid one. A pull request's build never holds
//! the key of the trusted builds (GitHub sends a job only the secrets it references), so it
//! cannot forge a record a trusted build would accept.

use std::collections::BTreeMap;
use std::io::{Read, Write};
use std::path::{Path, PathBuf};

use serde::{Deserialize, Serialize};
use sha2::{Digest as _, Sha256};

#[derive(Debug, thiserror::Error)]
pub enum SealError {
    #[error("{path:?}")]
    Io {
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error("seal record {path:?} is not readable JSON")]
    Record {
        path: PathBuf,
        #[source]
        source: serde_json::Error,
    },
    #[error(
        "seal record {path:?} is not authenticated by this build's seal key (written without it, with another key, or altered)"
    )]
    Unauthenticated { path: PathBuf },
    #[error("the seal key must be at least 32 bytes; got {0}")]
    ShortKey(usize),
    #[error("{tree:?}: {path:?} {what} since the tree was sealed")]
    Changed {
        tree: PathBuf,
        path: String,
        what: &'static str,
    },
}

/// The identity `lstat` gives a file; any write changes it (ctime).
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Identity {
    ino: u64,
    /// (seconds, nanoseconds)
    mtime: (i64, i64),
    ctime: (i64, i64),
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
enum Entry {
    Dir,
    File {
        size: u64,
        sha256: String,
        executable: bool,
        #[serde(default, skip_serializing_if = "Option::is_none")]
        identity: Option<Identity>,
    },
    Link {
        target: PathBuf,
    },
}

/// The record of a sealed tree.
#[derive(Clone, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Seal {
    entries: BTreeMap<String, Entry>,
    /// HMAC-SHA256 (hex) of the entries' JSON, when written with a [`SealKey`].
    #[serde(default, skip_serializing_if = "Option::is_none")]
    mac: Option<String>,
}

/// The secret that authenticates seal records (HMAC-SHA256). Never logged.
pub struct SealKey(aws_lc_rs::hmac::Key);

impl std::fmt::Debug for SealKey {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("SealKey(***)")
    }
}

impl SealKey {
    pub fn new(secret: &[u8]) -> Result<SealKey, SealError> {
        if secret.len() < 32 {
            return Err(SealError::ShortKey(secret.len()));
        }
        Ok(SealKey(aws_lc_rs::hmac::Key::new(
            aws_lc_rs::hmac::HMAC_SHA256,
            secret,
        )))
    }

    /// HMAC-SHA256 over `parts`, each length-prefixed so that no two lists of parts share a
    /// message (`["ab", "c"]` is not `["a", "bc"]`): derives keys for other purposes (the
    /// cache's entry signing key) from the one secret the trusted environment holds.
    pub fn tag(&self, parts: &[&[u8]]) -> [u8; 32] {
        let mut out = [0u8; 32];
        out.copy_from_slice(self.mac(parts).as_ref());
        out
    }

    fn mac(&self, parts: &[&[u8]]) -> aws_lc_rs::hmac::Tag {
        let mut ctx = aws_lc_rs::hmac::Context::with_key(&self.0);
        for p in parts {
            ctx.update(&(p.len() as u64).to_be_bytes());
            ctx.update(p);
        }
        ctx.sign()
    }
}

fn entries_json(entries: &BTreeMap<String, Entry>) -> Vec<u8> {
    serde_json::to_vec(entries).expect("entries serialize")
}

/// How a check went.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub struct Checked {
    pub files: usize,
    /// Files whose identity matched the record (not re-read).
    pub by_identity: usize,
    /// Files read and hashed.
    pub hashed: usize,
    pub bytes_hashed: u64,
}

/// Rewrites a copied file's bytes (relative name, verified bytes).
pub type Rewrite<'a> = &'a dyn Fn(&str, Vec<u8>) -> Vec<u8>;

fn io(path: &Path) -> impl FnOnce(std::io::Error) -> SealError + '_ {
    move |source| SealError::Io {
        path: path.to_owned(),
        source,
    }
}

#[cfg(unix)]
fn identity(meta: &std::fs::Metadata) -> Option<Identity> {
    use std::os::unix::fs::MetadataExt;
    Some(Identity {
        ino: meta.ino(),
        mtime: (meta.mtime(), meta.mtime_nsec()),
        ctime: (meta.ctime(), meta.ctime_nsec()),
    })
}

#[cfg(not(unix))]
fn identity(_meta: &std::fs::Metadata) -> Option<Identity> {
    // No ctime to trust: every check hashes.
    None
}

#[cfg(unix)]
fn is_executable(meta: &std::fs::Metadata) -> bool {
    use std::os::unix::fs::PermissionsExt;
    meta.permissions().mode() & 0o111 != 0
}

#[cfg(not(unix))]
fn is_executable(_meta: &std::fs::Metadata) -> bool {
    false
}

fn rel_name(root: &Path, path: &Path) -> String {
    path.strip_prefix(root)
        .expect("walked under root")
        .components()
        .map(|c| c.as_os_str().to_string_lossy())
        .collect::<Vec<_>>()
        .join("/")
}

/// Streams `path` through sha256, optionally copying the bytes to `sink`.
fn hash_file(path: &Path, mut sink: Option<&mut dyn Write>) -> Result<(String, u64), SealError> {
    let mut f = std::fs::File::open(path).map_err(io(path))?;
    let mut h = Sha256::new();
    let mut buf = vec![0u8; 1 << 20];
    let mut total = 0u64;
    loop {
        let n = f.read(&mut buf).map_err(io(path))?;
        if n == 0 {
            break;
        }
        h.update(&buf[..n]);
        if let Some(s) = sink.as_mut() {
            s.write_all(&buf[..n]).map_err(io(path))?;
        }
        total += n as u64;
    }
    Ok((hex::encode(h.finalize()), total))
}

/// Every entry under `root` (not `root` itself), links not followed, sorted.
fn walk(root: &Path) -> Result<Vec<(String, PathBuf, std::fs::Metadata)>, SealError> {
    let mut out = Vec::new();
    for e in walkdir::WalkDir::new(root)
        .min_depth(1)
        .follow_links(false)
        .sort_by_file_name()
    {
        let e = e.map_err(|e| SealError::Io {
            path: e.path().map_or_else(|| root.to_owned(), Path::to_owned),
            source: e.into(),
        })?;
        let meta = std::fs::symlink_metadata(e.path()).map_err(io(e.path()))?;
        out.push((rel_name(root, e.path()), e.path().to_owned(), meta));
    }
    Ok(out)
}

#[cfg(unix)]
fn set_writable(path: &Path, meta: &std::fs::Metadata, writable: bool) -> Result<(), SealError> {
    use std::os::unix::fs::PermissionsExt;
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mode = meta.permissions().mode();
    let new = if writable {
        mode | 0o200
    } else {
        mode & !0o222
    };
    if new != mode {
        std::fs::set_permissions(path, std::fs::Permissions::from_mode(new)).map_err(io(path))?;
    }
    Ok(())
}

#[cfg(not(unix))]
fn set_writable(path: &Path, meta: &std::fs::Metadata, writable: bool) -> Result<(), SealError> {
    if meta.file_type().is_symlink() {
        return Ok(());
    }
    let mut p = meta.permissions();
    p.set_readonly(!writable);
    std::fs::set_permissions(path, p).map_err(io(path))
}

impl Seal {
    /// Makes every file and directory under `root` read-only, then records it.
    pub fn make(root: &Path) -> Result<Seal, SealError> {
        // Modes first: a chmod changes ctime, and the record must hold the final identity.
        let entries = walk(root)?;
        for (_, path, meta) in entries.iter().rev() {
            set_writable(path, meta, false)?;
        }
        let mut seal = Seal::default();
        for (rel, path, _) in walk(root)? {
            let meta = std::fs::symlink_metadata(&path).map_err(io(&path))?;
            let ft = meta.file_type();
            let entry = if ft.is_symlink() {
                Entry::Link {
                    target: std::fs::read_link(&path).map_err(io(&path))?,
                }
            } else if ft.is_dir() {
                Entry::Dir
            } else if ft.is_file() {
                let (sha256, size) = hash_file(&path, None)?;
                Entry::File {
                    size,
                    sha256,
                    executable: is_executable(&meta),
                    identity: identity(&meta),
                }
            } else {
                return Err(SealError::Changed {
                    tree: root.to_owned(),
                    path: rel,
                    what: "is not a file, directory or link",
                });
            };
            seal.entries.insert(rel, entry);
        }
        Ok(seal)
    }

    pub fn files(&self) -> usize {
        self.entries
            .values()
            .filter(|e| matches!(e, Entry::File { .. }))
            .count()
    }

    /// Checks `root` against the record; `full` hashes every file even when its identity
    /// matches.
    pub fn check(&self, root: &Path, full: bool) -> Result<Checked, SealError> {
        self.walk_checked(root, full, None)
    }

    /// Copies the sealed tree at `root` to `dest` (which must not exist), hashing every file
    /// as it is copied: the copy holds exactly the recorded bytes, or the call fails.
    /// `rewrite` may change a copied file's bytes (e.g. a script's `#!` line); it sees the
    /// relative name and the verified bytes.
    pub fn copy_to(
        &self,
        root: &Path,
        dest: &Path,
        rewrite: Rewrite<'_>,
    ) -> Result<Checked, SealError> {
        std::fs::create_dir(dest).map_err(io(dest))?;
        self.walk_checked(root, true, Some((dest, rewrite)))
    }

    fn walk_checked(
        &self,
        root: &Path,
        full: bool,
        copy: Option<(&Path, Rewrite<'_>)>,
    ) -> Result<Checked, SealError> {
        let changed = |path: &str, what| SealError::Changed {
            tree: root.to_owned(),
            path: path.to_owned(),
            what,
        };
        let mut checked = Checked::default();
        let mut seen = 0usize;
        for (rel, path, meta) in walk(root)? {
            let Some(entry) = self.entries.get(&rel) else {
                return Err(changed(&rel, "was added"));
            };
            seen += 1;
            let ft = meta.file_type();
            let target = copy.map(|(d, _)| d.join(&rel));
            match entry {
                Entry::Dir => {
                    if !ft.is_dir() {
                        return Err(changed(&rel, "is no longer a directory"));
                    }
                    if let Some(t) = &target {
                        std::fs::create_dir(t).map_err(io(t))?;
                    }
                }
                Entry::Link { target: recorded } => {
                    let now = if ft.is_symlink() {
                        std::fs::read_link(&path).map_err(io(&path))?
                    } else {
                        return Err(changed(&rel, "is no longer a link"));
                    };
                    if &now != recorded {
                        return Err(changed(&rel, "points elsewhere"));
                    }
                    if let Some(t) = &target {
                        make_link(recorded, t)?;
                    }
                }
                Entry::File {
                    size,
                    sha256,
                    executable,
                    identity: recorded,
                } => {
                    if !ft.is_file() {
                        return Err(changed(&rel, "is no longer a regular file"));
                    }
                    checked.files += 1;
                    if meta.len() != *size {
                        return Err(changed(&rel, "changed size"));
                    }
                    if is_executable(&meta) != *executable {
                        return Err(changed(&rel, "changed its execute bit"));
                    }
                    let same_identity = recorded.is_some() && identity(&meta) == *recorded;
                    if let Some((_, rewrite)) = copy {
                        let mut bytes = Vec::with_capacity(*size as usize);
                        let (digest, n) = hash_file(&path, Some(&mut bytes))?;
                        checked.hashed += 1;
                        checked.bytes_hashed += n;
                        if &digest != sha256 {
                            return Err(changed(&rel, "changed content"));
                        }
                        let t = target.as_ref().expect("copying");
                        write_copy(t, &rewrite(&rel, bytes), *executable, meta.modified().ok())?;
                    } else if full || !same_identity {
                        let (digest, n) = hash_file(&path, None)?;
                        checked.hashed += 1;
                        checked.bytes_hashed += n;
                        if &digest != sha256 {
                            return Err(changed(&rel, "changed content"));
                        }
                    } else {
                        checked.by_identity += 1;
                    }
                }
            }
        }
        if seen != self.entries.len() {
            let present: std::collections::BTreeSet<String> =
                walk(root)?.into_iter().map(|(r, _, _)| r).collect();
            let gone = self
                .entries
                .keys()
                .find(|k| !present.contains(*k))
                .cloned()
                .unwrap_or_default();
            return Err(changed(&gone, "was removed"));
        }
        Ok(checked)
    }

    /// Reads a record; with a key, only one whose HMAC that key made.
    pub fn read(path: &Path, key: Option<&SealKey>) -> Result<Seal, SealError> {
        let bytes = std::fs::read(path).map_err(io(path))?;
        let seal: Seal = serde_json::from_slice(&bytes).map_err(|source| SealError::Record {
            path: path.to_owned(),
            source,
        })?;
        if let Some(key) = key {
            let authentic = seal
                .mac
                .as_deref()
                .and_then(|m| hex::decode(m).ok())
                .is_some_and(|tag| {
                    aws_lc_rs::hmac::verify(&key.0, &entries_json(&seal.entries), &tag).is_ok()
                });
            if !authentic {
                return Err(SealError::Unauthenticated {
                    path: path.to_owned(),
                });
            }
        }
        Ok(seal)
    }

    /// Writes the record; with a key, with its HMAC.
    pub fn write(&self, path: &Path, key: Option<&SealKey>) -> Result<(), SealError> {
        let mut record = self.clone();
        record.mac = key.map(|k| {
            hex::encode(aws_lc_rs::hmac::sign(&k.0, &entries_json(&self.entries)).as_ref())
        });
        let json = serde_json::to_vec(&record).expect("a seal serializes");
        crate::write_atomically(path, &json, crate::Mode::Public).map_err(io(path))
    }
}

#[cfg(unix)]
fn make_link(target: &Path, at: &Path) -> Result<(), SealError> {
    std::os::unix::fs::symlink(target, at).map_err(io(at))
}

#[cfg(not(unix))]
fn make_link(target: &Path, at: &Path) -> Result<(), SealError> {
    std::os::windows::fs::symlink_file(target, at).map_err(io(at))
}

/// Writes one copied file; its mtime is kept so that bytecode caches next to it stay valid.
fn write_copy(
    path: &Path,
    bytes: &[u8],
    executable: bool,
    mtime: Option<std::time::SystemTime>,
) -> Result<(), SealError> {
    let mut opts = std::fs::OpenOptions::new();
    opts.write(true).create_new(true);
    #[cfg(unix)]
    std::os::unix::fs::OpenOptionsExt::mode(&mut opts, if executable { 0o755 } else { 0o644 });
    #[cfg(not(unix))]
    let _ = executable;
    let mut f = opts.open(path).map_err(io(path))?;
    f.write_all(bytes).map_err(io(path))?;
    if let Some(t) = mtime {
        f.set_modified(t).map_err(io(path))?;
    }
    Ok(())
}

/// Removes a tree that may have been sealed (read-only directories cannot be emptied).
pub fn remove_tree(root: &Path) -> Result<(), SealError> {
    if std::fs::symlink_metadata(root).is_err() {
        return Ok(());
    }
    if let Ok(meta) = std::fs::symlink_metadata(root) {
        set_writable(root, &meta, true)?;
    }
    for (_, path, meta) in walk(root)? {
        if meta.is_dir() {
            set_writable(&path, &meta, true)?;
        }
    }
    std::fs::remove_dir_all(root).map_err(io(root))
}

#[cfg(test)]
mod tests {
    use super::*;

    /// What an attacker running as the same user does first.
    fn writable(path: &Path) {
        let mut p = std::fs::metadata(path).unwrap().permissions();
        #[allow(clippy::permissions_set_readonly_false)]
        p.set_readonly(false);
        std::fs::set_permissions(path, p).unwrap();
    }

    fn tree() -> tempfile::TempDir {
        let d = tempfile::tempdir().unwrap();
        std::fs::create_dir_all(d.path().join("t/bin")).unwrap();
        std::fs::write(d.path().join("t/bin/nvcc"), b"#!/bin/sh\necho real\n").unwrap();
        std::fs::write(d.path().join("t/lib.txt"), b"library").unwrap();
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            std::fs::set_permissions(
                d.path().join("t/bin/nvcc"),
                std::fs::Permissions::from_mode(0o755),
            )
            .unwrap();
            std::os::unix::fs::symlink("lib.txt", d.path().join("t/link")).unwrap();
        }
        d
    }

    #[test]
    fn a_same_size_rewrite_an_added_file_and_a_retargeted_link_are_caught() {
        let d = tree();
        let root = d.path().join("t");
        let seal = Seal::make(&root).unwrap();
        let record = d.path().join("t.seal.json");
        seal.write(&record, None).unwrap();
        let seal = Seal::read(&record, None).unwrap();
        let ok = seal.check(&root, false).unwrap();
        assert_eq!((ok.files, ok.by_identity, ok.hashed), (2, 2, 0));
        assert_eq!(seal.check(&root, true).unwrap().hashed, 2);

        // Same size, same mtime put back: only the content (and ctime) differ.
        let nvcc = root.join("bin/nvcc");
        let mtime = std::fs::metadata(&nvcc).unwrap().modified().unwrap();
        writable(&nvcc);
        std::fs::write(&nvcc, b"#!/bin/sh\necho evil\n").unwrap();
        std::fs::File::options()
            .write(true)
            .open(&nvcc)
            .unwrap()
            .set_modified(mtime)
            .unwrap();
        let err = seal.check(&root, false).unwrap_err().to_string();
        assert!(err.contains("\"bin/nvcc\" changed"), "{err}");
        remove_tree(&root).unwrap();

        let d = tree();
        let root = d.path().join("t");
        let seal = Seal::make(&root).unwrap();
        remove_tree(&root.join("bin")).ok();
        let err = seal.check(&root, false).unwrap_err().to_string();
        assert!(err.contains("was removed"), "{err}");

        let d = tree();
        let root = d.path().join("t");
        let seal = Seal::make(&root).unwrap();
        writable(&root);
        std::fs::write(root.join("evil.pth"), b"import os").unwrap();
        let err = seal.check(&root, false).unwrap_err().to_string();
        assert!(err.contains("\"evil.pth\" was added"), "{err}");

        #[cfg(unix)]
        {
            let d = tree();
            let root = d.path().join("t");
            let seal = Seal::make(&root).unwrap();
            writable(&root);
            std::fs::remove_file(root.join("link")).unwrap();
            std::os::unix::fs::symlink("bin/nvcc", root.join("link")).unwrap();
            let err = seal.check(&root, false).unwrap_err().to_string();
            assert!(err.contains("points elsewhere"), "{err}");
        }
    }

    #[test]
    fn a_keyed_record_cannot_be_forged_without_the_key() {
        let d = tree();
        let root = d.path().join("t");
        let key = SealKey::new(&[7u8; 32]).unwrap();
        let record = d.path().join("t.seal.json");
        let seal = Seal::make(&root).unwrap();
        seal.write(&record, Some(&key)).unwrap();
        assert_eq!(
            Seal::read(&record, Some(&key)).unwrap().entries,
            seal.entries
        );

        // The attacker adds a file and re-records the tree, without the key or with another.
        writable(&root);
        std::fs::write(root.join("evil.pth"), b"import os").unwrap();
        let forged = Seal::make(&root).unwrap();
        for attacker in [None, Some(SealKey::new(&[9u8; 32]).unwrap())] {
            forged.write(&record, attacker.as_ref()).unwrap();
            let err = Seal::read(&record, Some(&key)).unwrap_err();
            assert!(matches!(err, SealError::Unauthenticated { .. }), "{err}");
        }
        // Editing a keyed record's entries breaks its MAC too.
        seal.write(&record, Some(&key)).unwrap();
        let text = std::fs::read_to_string(&record).unwrap();
        std::fs::write(&record, text.replacen("\"lib.txt\"", "\"lib.txz\"", 1)).unwrap();
        assert!(Seal::read(&record, Some(&key)).is_err());
        assert!(matches!(
            SealKey::new(b"short"),
            Err(SealError::ShortKey(5))
        ));
    }

    #[test]
    fn copies_hold_the_recorded_bytes() {
        let d = tree();
        let root = d.path().join("t");
        let seal = Seal::make(&root).unwrap();
        let dest = d.path().join("copy");
        let c = seal
            .copy_to(&root, &dest, &|rel, b| {
                if rel == "lib.txt" {
                    b"rewritten".to_vec()
                } else {
                    b
                }
            })
            .unwrap();
        assert_eq!(c.hashed, 2);
        assert_eq!(
            std::fs::read(dest.join("bin/nvcc")).unwrap(),
            b"#!/bin/sh\necho real\n"
        );
        assert_eq!(std::fs::read(dest.join("lib.txt")).unwrap(), b"rewritten");
        // The copy is the build's own: writable.
        std::fs::write(dest.join("lib.txt"), b"mine").unwrap();
        remove_tree(&root).unwrap();
        assert!(!root.exists());
    }
}
