//! Toolkits for another platform than the host, laid out here from small synthetic archives
//! shaped like NVIDIA's redistributables: the sha256 check, the unpacking (tar.xz for Linux,
//! zip for Windows), the fix-ups (an ELF link stub of the target's machine) and the layout check
//! (machines read from the executables' header bytes, not by `readelf`).

use std::io::Write as _;
use std::path::{Path, PathBuf};

use sha2::{Digest as _, Sha256};
use vouch_core::Platform;
use vouch_profile::{Archive, Toolchain};
use vouch_toolchain::layout::{elf_machine, machine_of};
use vouch_toolchain::target::{EM_AARCH64, EM_X86_64, IMAGE_FILE_MACHINE_AMD64, Machine};
use vouch_toolchain::{Request, ToolchainError, install};

/// An ELF header of `machine`: what the layout check reads of `nvcc`.
fn elf(machine: u16) -> Vec<u8> {
    let mut b = vec![0u8; 64];
    b[..4].copy_from_slice(b"\x7fELF");
    b[4] = 2; // 64-bit
    b[5] = 1; // little-endian
    b[6] = 1;
    b[16] = 2; // ET_EXEC
    b[18..20].copy_from_slice(&machine.to_le_bytes());
    b
}

/// A PE header of `machine`.
fn pe(machine: u16) -> Vec<u8> {
    let mut b = vec![0u8; 0x100];
    b[..2].copy_from_slice(b"MZ");
    b[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
    b[0x80..0x84].copy_from_slice(b"PE\0\0");
    b[0x84..0x86].copy_from_slice(&machine.to_le_bytes());
    b
}

fn sha256(path: &Path) -> String {
    hex::encode(Sha256::digest(std::fs::read(path).unwrap()))
}

/// `<top>/<member>` entries in a `.tar.xz`, as NVIDIA's Linux archives are.
fn tar_xz(path: &Path, top: &str, members: &[(&str, &[u8], u32)]) {
    let file = std::fs::File::create(path).unwrap();
    let mut tar = tar::Builder::new(liblzma::write::XzEncoder::new(file, 6));
    for (name, data, mode) in members {
        let mut h = tar::Header::new_gnu();
        h.set_size(data.len() as u64);
        h.set_mode(*mode);
        h.set_cksum();
        tar.append_data(&mut h, format!("{top}/{name}"), *data)
            .unwrap();
    }
    tar.into_inner().unwrap().finish().unwrap();
}

/// `<top>/<member>` entries in a `.zip`, as NVIDIA's Windows archives are.
fn zip(path: &Path, top: &str, members: &[(&str, &[u8])]) {
    let mut z = zip::ZipWriter::new(std::fs::File::create(path).unwrap());
    for (name, data) in members {
        z.start_file(
            format!("{top}/{name}"),
            zip::write::SimpleFileOptions::default(),
        )
        .unwrap();
        z.write_all(data).unwrap();
    }
    z.finish().unwrap();
}

fn request<'a>(
    spec: &'a Toolchain,
    platform: Platform,
    profile_dir: &'a Path,
    cache: &'a Path,
) -> Request<'a> {
    Request {
        spec,
        platform,
        profile_dir,
        cache_dir: cache,
        name: "cuda-test",
        python: Path::new("python3-is-not-needed-for-archives"),
        progress: None,
        seal_key: None,
    }
}

fn archives(dir: &Path, files: &[PathBuf]) -> Toolchain {
    Toolchain {
        wheels: None,
        root: None,
        archives: files
            .iter()
            .map(|f| Archive {
                url: f.file_name().unwrap().to_string_lossy().into_owned(),
                sha256: sha256(&dir.join(f)),
            })
            .collect(),
    }
}

