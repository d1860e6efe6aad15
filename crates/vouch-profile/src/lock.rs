//! `[lock]`: where a profile keeps the hash-locked build tools, and which lock file each cell
//! builds with. A cell's lock is named by its Python version and platform; a cell with extra
//! build requirements (`build_requires` of a source target) gets a lock of its own, resolved
//! together with the project's, named by its cell id.

use std::path::PathBuf;

use serde::{Deserialize, Serialize};
use vouch_core::Platform;

use crate::{Cell, Profile};

#[derive(Clone, Debug, Deserialize, Serialize, PartialEq, Eq)]
#[serde(deny_unknown_fields)]
pub struct LockSpec {
    /// The lock files' directory, relative to the profile [default: `locks`].
    #[serde(default = "default_dir")]
    pub dir: String,
    /// The project's `build-system.requires`, for `vouch lock` without `--source`. A build
    /// refuses a source that requires anything its lock was not made from.
    #[serde(default)]
    pub requires: Vec<String>,
}

fn default_dir() -> String {
    "locks".to_owned()
}

/// One lock file of the profile: what it is resolved for and where it lives.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct LockSet {
    pub python: String,
    pub platform: Platform,
    /// The cells' extra build requirements (empty for the shared lock).
    pub extra: Vec<String>,
    pub file: PathBuf,
}

fn check_requirement(key: &str, requirement: &str) -> Result<(), String> {
    if vouch_core::is_single_requirement(requirement) {
        Ok(())
    } else {
        Err(format!(
            "{key}: {requirement:?} is not a requirement (expected a name with an optional version specifier, not a pip option)"
        ))
    }
}

pub(crate) fn validate(p: &Profile) -> Result<(), String> {
    if let Some(l) = &p.lock {
        if l.dir.starts_with('/')
            || l.dir.contains(['\\', ':'])
            || l.dir.split('/').any(|c| c == ".." || c.is_empty())
        {
            return Err(format!(
                "lock.dir: {:?} is not a relative path inside the profile's directory",
                l.dir
            ));
        }
        for r in &l.requires {
            check_requirement("lock.requires", r)?;
        }
    }
    for t in &p.source_targets {
        for r in &t.build_requires {
            check_requirement(&format!("source_targets {:?}.build_requires", t.name), r)?;
        }
        if !t.build_requires.is_empty() && p.lock.is_none() {
            return Err(format!(
                "source_targets {:?}.build_requires: needs a [lock] section (extra build requirements are only installed locked)",
                t.name
            ));
        }
    }
    Ok(())
}

impl Profile {
    /// The lock file `cell` builds with; `None` when the profile has no `[lock]`.
    pub fn lock_file(&self, cell: &Cell) -> Option<PathBuf> {
        if cell.build_requires.is_empty() {
            return self.lock_file_for(&cell.python, cell.platform);
        }
        let spec = self.lock.as_ref()?;
        Some(
            self.dir
                .join(&spec.dir)
                .join(format!("build-{}.txt", cell.id)),
        )
    }

    /// The base lock of one Python (`3.12`, `3.14t`) on one platform: what a build outside the
    /// matrix (the sdist) installs.
    pub fn lock_file_for(&self, python: &str, platform: Platform) -> Option<PathBuf> {
        let spec = self.lock.as_ref()?;
        Some(
            self.dir
                .join(&spec.dir)
                .join(format!("build-py{python}-{platform}.txt")),
        )
    }

    /// Every lock file the plan's cells need, once each, in plan order.
    pub fn lock_sets(&self) -> Vec<LockSet> {
        let mut sets: Vec<LockSet> = Vec::new();
        for cell in self.plan() {
            let Some(file) = self.lock_file(&cell) else {
                continue;
            };
            if sets.iter().all(|s| s.file != file) {
                sets.push(LockSet {
                    python: cell.python.clone(),
                    platform: cell.platform,
                    extra: cell.build_requires.clone(),
                    file,
                });
            }
        }
        sets
    }
}

#[cfg(test)]
mod tests {
    use crate::Profile;

    const P: &str = r#"
project = "x"
python = ["3.12", "3.14t"]
platforms = ["linux-64", "win-64"]
runners = { linux-64 = "u", win-64 = "w" }
inputs = { include = ["**"] }
[lock]
requires = ["setuptools>=77"]
[flavors.a]
package = "x-a"
cuda = "13.0"
[flavors.b]
package = "x-b"
cuda = "12.9"
[[source_targets]]
name = "a-py3.12-linux-64-cp"
flavor = "a"
python = "3.12"
platform = "linux-64"
reason = "r"
build_requires = ["cuda-python>=13,<14"]
"#;

    #[test]
    fn one_lock_per_python_and_platform_and_one_per_cell_with_extras() {
        let p = Profile::parse(P, "p").unwrap();
        let names: Vec<String> = p
            .lock_sets()
            .iter()
            .map(|s| format!("{} {:?}", s.file.display(), s.extra))
            .collect();
        assert_eq!(
            names,
            [
                "locks/build-py3.12-linux-64.txt []",
                "locks/build-py3.14t-linux-64.txt []",
                "locks/build-py3.12-win-64.txt []",
                "locks/build-py3.14t-win-64.txt []",
                "locks/build-a-py3.12-linux-64-cp.txt [\"cuda-python>=13,<14\"]",
            ]
        );
    }

    #[test]
    fn requirements_are_checked_and_extras_need_a_lock() {
        for (from, to, want) in [
            (
                "requires = [\"setuptools>=77\"]",
                "requires = [\"--index-url=http://evil\"]",
                "lock.requires: \"--index-url=http://evil\" is not a requirement",
            ),
            (
                "[lock]\nrequires = [\"setuptools>=77\"]",
                "",
                "needs a [lock] section",
            ),
            ("[lock]", "[lock]\ndir = \"../x\"", "lock.dir: \"../x\""),
            ("[lock]", "[lock]\nhashes = 1", "unknown field `hashes`"),
        ] {
            let e = Profile::parse(&P.replace(from, to), "p")
                .unwrap_err()
                .to_string();
            assert!(e.contains(want), "{e}");
        }
    }
}
