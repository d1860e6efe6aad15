use std::path::{Component, Path, PathBuf};

use vouch_core::portable_path;

use crate::{BuildError, SourcePatch};

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
///
/// Links are followed, so the build sees the content the checkout presents: CuPy's checkout
/// links whole directories of its submodules into the package
/// (`cupy/_core/include/cupy/_cccl/cub/cub -> third_party/cccl/cub/cub`). A link whose target
/// is outside the tree is refused: a checkout (a pull request's above all) must not pull the
/// builder's own files into what it builds.
pub fn copy_tree(from: &Path, to: &Path) -> Result<(), BuildError> {
    let root = std::fs::canonicalize(from).map_err(|source| BuildError::Io {
        path: from.to_owned(),
        source,
    })?;
    let walker = walkdir::WalkDir::new(from)
        .follow_links(true)
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
        if entry.path_is_symlink() {
            let target = std::fs::canonicalize(entry.path()).map_err(io)?;
            if !target.starts_with(&root) {
                return Err(BuildError::LinkOutside {
                    link: entry.path().to_owned(),
                    target,
                });
            }
        }
        if entry.file_type().is_dir() {
            std::fs::create_dir_all(&dest).map_err(io)?;
        } else {
            std::fs::copy(entry.path(), &dest).map_err(io)?;
        }
    }
    Ok(())
}

/// Unpacks an sdist (`.tar.gz`) into `dest` and returns its single top directory and the newest
/// member modification time. Members that would land outside `dest`, links, and devices are
/// refused.
pub fn unpack_sdist(sdist: &Path, dest: &Path) -> Result<(PathBuf, u64), BuildError> {
    let bad = |message: String| BuildError::Sdist {
        path: sdist.to_owned(),
        message,
    };
    let file = std::fs::File::open(sdist).map_err(|e| BuildError::Io {
        path: sdist.to_owned(),
        source: e,
    })?;
    let name = sdist.to_string_lossy();
    if !(name.ends_with(".tar.gz") || name.ends_with(".tgz")) {
        return Err(bad(
            "expected a .tar.gz sdist or a source directory".to_owned()
        ));
    }
    let mut tar = tar::Archive::new(flate2::read::GzDecoder::new(std::io::BufReader::new(file)));
    let mut top: Option<String> = None;
    // Every name unpacked, for the collision check once all are known.
    let mut names: Vec<(String, bool)> = Vec::new();
    let mut newest = 0u64;
    let entries = tar
        .entries()
        .map_err(|e| bad(format!("not a readable tar.gz: {e}")))?;
    for entry in entries {
        let mut entry = entry.map_err(|e| bad(format!("not a readable tar.gz: {e}")))?;
        let path = entry
            .path()
            .map_err(|e| bad(format!("member name: {e}")))?
            .into_owned();
        let shown = path.display().to_string();
        if path
            .components()
            .any(|c| !matches!(c, Component::Normal(_) | Component::CurDir))
        {
            return Err(bad(format!(
                "member {shown:?} is not a plain relative path"
            )));
        }
        // `./pkg-1.0/...` and `pkg-1.0/...` name the same top directory.
        let first = path
            .components()
            .find(|c| matches!(c, Component::Normal(_)))
            .map(|c| c.as_os_str().to_string_lossy().into_owned())
            .unwrap_or_default();
        if first.is_empty() {
            continue; // the archive's own `./` entry
        }
        match &top {
            None => top = Some(first.clone()),
            Some(t) if *t != first => {
                return Err(bad(format!(
                    "member {shown:?} is outside the top directory {t:?}"
                )));
            }
            Some(_) => {}
        }
        let kind = entry.header().entry_type();
        if !(kind.is_file() || kind.is_dir()) {
            if matches!(
                kind,
                tar::EntryType::XGlobalHeader | tar::EntryType::XHeader
            ) {
                continue;
            }
            return Err(bad(format!(
                "member {shown:?} is a {kind:?}; only files and directories are accepted"
            )));
        }
        // The names as a Windows or macOS builder would unpack them: one that cannot be
        // created there, or two that its file system folds into one, would build another tree
        // than the one whose inputs were digested here.
        let parts =
            path.components()
                .filter_map(|c| match c {
                    Component::Normal(part) => Some(part.to_str().ok_or_else(|| {
                        bad(format!("member {shown:?} has a name that is not UTF-8"))
                    })),
                    _ => None,
                })
                .collect::<Result<Vec<&str>, _>>()?;
        for part in &parts {
            portable_path::check_component(part).map_err(|rule| {
                bad(format!(
                    "member {shown:?} cannot be unpacked under that name on Windows or macOS: {rule}"
                ))
            })?;
        }
        names.push((parts.join("/"), kind.is_dir()));
        newest = newest.max(entry.header().mtime().unwrap_or(0));
        let out = dest.join(&path);
        if let Some(parent) = out.parent() {
            std::fs::create_dir_all(parent).map_err(|e| BuildError::Io {
                path: parent.to_owned(),
                source: e,
            })?;
        }
        entry.unpack(&out).map_err(|e| BuildError::Io {
            path: out.clone(),
            source: e,
        })?;
    }
    // Checked once all names are known: a collision can only have overwritten a file in
    // `dest`, the caller's private directory, which the error makes it discard.
    portable_path::find_collision(names.iter().map(|(n, dir)| (n.as_str(), *dir)))
        .map_err(|collision| bad(format!("members {collision}")))?;
    let top = top.ok_or_else(|| bad("empty archive".to_owned()))?;
    Ok((dest.join(top), newest))
}

