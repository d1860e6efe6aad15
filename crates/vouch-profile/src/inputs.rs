//! The build-inputs digest: a hash over the declared inputs (source files the profile selects,
//! the toolchain versions, the environment that changes the output), so an unchanged cell can
//! reuse an earlier artifact. Paths are hashed relative to the source root, so a checkout in
//! another directory has the same digest.

use std::path::Path;

use rayon::prelude::*;
use serde::Serialize;
use sha2::{Digest as _, Sha256};

use crate::{Cell, Profile, ProfileError};

#[derive(Clone, Debug, Serialize)]
pub struct InputsDigest {
    pub digest: vouch_core::Sha256Digest,
    pub files: usize,
    pub bytes: u64,
    /// What went in, line by line (`--explain`).
    pub explain: Vec<String>,
}

/// `*` matches within a path component, `**` across components.
fn glob_match(pattern: &str, path: &str) -> bool {
    fn go(p: &[u8], s: &[u8]) -> bool {
        match p {
            [] => s.is_empty(),
            [b'*', b'*', b'/', rest @ ..] => {
                (0..=s.len()).any(|i| (i == 0 || s[i - 1] == b'/') && go(rest, &s[i..]))
            }
            [b'*', b'*', rest @ ..] => (0..=s.len()).any(|i| go(rest, &s[i..])),
            [b'*', rest @ ..] => (0..=s.len())
                .take_while(|&i| i == 0 || s[i - 1] != b'/')
                .any(|i| go(rest, &s[i..])),
            [c, rest @ ..] => s.first() == Some(c) && go(rest, &s[1..]),
        }
    }
    go(pattern.as_bytes(), path.as_bytes())
}

/// Hex sha256 of a file the profile names.
fn hash_file(path: &Path) -> Result<String, ProfileError> {
    vouch_core::Sha256Digest::of_file(path)
        .map(|d| d.hex())
        .map_err(|source| ProfileError::Source {
            path: path.to_owned(),
            source,
        })
}

pub fn inputs_digest(
    profile: &Profile,
    cell: &Cell,
    source: &Path,
) -> Result<InputsDigest, ProfileError> {
    let mut rels: Vec<String> = Vec::new();
    for e in walkdir::WalkDir::new(source).sort_by_file_name() {
        let e = e.map_err(|e| ProfileError::Source {
            path: source.to_owned(),
            source: e.into(),
        })?;
        if !e.file_type().is_file() {
            continue;
        }
        let rel = e
            .path()
            .strip_prefix(source)
            .expect("under root")
            .to_string_lossy()
            .replace('\\', "/");
        let included = profile.inputs.include.iter().any(|g| glob_match(g, &rel));
        let excluded = profile.inputs.exclude.iter().any(|g| glob_match(g, &rel));
        if included && !excluded {
            rels.push(rel);
        }
    }
    rels.sort();
    // Hash the files on all cores; combine in sorted order.
    let hashed: Vec<(String, [u8; 32], u64)> = rels
        .par_iter()
        .map(|rel| {
            let path = source.join(rel);
            let (digest, size) = std::fs::File::open(&path)
                .and_then(vouch_core::Sha256Digest::of_reader)
                .map_err(|source| ProfileError::Source {
                    path: path.clone(),
                    source,
                })?;
            Ok((rel.clone(), *digest.as_bytes(), size))
        })
        .collect::<Result<_, ProfileError>>()?;
    let mut explain = vec![
        format!("cell {}", cell.id),
        format!("package {}", cell.package),
        format!("cuda {}", cell.cuda),
        format!("python {}", cell.python),
        format!("platform {}", cell.platform),
    ];
    for (k, v) in &cell.env {
        explain.push(format!("env {k}={v}"));
    }
    // The toolchain by content (pins and hashes), not by where it is unpacked.
    if let Some(tc) = profile.toolchain(cell) {
        if let Some(req) = &tc.wheels {
            explain.push(format!(
                "toolchain wheels {} root {}",
                hash_file(&profile.resolve(req))?,
                tc.root.as_deref().unwrap_or("")
            ));
        }
        for a in &tc.archives {
            explain.push(format!(
                "toolchain archive {}",
                a.sha256.to_ascii_lowercase()
            ));
        }
    }
    // The build tools by their lock's bytes; a missing lock fails the build itself, with the
    // command that makes it.
    if let Some(lock) = profile.lock_file(cell) {
        explain.push(if lock.is_file() {
            format!("build lock {}", hash_file(&lock)?)
        } else {
            format!("build lock missing {}", lock.display())
        });
    }
    // Repair settings change the wheel's tag and bundled libraries.
    if let Some(r) = &profile.repair {
        explain.push(format!(
            "repair exclude {} plat {}",
            r.exclude.join(","),
            profile.repair_plat(cell.platform).unwrap_or("")
        ));
    }
    if let Some(t) = profile.template(cell) {
        for (k, v) in &t.project {
            explain.push(format!("template project.{k}={v}"));
        }
        for (dest, from) in profile.template_files(cell) {
            explain.push(format!("template file {dest} {}", hash_file(&from)?));
        }
    }
    for k in &profile.inputs.env {
        if !cell.env.contains_key(k) {
            explain.push(format!("env {k}={}", std::env::var(k).unwrap_or_default()));
        }
    }
    let mut bytes = 0;
    for (rel, h, n) in &hashed {
        explain.push(format!("file {rel} {}", hex::encode(h)));
        bytes += n;
    }
    let mut top = Sha256::new();
    for line in &explain {
        top.update(line.as_bytes());
        top.update([b'\n']);
    }
    Ok(InputsDigest {
        digest: vouch_core::Sha256Digest::from_bytes(top.finalize().into()),
        files: hashed.len(),
        bytes,
        explain,
    })
}

#[cfg(test)]
mod tests {
    use super::glob_match;

    #[test]
    fn globs() {
        assert!(glob_match("**/*.pyx", "cupy/_core/core.pyx"));
        assert!(glob_match("**/*.pyx", "top.pyx"));
        assert!(glob_match("cupy/*.py", "cupy/a.py"));
        assert!(!glob_match("cupy/*.py", "cupy/sub/a.py"));
        assert!(glob_match("setup.py", "setup.py"));
        assert!(!glob_match("**/*.pyx", "cupy/core.pyx.bak"));
        assert!(glob_match("tests/**", "tests/a/b.py"));
    }
}
