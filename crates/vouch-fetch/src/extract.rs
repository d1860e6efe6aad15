//! Extracting an untrusted zip: relative names only, no links, bounded counts and sizes, into a
//! directory that did not exist before.

use std::path::{Path, PathBuf};

use vouch_core::portable_path;

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
///
/// Every name is checked, against the rules of [`vouch_core::portable_path`] too, before
/// anything is written: a name a Windows or macOS consumer could not create as written, or two
/// names its file system would fold into one, would hand that consumer other files than the
/// ones verified here.
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
    let mut names = Vec::with_capacity(archive.len());
    // The declared sizes are summed before anything is written, so a bomb is refused without
    // filling the disk; the copy below still holds each member to its declared size.
    let mut declared_total = 0u64;
    for i in 0..archive.len() {
        let f = archive
            .by_index_raw(i)
            .map_err(|e| format!("member {i}: {e}"))?;
        if !f.is_dir() {
            declared_total = declared_total.saturating_add(f.size());
            if declared_total > limits.max_total_bytes {
                return Err(too_large(limits));
            }
        }
        let name = std::str::from_utf8(f.name_raw())
            .map_err(|_| {
                format!(
                    "member {:?} has a name that is not UTF-8",
                    String::from_utf8_lossy(f.name_raw())
                )
            })?
            .to_owned();
        if let Some(why) = bad_name(&name) {
            return Err(format!("member {name:?} has an unsafe name ({why})"));
        }
        if let Err(rule) = portable_path::check_path(&name) {
            return Err(format!(
                "member {name:?} cannot be extracted under that name on Windows or macOS: {rule}"
            ));
        }
        names.push((name, f.is_dir()));
    }
    portable_path::find_collision(names.iter().map(|(n, dir)| (n.as_str(), *dir)))
        .map_err(|collision| format!("members {collision}"))?;
    std::fs::create_dir(dir)
        .map_err(|e| format!("cannot create a fresh directory {}: {e}", dir.display()))?;
    let mut total = 0u64;
    let mut files = Vec::new();
    for (i, (name, _)) in names.into_iter().enumerate() {
        let mut f = archive
            .by_index(i)
            .map_err(|e| format!("member {i}: {e}"))?;
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
            return Err(too_large(limits));
        }
        if let Some(parent) = dest.parent() {
            std::fs::create_dir_all(parent).map_err(|e| format!("{name}: {e}"))?;
        }
        let mut out = std::fs::File::create_new(&dest).map_err(|e| format!("{name}: {e}"))?;
        // Read to the end of the stream: the zip reader stops with an error past the declared
        // size, and checks the CRC-32 only when it sees the end.
        let declared = f.size();
        let copied = std::io::copy(&mut f, &mut out)
            .map_err(|e| format!("member {name:?} is corrupt: {e}"))?;
        if copied != declared {
            return Err(format!("member {name:?} is shorter than declared"));
        }
        files.push(dest);
    }
    Ok(files)
}

fn too_large(limits: &ExtractLimits) -> String {
    format!(
        "members add up to more than {} bytes uncompressed (zip bomb?)",
        limits.max_total_bytes
    )
}

#[cfg(test)]
mod tests {
    use std::io::Write as _;

    use super::*;

    fn zip_with(path: &Path, names: &[&str]) {
        let mut w = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
        for name in names {
            let opts = zip::write::SimpleFileOptions::default();
            if let Some(dir) = name.strip_suffix('/') {
                w.add_directory(dir, opts).unwrap();
            } else {
                w.start_file(*name, opts).unwrap();
                w.write_all(name.as_bytes()).unwrap();
            }
        }
        w.finish().unwrap();
    }

    /// Extracts a zip holding `names`; on refusal, also checks that nothing was written.
    fn extract(names: &[&str]) -> Result<Vec<PathBuf>, String> {
        let tmp = tempfile::tempdir().unwrap();
        let zip = tmp.path().join("a.zip");
        zip_with(&zip, names);
        let dir = tmp.path().join("x");
        let result = extract_safely(&zip, &dir, &ExtractLimits::default());
        if result.is_err() {
            assert!(!dir.exists(), "a refused archive left {dir:?} behind");
        }
        result
    }

    #[test]
    fn issue12_refuses_names_other_platforms_cannot_hold() {
        for (names, want) in [
            (&["w/pkg/A.py", "w/pkg/a.py"][..], "differ only in case"),
            (&["w/Pkg/x.py", "w/pkg/y.py"][..], "differ only in case"),
            (
                &["w/caf\u{e9}.py", "w/cafe\u{301}.py"][..],
                "Unicode normalization (NFC/NFD)",
            ),
            (&["w/CON"][..], "Windows device name CON"),
            (&["w/nul.txt"][..], "Windows device name NUL"),
            (&["w/Com1.whl"][..], "Windows device name COM1"),
            (&["lpt9/x.whl"][..], "Windows device name LPT9"),
            (&["w/x.whl."][..], "ends with a dot or a space"),
            (&["w /x.whl"][..], "ends with a dot or a space"),
            (&["w/a:b.whl"][..], "contains ':'"),
            (&["w/a\u{1}b.whl"][..], "control character"),
            (&["w/a\u{7f}b.whl"][..], "control character"),
            (&["w/a<b.whl"][..], "contains '<'"),
            (&["w/a>b.whl"][..], "contains '>'"),
            (&["w/a\"b.whl"][..], "contains '\"'"),
            (&["w/a|b.whl"][..], "contains '|'"),
            (&["w/a?b.whl"][..], "contains '?'"),
            (&["w/a*b.whl"][..], "contains '*'"),
        ] {
            let err = extract(names).unwrap_err();
            assert!(err.contains(want), "{names:?}: {err}");
            // The error names the member(s) at fault.
            for n in names {
                let shown = format!("{:?}", n.trim_end_matches('/'));
                let parent = format!("{:?}", n.rsplit_once('/').map_or(*n, |(p, _)| p));
                assert!(
                    err.contains(&shown) || err.contains(&parent),
                    "{names:?}: {err}"
                );
            }
        }
    }

    #[test]
    fn issue12_portable_names_still_extract() {
        let files = extract(&[
            "w/",
            "w/pkg-1.0-py3-none-any.whl",
            "w/pkg-1.0-py3-none-any.whl.sigstore.json",
            "w/caf\u{e9}.txt",
            "w/console.txt",
        ])
        .unwrap();
        assert_eq!(files.len(), 4);
    }

    #[test]
    fn issue12_refuses_a_member_whose_crc_is_wrong() {
        let tmp = tempfile::tempdir().unwrap();
        let zip = tmp.path().join("a.zip");
        zip_with(&zip, &["w/pkg-1.0-py3-none-any.whl"]);
        // Flip the CRC-32 in the local and the central header alike, so only the data can
        // tell.
        let mut bytes = std::fs::read(&zip).unwrap();
        let (local, central) = {
            let mut a = zip::ZipArchive::new(std::fs::File::open(&zip).unwrap()).unwrap();
            let f = a.by_index(0).unwrap();
            (f.header_start() as usize, f.central_header_start() as usize)
        };
        for at in [local + 14, central + 16] {
            for b in &mut bytes[at..at + 4] {
                *b ^= 0xff;
            }
        }
        std::fs::write(&zip, &bytes).unwrap();
        let err =
            extract_safely(&zip, &tmp.path().join("x"), &ExtractLimits::default()).unwrap_err();
        assert!(
            err.contains("\"w/pkg-1.0-py3-none-any.whl\" is corrupt"),
            "{err}"
        );
    }
}