#[test]
fn linux_aarch64_toolkit_from_archives_is_laid_out_with_an_aarch64_link_stub() {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("cuda_nvcc-linux-sbsa-1.0-archive.tar.xz");
    tar_xz(
        &nvcc,
        "cuda_nvcc-linux-sbsa-1.0-archive",
        &[
            // No execute bit, as some archives and wheels ship tools.
            ("bin/nvcc", &elf(EM_AARCH64), 0o644),
            ("nvvm/bin/cicc", &elf(EM_AARCH64), 0o644),
        ],
    );
    let cudart = dir.path().join("cuda_cudart-linux-sbsa-1.0-archive.tar.xz");
    tar_xz(
        &cudart,
        "cuda_cudart-linux-sbsa-1.0-archive",
        &[
            ("include/cuda_runtime.h", b"#pragma once\n", 0o644),
            ("lib/libcudart.so.12", &elf(EM_AARCH64), 0o755),
        ],
    );
    let spec = archives(dir.path(), &[nvcc, cudart]);
    let cache = dir.path().join("cache");
    let got = install(&request(&spec, Platform::LinuxAarch64, dir.path(), &cache)).unwrap();

    assert_eq!(got.platform, "linux-aarch64");
    assert_eq!(got.machine.as_deref(), Some("ELF AArch64"));
    // An aarch64 nvcc is never run on this x86_64 (or any non-aarch64) host.
    if Platform::host() != Some(Platform::LinuxAarch64) {
        assert_eq!(got.nvcc, None);
    }
    let cuda = &got.cuda_path;
    assert_eq!(
        machine_of(&cuda.join("bin/nvcc")).unwrap(),
        Some(Machine::Elf(EM_AARCH64))
    );
    #[cfg(unix)]
    {
        use std::os::unix::fs::PermissionsExt as _;
        let mode = std::fs::metadata(cuda.join("nvvm/bin/cicc"))
            .unwrap()
            .permissions()
            .mode();
        assert_eq!(mode & 0o111, 0o111, "cicc made executable: {mode:o}");
    }
    assert_eq!(
        std::fs::read_link(cuda.join("lib/libcudart.so")).unwrap(),
        Path::new("libcudart.so.12")
    );
    // The link stub is an aarch64 shared object named libcuda.so.1, whatever the host.
    if Platform::host() != Some(Platform::LinuxAarch64) {
        let stub = std::fs::read(cuda.join("lib/stubs/libcuda.so")).unwrap();
        assert_eq!(elf_machine(&stub), Some(EM_AARCH64));
        assert_eq!(u16::from_le_bytes([stub[16], stub[17]]), 3, "ET_DYN");
        let soname = b"\0libcuda.so.1\0";
        assert!(stub.windows(soname.len()).any(|w| w == soname));
    }
    assert_eq!(got.components.len(), 2);

    // The same pins again: the sealed tree is reused after its check.
    let again = install(&request(&spec, Platform::LinuxAarch64, dir.path(), &cache)).unwrap();
    assert!(again.reused);
    assert_eq!(again.machine.as_deref(), Some("ELF AArch64"));
}

#[test]
fn windows_toolkit_from_zip_archives_is_laid_out_in_the_windows_layout() {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("cuda_nvcc-windows-x86_64-1.0-archive.zip");
    zip(
        &nvcc,
        "cuda_nvcc-windows-x86_64-1.0-archive",
        &[("bin/nvcc.exe", &pe(IMAGE_FILE_MACHINE_AMD64))],
    );
    let cudart = dir
        .path()
        .join("cuda_cudart-windows-x86_64-1.0-archive.zip");
    zip(
        &cudart,
        "cuda_cudart-windows-x86_64-1.0-archive",
        &[
            ("include/cuda_runtime.h", b"#pragma once\n"),
            ("lib/x64/cudart.lib", b"!<arch>\n"),
            ("lib/x64/cuda.lib", b"!<arch>\n"),
            ("bin/cudart64_12.dll", &pe(IMAGE_FILE_MACHINE_AMD64)),
        ],
    );
    let spec = archives(dir.path(), &[nvcc, cudart]);
    let got = install(&request(
        &spec,
        Platform::Win64,
        dir.path(),
        &dir.path().join("cache"),
    ))
    .unwrap();
    assert_eq!(got.machine.as_deref(), Some("PE x64"));
    assert_eq!(got.nvcc, None);
    let cuda = &got.cuda_path;
    assert!(cuda.join("lib/x64/cudart.lib").is_file());
    // Windows links cuda.lib: no ELF stub, no .so links.
    assert!(!cuda.join("lib/stubs").exists());
    assert_eq!(got.library_path(), vec![cuda.join("lib").join("x64")]);
}

