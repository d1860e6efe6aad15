//! Unpacking wheels and redistributable archives into the toolkit tree, refusing any member
//! that would land outside it.

use std::io::Read;
use std::path::{Component as PathComponent, Path, PathBuf};

use crate::{ToolchainError, io};

/// A member name as a relative path with only normal components, or why not.
fn safe_relative(name: &str) -> Result<PathBuf, &'static str> {
    if name.contains('\\') {
        return Err("contains a backslash");
    }
    let p = Path::new(name);
    let mut out = PathBuf::new();
    for c in p.components() {
        match c {
            PathComponent::Normal(part) => out.push(part),
            PathComponent::CurDir => {}
            PathComponent::ParentDir => return Err("contains `..`"),
            PathComponent::RootDir | PathComponent::Prefix(_) => return Err("is absolute"),
        }
    }
    Ok(out)
}

#[cfg(unix)]
fn set_mode(path: &Path, mode: u32) -> std::io::Result<()> {
    use std::os::unix::fs::PermissionsExt as _;
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode))
}

#[cfg(not(unix))]
fn set_mode(_path: &Path, _mode: u32) -> std::io::Result<()> {
    Ok(())
}

/// Unpacks a wheel's payload (not its `.dist-info`) into `tree`.
pub fn unpack_wheel(wheel: &Path, tree: &Path) -> Result<(), ToolchainError> {
    let name = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    unpack_zip(wheel, &name, tree, ZipKind::Wheel)
}

/// What a zip's member names are relative to.
#[derive(Clone, Copy, PartialEq, Eq)]
enum ZipKind {
    /// A wheel: names are relative to the tree; `*.dist-info/` is skipped.
    Wheel,
    /// A Windows redistributable archive: one top directory
    /// (`cuda_nvcc-windows-x86_64-12.9.86-archive/`), dropped as for tar archives.
    Archive,
}

fn unpack_zip(path: &Path, label: &str, tree: &Path, kind: ZipKind) -> Result<(), ToolchainError> {
    let unreadable = |source| ToolchainError::Wheel {
        archive: label.to_owned(),
        source,
    };
    let file = std::fs::File::open(path).map_err(io(path))?;
    let mut zip = zip::ZipArchive::new(std::io::BufReader::new(file)).map_err(unreadable)?;
    for i in 0..zip.len() {
        let mut member = zip.by_index(i).map_err(unreadable)?;
        let member_name = member.name().map_err(unreadable)?.into_owned();
        let rel = safe_relative(&member_name).map_err(|m| ToolchainError::UnsafeMember {
            archive: label.to_owned(),
            member: member_name.clone(),
            message: m.to_owned(),
        })?;
        let rel: PathBuf = match kind {
            ZipKind::Wheel => {
                let first = rel.components().next();
                if first.is_some_and(|c| c.as_os_str().to_string_lossy().ends_with(".dist-info")) {
                    continue;
                }
                rel
            }
            ZipKind::Archive => rel.components().skip(1).collect(),
        };
        if rel.as_os_str().is_empty() {
            continue;
        }
        let dest = tree.join(&rel);
        if member.is_dir() {
            std::fs::create_dir_all(&dest).map_err(io(&dest))?;
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        let mut out = std::fs::File::create(&dest).map_err(io(&dest))?;
        std::io::copy(&mut member, &mut out).map_err(io(&dest))?;
        let executable = member.unix_mode().is_some_and(|m| m & 0o111 != 0);
        set_mode(&dest, if executable { 0o755 } else { 0o644 }).map_err(io(&dest))?;
    }
    Ok(())
}

/// Unpacks a redistributable archive by its name: `.zip` (Windows) or a tar archive.
pub fn unpack_archive(archive: &Path, label: &str, tree: &Path) -> Result<(), ToolchainError> {
    if label.ends_with(".zip") {
        unpack_zip(archive, label, tree, ZipKind::Archive)
    } else {
        unpack_tar(archive, label, tree)
    }
}

/// Unpacks a `.tar.xz`/`.tar.gz` redistributable archive into `tree`, dropping its single top
/// directory (`cuda_nvcc-linux-x86_64-12.9.86-archive/`) so several archives merge into one
/// toolkit.
fn unpack_tar(archive: &Path, label: &str, tree: &Path) -> Result<(), ToolchainError> {
    let file = std::fs::File::open(archive).map_err(io(archive))?;
    let reader: Box<dyn Read> = if label.ends_with(".xz") || label.ends_with(".txz") {
        Box::new(liblzma::read::XzDecoder::new(std::io::BufReader::new(file)))
    } else if label.ends_with(".gz") || label.ends_with(".tgz") {
        Box::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)))
    } else {
        Box::new(std::io::BufReader::new(file))
    };
    let bad = |member: &str, message: &str| ToolchainError::UnsafeMember {
        archive: label.to_owned(),
        member: member.to_owned(),
        message: message.to_owned(),
    };
    let corrupt = |source| ToolchainError::Archive {
        archive: label.to_owned(),
        source,
    };
    let mut tar = tar::Archive::new(reader);
    for entry in tar.entries().map_err(corrupt)? {
        let mut entry = entry.map_err(corrupt)?;
        let raw = entry
            .path()
            .map_err(corrupt)?
            .to_string_lossy()
            .into_owned();
        let rel = safe_relative(&raw).map_err(|m| bad(&raw, m))?;
        let stripped: PathBuf = rel.components().skip(1).collect();
        if stripped.as_os_str().is_empty() {
            continue;
        }
        let dest = tree.join(&stripped);
        let kind = entry.header().entry_type();
        if kind.is_symlink() {
            let target = entry
                .link_name()
                .map_err(corrupt)?
                .ok_or_else(|| bad(&raw, "symlink without a target"))?;
            // Links inside the toolkit are relative (`libcudart.so -> libcudart.so.12`); one
            // that could point elsewhere is refused.
            let t = target.to_string_lossy();
            safe_relative(&t).map_err(|m| bad(&raw, &format!("symlink target {t:?} {m}")))?;
        } else if kind.is_hard_link() {
            return Err(bad(&raw, "hard links are not supported"));
        } else if !(kind.is_file() || kind.is_dir()) {
            continue;
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(io(parent))?;
        }
        entry.unpack(&dest).map_err(io(&dest))?;
    }
    Ok(())
}

/// Streams `url` to `dest` through the shared retrying client. Plain http only for loopback
/// (tests); a redirect to plain http elsewhere is refused.
pub fn download(
    url: &str,
    dest: &Path,
    progress: Option<&crate::ProgressFn>,
) -> Result<(), ToolchainError> {
    let failed = |source| ToolchainError::Download {
        url: vouch_core::redact::redact_userinfo(url),
        source,
    };
    tracing::info!(
        url = %vouch_core::redact::redact_userinfo(url),
        "downloading toolkit archive"
    );
    vouch_http::block_on(async {
        let client = vouch_http::Client::new(
            vouch_http::Redirects::FollowSecure,
            std::time::Duration::from_secs(1800),
        )?;
        let resp = client.get(url).await?;
        vouch_http::save(resp, url, dest, None, progress).await
    })
    .and_then(|r| r)
    .map_err(failed)?;
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::safe_relative;

    #[test]
    fn member_names() {
        assert!(safe_relative("nvidia/cu13/bin/nvcc").is_ok());
        assert!(safe_relative("../etc/passwd").is_err());
        assert!(safe_relative("/etc/passwd").is_err());
        assert!(safe_relative("a/../../b").is_err());
        assert!(safe_relative("a\\b").is_err());
    }
}
