//! Commit: only a candidate whose every wheel verified is written to `out`.

use std::path::Path;

use crate::verify::VerifiedFile;
use crate::{FetchError, FetchedWheel};

pub(crate) fn commit(
    out: &Path,
    files: Vec<VerifiedFile>,
) -> Result<Vec<FetchedWheel>, FetchError> {
    std::fs::create_dir_all(out).map_err(|e| FetchError::Io {
        path: out.to_owned(),
        source: e,
    })?;
    let mut wheels = Vec::new();
    for f in files {
        let name = f
            .pair
            .wheel
            .file_name()
            .expect("extracted files have names");
        let dest = out.join(name);
        let bundle_dest = out.join(format!("{}.sigstore.json", name.to_string_lossy()));
        // Exclusive temp file + rename: a link planted at any name in `out` is never
        // written through.
        let bundle = f
            .pair
            .bundle
            .as_ref()
            .expect("verified pairs have a bundle");
        for (from, to) in [(bundle, &bundle_dest), (&f.pair.wheel, &dest)] {
            vouch_fs::copy_atomically(from, to, vouch_fs::Mode::Public).map_err(|e| {
                FetchError::Io {
                    path: to.clone(),
                    source: e,
                }
            })?;
        }
        wheels.push(FetchedWheel {
            path: dest,
            sha256: f.sha256,
            bundle: bundle_dest,
            verified: f.verified,
        });
    }
    Ok(wheels)
}
