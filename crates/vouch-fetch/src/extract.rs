//! Extracting an untrusted zip: relative names only, no links, bounded counts and sizes, into a
//! directory that did not exist before.

use std::io::Read as _;
use std::path::{Path, PathBuf};

#[derive(Clone, Debug)]
pub struct ExtractLimits {
    pub max_members: usize,
    pub max_total_bytes: u64,
}

impl Default for ExtractLimits {
    fn default() -> Self {
        // A CuPy artifact is a handful of wheels of a few hundred MB.
        ExtractLimits {
            max_members: 1000,
            max_total_bytes: 4 << 30,
        }
    }
}

fn bad_name(name: &str) -> Option<&'static str> {
    if name.starts_with('/') || name.starts_with('\\') {
        return Some("absolute path");
    }
    if name.contains('\\') || name.contains('\0') {
        return Some("backslash or NUL in name");
    }
    if name
        .split('/')
        .next()
        .is_some_and(|p| p.len() >= 2 && p.as_bytes()[1] == b':')
    {
        return Some("drive letter");
    }
    if name.split('/').any(|p| p == "..") {
        return Some("`..` component");
    }
    None
}

/// Extracts `zip` into `dir` (created; must not exist) and returns the files written.
pub fn extract_safely(
    zip: &Path,
    dir: &Path,
    limits: &ExtractLimits,
) -> Result<Vec<PathBuf>, String> {
    let file = std::fs::File::open(zip).map_err(|e| format!("cannot open the download: {e}"))?;
    let mut archive = zip::ZipArchive::new(file).map_err(|e| format!("not a valid zip: {e}"))?;
    if archive.len() > limits.max_members {
        return Err(format!(
            "{} members, over the limit of {}",
            archive.len(),
            limits.max_members
        ));
    }
    std::fs::create_dir(dir)
        .map_err(|e| format!("cannot create a fresh directory {}: {e}", dir.display()))?;
    let mut total = 0u64;
    let mut files = Vec::new();
    for i in 0..archive.len() {
        let mut f = archive
            .by_index(i)
            .map_err(|e| format!("member {i}: {e}"))?;
        let name = String::from_utf8_lossy(f.name_raw()).into_owned();
        if let Some(why) = bad_name(&name) {
            return Err(format!("member {name:?} has an unsafe name ({why})"));
        }
        if f.is_symlink() {
            return Err(format!("member {name:?} is a symbolic link"));
        }
        let dest = dir.join(&name);
        if f.is_dir() {
            std::fs::create_dir_all(&dest).map_err(|e| format!("{name}: {e}"))?;
            continue;
        }
        total = total.saturating_add(f.size());
        if total > limits.max_total_bytes {
            return Err(format!(
                "members add up to more than {} bytes uncompressed (zip bomb?)",
                limits.max_total_bytes
            ));
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{name}: {e}"))?;
        }
        let mut out = std::fs::File::create_new(&dest).map_err(|e| format!("{name}: {e}"))?;
        // The declared size bounds what we inflate, whatever the stream claims.
        let declared = f.size();
        let copied = std::io::copy(&mut (&mut f).take(declared), &mut out)
            .map_err(|e| format!("{name}: {e}"))?;
        if copied != declared {
            return Err(format!("member {name:?} is shorter than declared"));
        }
        files.push(dest);
    }
    Ok(files)
}
