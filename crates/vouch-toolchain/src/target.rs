//! What differs between the platforms a toolkit is laid out for: the wheel tags pip may pick,
//! the machine its programs are built for, and how the build links the CUDA driver.
//!
//! A toolkit for another platform than the host is laid out the same way (hash checks,
//! unpacking, fix-ups, layout check); only running its `nvcc` is left out.

use vouch_core::Platform;

/// The newest glibc a Linux toolkit wheel may need: the manylinux_2_28 container the Linux cells
/// build in. The pins name exact files, so the tags only have to admit them.
const MANYLINUX_GLIBC_MINOR: u32 = 28;

pub fn is_linux(platform: Platform) -> bool {
    matches!(platform, Platform::Linux64 | Platform::LinuxAarch64)
}

/// `--platform` tags for `pip download`: pip before 24 does not widen a `manylinux_2_28` tag to
/// the older ones, and NVIDIA's wheels carry anything from `manylinux1` to `manylinux_2_27`, so
/// every tag up to the container's glibc is listed. Passed on the host too, so every host
/// resolves the same files.
pub fn pip_platforms(platform: Platform) -> Vec<String> {
    let arch = match platform {
        Platform::Linux64 => "x86_64",
        Platform::LinuxAarch64 => "aarch64",
        Platform::Win64 => return vec!["win_amd64".to_owned()],
    };
    let mut tags: Vec<String> = (5..=MANYLINUX_GLIBC_MINOR)
        .rev()
        .map(|minor| format!("manylinux_2_{minor}_{arch}"))
        .collect();
    // The legacy aliases of manylinux_2_17, _2_12 and _2_5.
    tags.push(format!("manylinux2014_{arch}"));
    if platform == Platform::Linux64 {
        tags.push(format!("manylinux2010_{arch}"));
        tags.push(format!("manylinux1_{arch}"));
    }
    tags
}

/// The machine a toolkit's programs must be built for, as executable headers name it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Machine {
    /// ELF `e_machine`.
    Elf(u16),
    /// PE/COFF `Machine`.
    Pe(u16),
}

pub const EM_X86_64: u16 = 62;
pub const EM_AARCH64: u16 = 183;
pub const IMAGE_FILE_MACHINE_AMD64: u16 = 0x8664;

impl Machine {
    pub fn of(platform: Platform) -> Machine {
        match platform {
            Platform::Linux64 => Machine::Elf(EM_X86_64),
            Platform::LinuxAarch64 => Machine::Elf(EM_AARCH64),
            Platform::Win64 => Machine::Pe(IMAGE_FILE_MACHINE_AMD64),
        }
    }

    /// What `readelf -h` / `dumpbin` would call it.
    pub fn name(self) -> String {
        match self {
            Machine::Elf(EM_X86_64) => "ELF x86-64".to_owned(),
            Machine::Elf(EM_AARCH64) => "ELF AArch64".to_owned(),
            Machine::Pe(IMAGE_FILE_MACHINE_AMD64) => "PE x64".to_owned(),
            Machine::Elf(m) => format!("ELF machine {m}"),
            Machine::Pe(m) => format!("PE machine {m:#06x}"),
        }
    }
}

/// The compiler driver's file name in `bin/`.
pub fn nvcc_name(platform: Platform) -> &'static str {
    if is_linux(platform) {
        "nvcc"
    } else {
        "nvcc.exe"
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pip_tags_admit_every_tag_nvidia_ships_and_nothing_newer_than_the_container() {
        let arm = pip_platforms(Platform::LinuxAarch64);
        for tag in [
            "manylinux_2_27_aarch64",
            "manylinux_2_17_aarch64",
            "manylinux2014_aarch64",
        ] {
            assert!(arm.contains(&tag.to_owned()), "{tag} missing from {arm:?}");
        }
        assert!(!arm.iter().any(|t| t.contains("x86_64")), "{arm:?}");
        assert!(!arm.contains(&"manylinux_2_29_aarch64".to_owned()));
        let x86 = pip_platforms(Platform::Linux64);
        for tag in [
            "manylinux1_x86_64",
            "manylinux2010_x86_64",
            "manylinux_2_28_x86_64",
        ] {
            assert!(x86.contains(&tag.to_owned()), "{tag} missing from {x86:?}");
        }
        assert_eq!(pip_platforms(Platform::Win64), ["win_amd64"]);
    }
}
