//! The variables a cell sets for its build: the profile's values with the placeholders filled
//! in, and the toolkit's own (`CUDA_PATH`, `LIBRARY_PATH` with the stubs first).

use std::collections::BTreeMap;
use std::path::Path;

use vouch_profile::Cell;

use crate::CellError;

/// `${CUDA_PATH}` and `${COMPILER_LAUNCHER}` in a profile value. (`${VOUCH_WORK}` is left for
/// the build, which alone knows its work directory.)
pub fn expand(value: &str, cuda_path: Option<&Path>, launcher: Option<&Path>) -> String {
    let cuda = cuda_path
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    let launcher = launcher
        .map(|p| p.display().to_string())
        .unwrap_or_default();
    value
        .replace("${CUDA_PATH}", &cuda)
        .replace("${COMPILER_LAUNCHER}", &launcher)
        .trim()
        .to_owned()
}

pub(crate) fn cell_env(
    cell: &Cell,
    toolkit: Option<&vouch_toolchain::Installed>,
    launcher: Option<&Path>,
) -> Result<BTreeMap<String, String>, CellError> {
    let cuda_path = toolkit.map(|i| i.cuda_path.as_path());
    let mut env = BTreeMap::new();
    for (k, v) in &cell.env {
        if cuda_path.is_none() && v.contains("${CUDA_PATH}") {
            return Err(CellError::NoToolchain {
                cell: cell.id.clone(),
                var: k.clone(),
                flavor: cell.flavor.clone(),
                platform: cell.platform.to_string(),
            });
        }
        env.insert(k.clone(), expand(v, cuda_path, launcher));
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

    #[test]
    fn placeholders_are_filled_and_unknown_ones_kept() {
        let got = expand(
            " ${COMPILER_LAUNCHER} ${CUDA_PATH}/bin/nvcc -ffile-prefix-map=${VOUCH_WORK}=. ",
            Some(Path::new("/t/cuda")),
            Some(Path::new("/bin/ccache")),
        );
        assert_eq!(
            got,
            "/bin/ccache /t/cuda/bin/nvcc -ffile-prefix-map=${VOUCH_WORK}=."
        );
        assert_eq!(expand("${COMPILER_LAUNCHER} cc", None, None), "cc");
    }
}
