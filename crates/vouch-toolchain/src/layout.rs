//! The check an unpacked toolkit must pass before a build may use it: the compiler driver, the
//! runtime headers and the runtime library where the target platform's layout puts them
//! (Linux: `bin/nvcc`, `lib` or `lib64`; Windows: `bin/nvcc.exe`, `lib/x64`), and `nvcc` built
//! for the target's machine, read from its executable header (no `readelf`, no running it).

use std::io::Read as _;
use std::path::Path;

use vouch_core::Platform;

use crate::target::{self, Machine};
use crate::{ToolchainError, io};

/// `e_machine` of an ELF image, honouring its byte order; `None` if it is not ELF.
pub fn elf_machine(head: &[u8]) -> Option<u16> {
    if head.len() < 20 || &head[..4] != b"\x7fELF" {
        return None;
    }
    let bytes = [head[18], head[19]];
    Some(match head[5] {
        1 => u16::from_le_bytes(bytes),
        2 => u16::from_be_bytes(bytes),
        _ => return None,
    })
}

/// `Machine` of a PE image (`MZ`, then `PE\0\0` at the offset stored at 0x3c); `None` if it is
/// not PE.
pub fn pe_machine(head: &[u8]) -> Option<u16> {
    if head.len() < 0x40 || &head[..2] != b"MZ" {
        return None;
    }
    let at = u32::from_le_bytes(head[0x3c..0x40].try_into().ok()?) as usize;
    let sig = head.get(at..at + 6)?;
    (&sig[..4] == b"PE\0\0").then(|| u16::from_le_bytes([sig[4], sig[5]]))
}

/// The machine an executable file is built for, from its first bytes.
pub fn machine_of(path: &Path) -> Result<Option<Machine>, ToolchainError> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(4096).read_to_end(&mut head))
        .map_err(io(path))?;
    Ok(elf_machine(&head)
        .map(Machine::Elf)
        .or_else(|| pe_machine(&head).map(Machine::Pe)))
}

/// Checks the toolkit at `cuda_path` for `platform`: the compiler driver, `include/` and the
/// library directory where that platform's layout has them, and the driver built for the
/// platform's machine. Returns that machine; `None` for a script standing in for `nvcc` (test
/// toolkits), which is accepted only in a toolkit for the host, where it can run.
pub fn check(cuda_path: &Path, platform: Platform) -> Result<Option<Machine>, ToolchainError> {
    let missing = |what: &str, rel: &str| {
        ToolchainError::Layout(format!(
            "{} has no {what} ({rel}), as a {platform} toolkit must",
            cuda_path.display()
        ))
    };
    let nvcc_rel = format!("bin/{}", target::nvcc_name(platform));
    let nvcc = cuda_path.join(&nvcc_rel);
    if !nvcc.is_file() {
        return Err(missing("compiler driver", &nvcc_rel));
    }
    if !cuda_path.join("include").is_dir() {
        return Err(missing("headers", "include/"));
    }
    if target::is_linux(platform) {
        if !["lib", "lib64"].iter().any(|d| cuda_path.join(d).is_dir()) {
            return Err(missing("library directory", "lib/ or lib64/"));
        }
    } else if !cuda_path.join("lib/x64").is_dir() {
        return Err(missing("library directory", "lib/x64/"));
    }
    let want = Machine::of(platform);
    match machine_of(&nvcc)? {
        Some(got) if got == want => Ok(Some(got)),
        None if Platform::host() == Some(platform) && starts_with(&nvcc, b"#!")? => Ok(None),
        got => Err(ToolchainError::Layout(format!(
            "{} is {}, but a {platform} toolkit needs {}",
            nvcc.display(),
            got.map_or_else(|| "no ELF or PE executable".to_owned(), Machine::name),
            want.name()
        ))),
    }
}

fn starts_with(path: &Path, magic: &[u8]) -> Result<bool, ToolchainError> {
    let mut head = Vec::new();
    std::fs::File::open(path)
        .and_then(|f| f.take(magic.len() as u64).read_to_end(&mut head))
        .map_err(io(path))?;
    Ok(head == magic)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::target::{EM_AARCH64, IMAGE_FILE_MACHINE_AMD64};

    fn pe(machine: u16) -> Vec<u8> {
        let mut b = vec![0u8; 0x90];
        b[..2].copy_from_slice(b"MZ");
        b[0x3c..0x40].copy_from_slice(&0x80u32.to_le_bytes());
        b[0x80..0x84].copy_from_slice(b"PE\0\0");
        b[0x84..0x86].copy_from_slice(&machine.to_le_bytes());
        b
    }

    #[test]
    fn headers_are_read_for_their_machine() {
        let elf = crate::elfstub::shared_library(EM_AARCH64, "x");
        assert_eq!(elf_machine(&elf), Some(EM_AARCH64));
        assert_eq!(pe_machine(&elf), None);
        assert_eq!(
            pe_machine(&pe(IMAGE_FILE_MACHINE_AMD64)),
            Some(IMAGE_FILE_MACHINE_AMD64)
        );
        assert_eq!(elf_machine(&pe(IMAGE_FILE_MACHINE_AMD64)), None);
        // Big-endian ELF: e_machine in its own byte order.
        let mut be = elf.clone();
        be[5] = 2;
        be[18..20].copy_from_slice(&EM_AARCH64.to_be_bytes());
        assert_eq!(elf_machine(&be), Some(EM_AARCH64));
        assert_eq!(elf_machine(b"#!/bin/sh\n"), None);
        // A PE offset pointing past the file is not a PE.
        let mut cut = pe(IMAGE_FILE_MACHINE_AMD64);
        cut.truncate(0x82);
        assert_eq!(pe_machine(&cut), None);
    }
}