#[test]
fn a_toolkit_whose_nvcc_is_for_another_machine_is_refused() {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("cuda_nvcc-linux-sbsa-1.0-archive.tar.xz");
    tar_xz(
        &nvcc,
        "cuda_nvcc-linux-sbsa-1.0-archive",
        &[
            // An x86-64 nvcc in what the profile calls the aarch64 toolkit.
            ("bin/nvcc", &elf(EM_X86_64), 0o755),
            ("include/cuda_runtime.h", b"", 0o644),
            ("lib/libcudart.so.12", b"", 0o644),
        ],
    );
    let spec = archives(dir.path(), &[nvcc]);
    let cache = dir.path().join("cache");
    let err = install(&request(&spec, Platform::LinuxAarch64, dir.path(), &cache)).unwrap_err();
    let text = err.to_string();
    assert!(matches!(err, ToolchainError::Layout(_)), "{text}");
    assert!(
        text.contains("is ELF x86-64, but a linux-aarch64 toolkit needs ELF AArch64"),
        "{text}"
    );
    // Nothing half-made is left to be reused.
    let left: Vec<_> = std::fs::read_dir(cache.join("toolchains"))
        .unwrap()
        .map(|e| e.unwrap().file_name().to_string_lossy().into_owned())
        .filter(|n| !n.ends_with(".lock"))
        .collect();
    assert!(left.is_empty(), "{left:?}");
}

#[test]
fn a_windows_tree_without_lib_x64_fails_the_layout_check() {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("cuda_nvcc-windows-x86_64-1.0-archive.zip");
    // Linux-style lib/ in a Windows toolkit.
    zip(
        &nvcc,
        "cuda_nvcc-windows-x86_64-1.0-archive",
        &[
            ("bin/nvcc.exe", &pe(IMAGE_FILE_MACHINE_AMD64)),
            ("include/cuda_runtime.h", b""),
            ("lib/cudart.lib", b""),
        ],
    );
    let spec = archives(dir.path(), &[nvcc]);
    let err = install(&request(
        &spec,
        Platform::Win64,
        dir.path(),
        &dir.path().join("cache"),
    ))
    .unwrap_err()
    .to_string();
    assert!(
        err.contains("has no library directory (lib/x64/), as a win-64 toolkit must"),
        "{err}"
    );
}

#[test]
fn a_foreign_archive_with_the_wrong_sha256_is_refused_before_unpacking() {
    let dir = tempfile::tempdir().unwrap();
    let nvcc = dir.path().join("cuda_nvcc-linux-sbsa-1.0-archive.tar.xz");
    tar_xz(
        &nvcc,
        "cuda_nvcc-linux-sbsa-1.0-archive",
        &[("bin/nvcc", &elf(EM_AARCH64), 0o755)],
    );
    let mut spec = archives(dir.path(), &[nvcc]);
    let good = spec.archives[0].sha256.clone();
    spec.archives[0].sha256 = "0".repeat(64);
    let err = install(&request(
        &spec,
        Platform::LinuxAarch64,
        dir.path(),
        &dir.path().join("cache"),
    ))
    .unwrap_err();
    match err {
        ToolchainError::Digest {
            expected, actual, ..
        } => {
            assert_eq!(expected, "0".repeat(64));
            assert_eq!(actual, good);
        }
        other => panic!("expected a digest error, got {other}"),
    }
}
