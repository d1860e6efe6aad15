//! What an unpacked toolkit needs before a build can use it: the PyPI wheels carry no execute
//! bits on some tools, no unversioned `libX.so` names for the linker, and no `libcuda.so` (the
//! driver library, which a build machine without a GPU does not have).

use std::path::Path;

use vouch_core::Platform;

use crate::target::{self, Machine};
use crate::{ToolchainError, io};

/// Fixes up a `platform` toolkit. A Windows tree needs nothing: its runtime ships the
/// `cuda.lib` import library the link step reads, and Windows has no execute bits or sonames.
/// `tree` is the whole unpacked toolchain, `cuda_path` the CUDA toolkit inside it.
pub fn fix_tree(tree: &Path, cuda_path: &Path, platform: Platform) -> Result<(), ToolchainError> {
    if !target::is_linux(platform) {
        return Ok(());
    }
    for dir in ["bin", "nvvm/bin"] {
        make_executable(&cuda_path.join(dir))?;
    }
    for dir in ["lib", "lib64"] {
        unversioned_links(&cuda_path.join(dir))?;
    }
    // The libraries beside the toolkit (cuTENSOR's `cutensor/lib`, NCCL's `nvidia/nccl/lib`)
    // ship only `libX.so.N` too, and a CuPy build links them with `-lX`.
    for e in walkdir::WalkDir::new(tree)
        .max_depth(3)
        .into_iter()
        .filter_map(Result::ok)
    {
        if e.file_type().is_dir() && matches!(e.file_name().to_str(), Some("lib" | "lib64")) {
            unversioned_links(e.path())?;
        }
    }
    let lib = cuda_path.join("lib");
    let has_stub = ["lib/stubs/libcuda.so", "lib64/stubs/libcuda.so"]
        .iter()
        .any(|p| cuda_path.join(p).exists());
    if lib.is_dir() && !has_stub {
        let stubs = lib.join("stubs");
        if Platform::host() == Some(platform) {
            stub_library(&stubs, "cuda", 1)?;
        } else if let Machine::Elf(machine) = Machine::of(platform) {
            // Another machine's stub: the host's C compiler cannot make it, and a cross
            // compiler would be one more tool to trust for a few fixed bytes.
            std::fs::create_dir_all(&stubs).map_err(io(&stubs))?;
            let path = stubs.join("libcuda.so");
            std::fs::write(
                &path,
                crate::elfstub::shared_library(machine, "libcuda.so.1"),
            )
            .map_err(io(&path))?;
        }
    }
    Ok(())
}

/// Execute bits only exist on POSIX; [`vouch_core::host::set_executable`] does nothing on
/// Windows, where `.exe` alone makes a program.
fn make_executable(dir: &Path) -> Result<(), ToolchainError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    for e in entries {
        let e = e.map_err(io(dir))?;
        let path = e.path();
        let ft = e.file_type().map_err(io(&path))?;
        let is_data = path
            .extension()
            .is_some_and(|x| x == "profile" || x == "h" || x == "txt");
        if ft.is_file() && !is_data {
            vouch_core::host::set_executable(&path, true).map_err(io(&path))?;
        }
    }
    Ok(())
}

/// `libcudart.so.13` -> also `libcudart.so`, pointing at the shortest versioned name.
fn unversioned_links(dir: &Path) -> Result<(), ToolchainError> {
    let Ok(entries) = std::fs::read_dir(dir) else {
        return Ok(());
    };
    let mut names: Vec<String> = entries
        .filter_map(|e| e.ok())
        .map(|e| e.file_name().to_string_lossy().into_owned())
        .collect();
    names.sort_by_key(|n| (n.len(), n.clone()));
    for name in &names {
        let Some((base, version)) = name.split_once(".so.") else {
            continue;
        };
        if version.is_empty()
            || !version
                .split('.')
                .all(|p| p.bytes().all(|b| b.is_ascii_digit()))
        {
            continue;
        }
        let link = dir.join(format!("{base}.so"));
        if link.symlink_metadata().is_ok() {
            continue;
        }
        #[cfg(unix)]
        std::os::unix::fs::symlink(name, &link).map_err(io(&link))?;
        #[cfg(not(unix))]
        std::fs::copy(dir.join(name), &link).map_err(io(&link))?;
    }
    Ok(())
}

/// Builds an empty shared library `lib<name>.so` with soname `lib<name>.so.<soversion>`: enough
/// for `-l<name>` to link; the real library is loaded at run time on the GPU machine.
pub fn stub_library(dir: &Path, name: &str, soversion: u32) -> Result<(), ToolchainError> {
    std::fs::create_dir_all(dir).map_err(io(dir))?;
    let src = dir.join(format!("lib{name}-stub.c"));
    std::fs::write(&src, "/* link-time stub made by vouch */\n").map_err(io(&src))?;
    let out = dir.join(format!("lib{name}.so"));
    // CC may carry a launcher or flags (`ccache gcc`): the first word is the program.
    let cc = std::env::var("CC").ok().filter(|c| !c.trim().is_empty());
    let words: Vec<String> = cc
        .as_deref()
        .unwrap_or("cc")
        .split_whitespace()
        .map(str::to_owned)
        .collect();
    let mut cmd = crate::scrubbed(&words[0]);
    cmd.args(&words[1..])
        .args(["-shared", "-nostdlib"])
        .arg(format!("-Wl,-soname,lib{name}.so.{soversion}"))
        .arg("-o")
        .arg(&out)
        .arg(&src);
    crate::run(cmd, &format!("building the lib{name}.so stub")).map_err(|e| match e {
        ToolchainError::Command { output_tail, .. } => ToolchainError::Stub {
            name: name.to_owned(),
            output_tail,
        },
        other => other,
    })?;
    std::fs::remove_file(&src).map_err(io(&src))?;
    Ok(())
}
