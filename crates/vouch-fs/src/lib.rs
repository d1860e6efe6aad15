//! The one way vouch writes an output file.
//!
//! Every file vouch hands to a user (a wheel, a bundle, a key, a record, a URL file) appears
//! whole or not at all, through a temp file that is created exclusively (`O_EXCL`, random name)
//! in the destination's own directory and then renamed over the destination. A predictable
//! `.name.partial` path would let another local user plant a symlink there and have vouch
//! write through it; an exclusive create refuses to follow anything already at the path.
//!
//! [`seal`] is the other rule: a tree a later build will run is checked before it is reused.

pub mod seal;

use std::io::{self, Write};
use std::path::{Path, PathBuf};

/// Who may read the file that appears.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Mode {
    /// 0644: a release file (wheel, bundle, record, public key) anyone may read.
    Public,
    /// 0600: a secret (a private key) only its owner may read.
    Private,
}

impl Mode {
    #[cfg(unix)]
    fn bits(self) -> u32 {
        match self {
            Mode::Public => 0o644,
            Mode::Private => 0o600,
        }
    }
}

/// The directory a path's file lives in (`.` for a bare file name).
pub fn parent_dir(path: &Path) -> PathBuf {
    match path.parent() {
        Some(p) if !p.as_os_str().is_empty() => p.to_owned(),
        _ => PathBuf::from("."),
    }
}

/// An output file being written; nothing is at `dest` until [`Output::commit`].
pub struct Output {
    tmp: tempfile::NamedTempFile,
    dest: PathBuf,
}

impl Output {
    /// Starts writing `dest`, creating its directory if needed.
    pub fn create(dest: &Path, mode: Mode) -> io::Result<Output> {
        let dir = parent_dir(dest);
        std::fs::create_dir_all(&dir)?;
        let mut builder = tempfile::Builder::new();
        builder.prefix(".vouch-").suffix(".tmp");
        #[cfg(unix)]
        builder.permissions(std::os::unix::fs::PermissionsExt::from_mode(mode.bits()));
        #[cfg(not(unix))]
        let _ = mode;
        Ok(Output {
            tmp: builder.tempfile_in(&dir)?,
            dest: dest.to_owned(),
        })
    }

    /// Flushes to disk and renames into place. A failure leaves `dest` as it was.
    pub fn commit(mut self) -> io::Result<PathBuf> {
        self.tmp.as_file_mut().sync_all()?;
        self.tmp.persist(&self.dest).map_err(|e| e.error)?;
        Ok(self.dest)
    }
}

impl Write for Output {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        self.tmp.write(buf)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.tmp.flush()
    }
}

/// Seeking lets a writer patch what it wrote earlier (a zip's local headers); reading lets the
/// caller hash the finished bytes before they appear at `dest`.
impl io::Seek for Output {
    fn seek(&mut self, pos: io::SeekFrom) -> io::Result<u64> {
        self.tmp.seek(pos)
    }
}

impl io::Read for Output {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        self.tmp.read(buf)
    }
}

/// An exclusive lock on `path`, held until the returned file is dropped: the host seam's
/// ([`vouch_core::host`]), so locking is one thing on POSIX and Windows alike.
pub use vouch_core::host::lock_exclusive as lock_file;

/// Makes `dir` (mode 0700) or, when it exists, checks that it is a real directory (not a
/// link) that this user owns and nobody else may write. For fixed, well-known paths such as
/// the canonical build directory under `/tmp`: another local user who made it first could
/// otherwise swap what a build reads or writes.
pub fn owned_private_dir(dir: &Path) -> io::Result<()> {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{DirBuilderExt as _, MetadataExt as _};
        match std::fs::DirBuilder::new().mode(0o700).create(dir) {
            Ok(()) => {}
            Err(e) if e.kind() == io::ErrorKind::AlreadyExists => {}
            Err(e) => return Err(e),
        }
        let meta = std::fs::symlink_metadata(dir)?;
        let refuse = |why: String| {
            Err(io::Error::new(
                io::ErrorKind::PermissionDenied,
                format!("{}: {why}", dir.display()),
            ))
        };
        if !meta.is_dir() {
            return refuse("exists and is not a directory (a link is refused too)".into());
        }
        // A file this process just made is owned by its effective uid (no unsafe libc call).
        let me = tempfile::tempfile()?.metadata()?.uid();
        if meta.uid() != me {
            return refuse(format!(
                "is owned by uid {}, not by this user (uid {me}); remove it or choose another directory",
                meta.uid()
            ));
        }
        if meta.mode() & 0o022 != 0 {
            return refuse(format!(
                "is writable by others (mode {:o}); expected 0700",
                meta.mode() & 0o777
            ));
        }
        // Ours and not writable by others, but readable: close it (the sources built in it
        // need not be world-readable).
        if meta.mode() & 0o077 != 0 {
            use std::os::unix::fs::PermissionsExt as _;
            std::fs::set_permissions(dir, std::fs::Permissions::from_mode(0o700))?;
        }
        Ok(())
    }
    // Windows: no owner or ACL check yet (a local user who pre-creates the directory could
    // tamper with builds in it); give such machines a private `--work-dir`.
    #[cfg(not(unix))]
    {
        std::fs::create_dir_all(dir)
    }
}

