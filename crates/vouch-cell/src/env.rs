//! The variables a cell sets for its build: the profile's values with the placeholders filled
//! in, and the toolkit's own (`CUDA_PATH`, `LIBRARY_PATH` with the stubs first).

use std::collections::BTreeMap;
use std::path::Path;

use vouch_profile::Cell;

use crate::CellError;

/// `${CUDA_PATH}`, `${TOOLCHAIN_ROOT}` and `${COMPILER_LAUNCHER}` in a profile value.
/// (`${VOUCH_WORK}` is left for the build, which alone knows its work directory.)
pub fn expand(
    value: &str,
    toolkit: Option<&vouch_toolchain::Installed>,
    launcher: Option<&Path>,
) -> String {
    let shown =
        |p: Option<std::path::PathBuf>| p.map(|p| p.display().to_string()).unwrap_or_default();
    let launcher = launcher
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    value
        .replace("${CUDA_PATH}", &shown(toolkit.map(|i| i.cuda_path.clone())))
        .replace("${TOOLCHAIN_ROOT}", &shown(toolkit.map(|i| i.tree())))
        .replace("${COMPILER_LAUNCHER}", &launcher)
        .trim()
        .to_owned()
}

pub(crate) fn cell_env(
    cell: &Cell,
    toolkit: Option<&vouch_toolchain::Installed>,
    launcher: Option<&Path>,
) -> Result<BTreeMap<String, String>, CellError> {
    let mut env = BTreeMap::new();
    for (k, v) in &cell.env {
        let needs = ["CUDA_PATH", "TOOLCHAIN_ROOT"]
            .into_iter()
            .find(|p| v.contains(&format!("${{{p}}}")));
        if let (None, Some(placeholder)) = (toolkit, needs) {
            return Err(CellError::NoToolchain {
                cell: cell.id.clone(),
                var: k.clone(),
                placeholder,
                flavor: cell.flavor.clone(),
                platform: cell.platform.to_string(),
            });
        }
        env.insert(k.clone(), expand(v, toolkit, launcher));
    }
    if let Some(i) = toolkit {
        env.insert("CUDA_PATH".to_owned(), i.cuda_path.display().to_string());
        // gcc's ld reads LIBRARY_PATH; MSVC's link.exe reads LIB (which vcvars already filled
        // with the SDK's directories: the toolkit's goes first, theirs stay).
        let mut dirs = i.library_path();
        let var = if cell.platform == vouch_core::Platform::Win64 {
            if let Some(existing) = std::env::var_os("LIB") {
                dirs.extend(std::env::split_paths(&existing));
            }
            "LIB"
        } else {
            "LIBRARY_PATH"
        };
        let lib = vouch_core::host::HostLayout::current().join_path_list(dirs)?;
        env.insert(var.to_owned(), lib.to_string_lossy().into_owned());
    }
    Ok(env)
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A value that needs the toolchain, in a cell without one, names the placeholder it used.
    #[test]
    fn a_placeholder_of_the_toolchain_without_one_is_refused_by_name() {
        for placeholder in ["CUDA_PATH", "TOOLCHAIN_ROOT"] {
            let cell = Cell {
                id: "cpu-py3.12-linux-64".into(),
                flavor: "cpu".into(),
                package: "x".into(),
                cuda: "none".into(),
                python: "3.12".into(),
                platform: vouch_core::Platform::Linux64,
                runner: "ubuntu-24.04".into(),
                container: None,
                artifact_stem: "x-py3.12-linux-64".into(),
                route: vouch_profile::Route::Wheel,
                route_reason: None,
                env: [(
                    "CUPY_INCLUDE_PATH".to_owned(),
                    format!("${{{placeholder}}}/include"),
                )]
                .into(),
                build_requires: Vec::new(),
            };
            let e = cell_env(&cell, None, None).unwrap_err().to_string();
            assert!(
                e.contains(&format!("CUPY_INCLUDE_PATH uses ${{{placeholder}}}, but the profile declares no toolchain")),
                "{e}"
            );
        }
    }

    #[test]
    fn placeholders_are_filled_and_unknown_ones_kept() {
        let toolkit: vouch_toolchain::Installed = serde_json::from_value(serde_json::json!({
            "cuda_path": "/t/tree/nvidia/cu13", "dir": "/t", "key": "k", "components": [],
            "nvcc": null, "files": 0, "reused": false, "seconds": 0.0,
        }))
        .unwrap();
        let got = expand(
            " ${COMPILER_LAUNCHER} ${CUDA_PATH}/bin/nvcc -I${TOOLCHAIN_ROOT}/cutensor/include -ffile-prefix-map=${VOUCH_WORK}=. ",
            Some(&toolkit),
            Some(Path::new("/bin/ccache")),
        );
        assert_eq!(
            got,
            "/bin/ccache /t/tree/nvidia/cu13/bin/nvcc -I/t/tree/cutensor/include -ffile-prefix-map=${VOUCH_WORK}=."
        );
        assert_eq!(expand("${COMPILER_LAUNCHER} cc", None, None), "cc");
    }
}
