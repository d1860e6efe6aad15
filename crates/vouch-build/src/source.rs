use std::path::Path;

use crate::BuildError;

/// Directories that are build output or VCS state, never source.
const SKIP: &[&str] = &[
    ".git",
    ".hg",
    "build",
    "dist",
    "__pycache__",
    ".tox",
    ".nox",
    ".venv",
];

/// Copies the source tree so the build never writes into the caller's checkout and always runs
/// from a path that the prefix maps rewrite.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), BuildError> {
    let walker = walkdir::WalkDir::new(from)
        .sort_by_file_name()
        .into_iter()
        .filter_entry(|e| {
            let name = e.file_name().to_string_lossy();
            e.depth() == 0 || !(SKIP.contains(&name.as_ref()) || name.ends_with(".egg-info"))
        });
    for entry in walker {
        let entry = entry.map_err(|e| BuildError::Io {
            path: e.path().unwrap_or(from).to_owned(),
            source: e
                .into_io_error()
                .unwrap_or_else(|| std::io::Error::other("filesystem loop")),
        })?;
        let rel = entry
            .path()
            .strip_prefix(from)
            .expect("walkdir stays under its root");
        let dest = to.join(rel);
        let io = |source| BuildError::Io {
            path: entry.path().to_owned(),
            source,
        };
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io)?;
        } else {
            // Follows symlinks: the build sees the content the checkout presents.
            std::fs::copy(entry.path(), &dest).map_err(io)?;
        }
    }
    Ok(())
}