/// Applies a template: `[project]` keys overridden in `pyproject.toml`, files copied in.
pub fn apply_patch(tree: &Path, patch: &SourcePatch) -> Result<(), BuildError> {
    if !patch.project.is_empty() {
        let path = tree.join("pyproject.toml");
        let text = std::fs::read_to_string(&path).map_err(|e| BuildError::Io {
            path: path.clone(),
            source: e,
        })?;
        let mut doc: toml::Table = toml::from_str(&text)
            .map_err(|e| BuildError::Template(format!("{}: {}", path.display(), e.message())))?;
        let project = doc
            .entry("project")
            .or_insert_with(|| toml::Value::Table(toml::Table::new()))
            .as_table_mut()
            .ok_or_else(|| {
                BuildError::Template("pyproject.toml: `project` is not a table".to_owned())
            })?;
        for (k, v) in &patch.project {
            project.insert(k.clone(), v.clone());
        }
        let out = toml::to_string(&doc)
            .map_err(|e| BuildError::Template(format!("writing pyproject.toml: {e}")))?;
        std::fs::write(&path, out).map_err(|e| BuildError::Io { path, source: e })?;
    }
    for (dest, from) in &patch.files {
        let to = tree.join(dest);
        if let Some(parent) = to.parent() {
            std::fs::create_dir_all(parent).map_err(|e| BuildError::Io {
                path: parent.to_owned(),
                source: e,
            })?;
        }
        std::fs::copy(from, &to).map_err(|e| BuildError::Io {
            path: from.clone(),
            source: e,
        })?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Issue 32: CuPy's checkout links directories of its submodules into the package. The
    /// copy holds their content; a link out of the tree is refused and names both ends.
    #[cfg(unix)]
    #[test]
    fn copy_tree_follows_links_inside_the_tree_and_refuses_links_out_of_it() {
        let dir = tempfile::tempdir().unwrap();
        let src = dir.path().join("src");
        std::fs::create_dir_all(src.join("third_party/cccl/cub/cub")).unwrap();
        std::fs::write(src.join("third_party/cccl/cub/cub/cub.cuh"), "// cub\n").unwrap();
        std::fs::create_dir_all(src.join("pkg/include")).unwrap();
        std::os::unix::fs::symlink(
            "../../third_party/cccl/cub/cub",
            src.join("pkg/include/cub"),
        )
        .unwrap();
        let out = dir.path().join("out");
        copy_tree(&src, &out).unwrap();
        let copied = out.join("pkg/include/cub/cub.cuh");
        assert!(!copied.symlink_metadata().unwrap().file_type().is_symlink());
        assert!(
            !out.join("pkg/include/cub")
                .symlink_metadata()
                .unwrap()
                .file_type()
                .is_symlink()
        );
        assert_eq!(std::fs::read_to_string(copied).unwrap(), "// cub\n");

        let secret = dir.path().join("secret");
        std::fs::write(&secret, "token\n").unwrap();
        std::os::unix::fs::symlink(&secret, src.join("pkg/leak")).unwrap();
        let err = copy_tree(&src, &dir.path().join("out2")).unwrap_err();
        assert!(matches!(err, BuildError::LinkOutside { .. }), "{err}");
        assert!(err.to_string().contains("pkg/leak"), "{err}");
        assert!(err.to_string().contains("outside the source tree"), "{err}");
    }

    /// A `.tar.gz` whose members are files named `names` (a trailing `/` makes a directory).
    fn sdist(dir: &Path, names: &[&str]) -> PathBuf {
        let path = dir.join("demo-1.0.tar.gz");
        let gz = flate2::write::GzEncoder::new(
            std::fs::File::create(&path).unwrap(),
            flate2::Compression::default(),
        );
        let mut tar = tar::Builder::new(gz);
        for name in names {
            let mut header = tar::Header::new_gnu();
            let is_dir = name.ends_with('/');
            header.set_entry_type(if is_dir {
                tar::EntryType::Directory
            } else {
                tar::EntryType::Regular
            });
            header.set_mode(0o644);
            header.set_size(if is_dir { 0 } else { name.len() as u64 });
            // Set the raw name bytes: `append_data` would refuse some of these names itself.
            let raw = &mut header.as_old_mut().name;
            raw[..name.len()].copy_from_slice(name.as_bytes());
            header.set_cksum();
            let data: &[u8] = if is_dir { b"" } else { name.as_bytes() };
            tar.append(&header, data).unwrap();
        }
        tar.into_inner().unwrap().finish().unwrap();
        path
    }

    fn unpack(tmp: &Path, names: &[&str]) -> Result<(PathBuf, u64), BuildError> {
        let sdist = sdist(tmp, names);
        let dest = tmp.join("x");
        std::fs::create_dir(&dest).unwrap();
        unpack_sdist(&sdist, &dest)
    }

    #[test]
    fn issue12_refuses_names_other_platforms_cannot_hold() {
        for (names, want) in [
            (
                &["demo-1.0/pkg/A.py", "demo-1.0/pkg/a.py"][..],
                "\"demo-1.0/pkg/A.py\" and \"demo-1.0/pkg/a.py\" collide: names that differ only in case",
            ),
            (
                &["demo-1.0/Pkg/", "demo-1.0/pkg/x.py"][..],
                "\"demo-1.0/Pkg\" and \"demo-1.0/pkg\" collide: names that differ only in case",
            ),
            (
                &["demo-1.0/caf\u{e9}.py", "demo-1.0/cafe\u{301}.py"][..],
                "differ only in Unicode normalization (NFC/NFD)",
            ),
            (
                &["demo-1.0/x.py", "demo-1.0/x.py"][..],
                "collide: the same name twice",
            ),
            (
                &["demo-1.0/aux.py"][..],
                "\"demo-1.0/aux.py\" cannot be unpacked under that name on Windows or macOS: component \"aux.py\" is the Windows device name AUX",
            ),
            (&["demo-1.0/PRN"][..], "Windows device name PRN"),
            (&["demo-1.0/con/x.py"][..], "Windows device name CON"),
            (&["demo-1.0/com7.h"][..], "Windows device name COM7"),
            (&["demo-1.0/Lpt1.c"][..], "Windows device name LPT1"),
            (&["demo-1.0/x."][..], "ends with a dot or a space"),
            (&["demo-1.0/x /y.py"][..], "ends with a dot or a space"),
            (&["demo-1.0/a:b.py"][..], "contains ':'"),
            (&["demo-1.0/a\nb.py"][..], "control character '\\n'"),
            (&["demo-1.0/a\u{7f}b.py"][..], "control character"),
            (&["demo-1.0/a<b"][..], "contains '<'"),
            (&["demo-1.0/a>b"][..], "contains '>'"),
            (&["demo-1.0/a\"b"][..], "contains '\"'"),
            (&["demo-1.0/a|b"][..], "contains '|'"),
            (&["demo-1.0/a?b"][..], "contains '?'"),
            (&["demo-1.0/a*b"][..], "contains '*'"),
            (&["demo-1.0/a\\b.py"][..], "contains '\\\\'"),
        ] {
            let tmp = tempfile::tempdir().unwrap();
            let err = unpack(tmp.path(), names).unwrap_err();
            let BuildError::Sdist { message, .. } = &err else {
                panic!("{names:?}: {err:?}");
            };
            assert!(message.contains(want), "{names:?}: {message}");
        }
    }

    #[test]
    fn issue12_portable_sdist_unpacks() {
        let tmp = tempfile::tempdir().unwrap();
        let (root, _) = unpack(
            tmp.path(),
            &[
                "demo-1.0/",
                "demo-1.0/pkg/",
                "demo-1.0/pkg/__init__.py",
                "demo-1.0/pkg/a.py",
                "demo-1.0/pkg/b.py",
                "demo-1.0/caf\u{e9}.txt",
                "demo-1.0/console.py",
            ],
        )
        .unwrap();
        assert!(root.join("pkg/a.py").is_file());
        assert!(root.join("caf\u{e9}.txt").is_file());
    }
}