/// Writes `data` to `dest` atomically with the given mode.
pub fn write_atomically(dest: &Path, data: &[u8], mode: Mode) -> io::Result<()> {
    let mut out = Output::create(dest, mode)?;
    out.write_all(data)?;
    out.commit().map(drop)
}

/// Copies `from` to `dest` atomically (never a partial `dest`).
pub fn copy_atomically(from: &Path, dest: &Path, mode: Mode) -> io::Result<()> {
    let mut src = std::fs::File::open(from)?;
    let mut out = Output::create(dest, mode)?;
    io::copy(&mut src, &mut out)?;
    out.commit().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[cfg(unix)]
    #[test]
    fn issue16_owned_private_dir_makes_0700_closes_0755_and_refuses_links_and_0777() {
        use std::os::unix::fs::PermissionsExt as _;
        let d = tempfile::tempdir().unwrap();
        let mode = |p: &Path| std::fs::metadata(p).unwrap().permissions().mode() & 0o777;
        let fresh = d.path().join("fresh");
        owned_private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o755)).unwrap();
        owned_private_dir(&fresh).unwrap();
        assert_eq!(mode(&fresh), 0o700);
        std::fs::set_permissions(&fresh, std::fs::Permissions::from_mode(0o777)).unwrap();
        let err = owned_private_dir(&fresh).unwrap_err().to_string();
        assert!(err.contains("writable by others"), "{err}");
        let link = d.path().join("link");
        std::os::unix::fs::symlink(&fresh, &link).unwrap();
        let err = owned_private_dir(&link).unwrap_err().to_string();
        assert!(err.contains("a link is refused"), "{err}");
    }

    /// Issue 31: the canonical work directory is refused when another uid owns it, even at
    /// mode 0700 (that user could swap what a build reads or writes). As root the fixture is
    /// handed to `nobody`; anyone else cannot chown, so a directory root owns stands in.
    #[cfg(unix)]
    #[test]
    fn issue31_owned_private_dir_refuses_a_directory_another_uid_owns() {
        use std::os::unix::fs::{MetadataExt as _, PermissionsExt as _};
        let d = tempfile::tempdir().unwrap();
        let me = tempfile::tempfile().unwrap().metadata().unwrap().uid();
        let theirs = if me == 0 {
            let dir = d.path().join("work");
            owned_private_dir(&dir).unwrap();
            std::os::unix::fs::chown(&dir, Some(65534), Some(65534)).unwrap();
            dir
        } else {
            PathBuf::from("/")
        };
        let meta = std::fs::symlink_metadata(&theirs).unwrap();
        let owner = meta.uid();
        assert_ne!(owner, me);
        let mode = meta.permissions().mode() & 0o777;
        let err = owned_private_dir(&theirs).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::PermissionDenied);
        let msg = err.to_string();
        assert!(
            msg.ends_with(&format!(
                "is owned by uid {owner}, not by this user (uid {me}); remove it or choose another directory"
            )),
            "{msg}"
        );
        // Refused as it was: not adopted, not re-moded.
        let after = std::fs::symlink_metadata(&theirs).unwrap();
        assert_eq!(
            (after.uid(), after.permissions().mode() & 0o777),
            (owner, mode)
        );
    }

    #[test]
    fn issue12_output_can_patch_and_read_back_before_commit() {
        use std::io::{Read as _, Seek as _, SeekFrom};
        let dir = tempfile::tempdir().unwrap();
        let dest = dir.path().join("out.whl");
        let mut out = Output::create(&dest, Mode::Public).unwrap();
        out.write_all(b"header:0 data").unwrap();
        out.seek(SeekFrom::Start(7)).unwrap();
        out.write_all(b"1").unwrap();
        out.seek(SeekFrom::Start(0)).unwrap();
        let mut back = String::new();
        out.read_to_string(&mut back).unwrap();
        assert_eq!(back, "header:1 data");
        assert!(!dest.exists(), "nothing at the destination before commit");
        out.commit().unwrap();
        assert_eq!(std::fs::read(&dest).unwrap(), b"header:1 data");
    }

    #[test]
    fn never_follows_a_planted_link_and_sets_the_mode() {
        let dir = tempfile::tempdir().unwrap();
        let victim = dir.path().join("victim");
        std::fs::write(&victim, b"keep").unwrap();
        // Whatever name an attacker guesses, the helper's temp name is random and created
        // with O_EXCL; the destination itself is replaced by rename, not written through.
        #[cfg(unix)]
        std::os::unix::fs::symlink(&victim, dir.path().join("out.whl")).unwrap();
        write_atomically(&dir.path().join("out.whl"), b"new", Mode::Public).unwrap();
        assert_eq!(std::fs::read(&victim).unwrap(), b"keep");
        assert_eq!(std::fs::read(dir.path().join("out.whl")).unwrap(), b"new");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            let meta = std::fs::symlink_metadata(dir.path().join("out.whl")).unwrap();
            assert!(meta.is_file());
            assert_eq!(meta.permissions().mode() & 0o777, 0o644);
            write_atomically(&dir.path().join("k.pem"), b"s", Mode::Private).unwrap();
            let m = std::fs::metadata(dir.path().join("k.pem")).unwrap();
            assert_eq!(m.permissions().mode() & 0o777, 0o600);
        }
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .filter_map(|e| e.ok())
            .filter(|e| e.file_name().to_string_lossy().ends_with(".tmp"))
            .collect();
        assert!(leftovers.is_empty());
    }
}
