//! A link-time stub shared library written directly as ELF bytes, for a Linux toolkit of another
//! machine than the host: `-lcuda` needs a `libcuda.so` of the target's machine with the right
//! soname, and nothing else (the driver is loaded at run time on the GPU machine).
//!
//! Writing it needs no cross compiler and gives the same bytes on every host. The file has what
//! a linker reads from a shared library: a dynamic section with `DT_SONAME`, an empty dynamic
//! symbol table with its string table and hash table, and the section headers that name them.

/// Little-endian ELF64 (x86-64 and AArch64 Linux are both).
struct Out(Vec<u8>);

impl Out {
    fn u16(&mut self, v: u16) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u32(&mut self, v: u32) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn u64(&mut self, v: u64) {
        self.0.extend_from_slice(&v.to_le_bytes());
    }
    fn align(&mut self, to: usize) {
        while !self.0.len().is_multiple_of(to) {
            self.0.push(0);
        }
    }
    fn at(&self) -> u64 {
        self.0.len() as u64
    }
}

const EHDR: u64 = 64;
const PHDR: u64 = 56;
const SHDR: u64 = 64;
const SYM: u64 = 24;
const DYN: u64 = 16;

const PT_LOAD: u32 = 1;
const PT_DYNAMIC: u32 = 2;
const SHT_STRTAB: u32 = 3;
const SHT_HASH: u32 = 5;
const SHT_DYNAMIC: u32 = 6;
const SHT_DYNSYM: u32 = 11;
const SHF_WRITE: u64 = 1;
const SHF_ALLOC: u64 = 2;
const DT_NULL: u64 = 0;
const DT_HASH: u64 = 4;
const DT_STRTAB: u64 = 5;
const DT_SYMTAB: u64 = 6;
const DT_STRSZ: u64 = 10;
const DT_SYMENT: u64 = 11;
const DT_SONAME: u64 = 14;

/// The bytes of an empty ELF64 little-endian shared library for `machine` (`e_machine`) whose
/// soname is `soname`. Addresses equal file offsets; one read-write segment maps it all.
pub fn shared_library(machine: u16, soname: &str) -> Vec<u8> {
    let phoff = EHDR;
    let hash_off = phoff + 2 * PHDR;
    let hash_size = 16; // nbucket = 1, nchain = 1, bucket[0] = 0, chain[0] = 0
    let dynsym_off = hash_off + hash_size;
    let dynstr_off = dynsym_off + SYM;
    let dynstr: Vec<u8> = [&[0u8][..], soname.as_bytes(), &[0]].concat();
    let dynamic_off = (dynstr_off + dynstr.len() as u64).next_multiple_of(8);
    let dynamic: [(u64, u64); 7] = [
        (DT_HASH, hash_off),
        (DT_STRTAB, dynstr_off),
        (DT_SYMTAB, dynsym_off),
        (DT_STRSZ, dynstr.len() as u64),
        (DT_SYMENT, SYM),
        (DT_SONAME, 1),
        (DT_NULL, 0),
    ];
    let dynamic_size = DYN * dynamic.len() as u64;
    let loaded_end = dynamic_off + dynamic_size;
    let names = ["", ".hash", ".dynsym", ".dynstr", ".dynamic", ".shstrtab"];
    let mut shstrtab = Vec::new();
    let mut name_at = Vec::new();
    for n in names {
        name_at.push(shstrtab.len() as u32);
        shstrtab.extend_from_slice(n.as_bytes());
        shstrtab.push(0);
    }
    let shstrtab_off = loaded_end;
    let shoff = (shstrtab_off + shstrtab.len() as u64).next_multiple_of(8);

    let mut o = Out(Vec::with_capacity(shoff as usize + 6 * SHDR as usize));
    // ELF header: 64-bit, little-endian, version 1, System V ABI, ET_DYN.
    o.0.extend_from_slice(&[0x7f, b'E', b'L', b'F', 2, 1, 1, 0]);
    o.0.extend_from_slice(&[0; 8]);
    o.u16(3);
    o.u16(machine);
    o.u32(1);
    o.u64(0); // e_entry
    o.u64(phoff);
    o.u64(shoff);
    o.u32(0); // e_flags
    o.u16(EHDR as u16);
    o.u16(PHDR as u16);
    o.u16(2);
    o.u16(SHDR as u16);
    o.u16(names.len() as u16);
    o.u16(names.len() as u16 - 1); // e_shstrndx: .shstrtab, the last section

    // Program headers: p_type, p_flags, p_offset, p_vaddr, p_paddr, p_filesz, p_memsz, p_align.
    let phdr = |o: &mut Out, kind: u32, off: u64, size: u64, align: u64| {
        o.u32(kind);
        o.u32(4 | 2); // PF_R | PF_W
        o.u64(off);
        o.u64(off);
        o.u64(off);
        o.u64(size);
        o.u64(size);
        o.u64(align);
    };
    phdr(&mut o, PT_LOAD, 0, loaded_end, 0x10000);
    phdr(&mut o, PT_DYNAMIC, dynamic_off, dynamic_size, 8);

    debug_assert_eq!(o.at(), hash_off);
    for word in [1u32, 1, 0, 0] {
        o.u32(word);
    }
    debug_assert_eq!(o.at(), dynsym_off);
    o.0.extend_from_slice(&[0; SYM as usize]); // the null symbol, and no other
    o.0.extend_from_slice(&dynstr);
    o.align(8);
    debug_assert_eq!(o.at(), dynamic_off);
    for (tag, value) in dynamic {
        o.u64(tag);
        o.u64(value);
    }
    o.0.extend_from_slice(&shstrtab);
    o.align(8);
    debug_assert_eq!(o.at(), shoff);

    // Section headers: name, type, flags, addr, offset, size, link, info, addralign, entsize.
    #[allow(clippy::too_many_arguments)]
    fn shdr(
        o: &mut Out,
        name: u32,
        kind: u32,
        flags: u64,
        addr: u64,
        size: u64,
        link: u32,
        info: u32,
        align: u64,
        entsize: u64,
    ) {
        o.u32(name);
        o.u32(kind);
        o.u64(flags);
        o.u64(addr);
        o.u64(addr);
        o.u64(size);
        o.u32(link);
        o.u32(info);
        o.u64(align);
        o.u64(entsize);
    }
    o.0.extend_from_slice(&[0; SHDR as usize]);
    let a = SHF_ALLOC;
    shdr(
        &mut o, name_at[1], SHT_HASH, a, hash_off, hash_size, 2, 0, 8, 4,
    );
    shdr(
        &mut o, name_at[2], SHT_DYNSYM, a, dynsym_off, SYM, 3, 1, 8, SYM,
    );
    let strsz = dynstr.len() as u64;
    shdr(
        &mut o, name_at[3], SHT_STRTAB, a, dynstr_off, strsz, 0, 0, 1, 0,
    );
    let wa = SHF_WRITE | SHF_ALLOC;
    shdr(
        &mut o,
        name_at[4],
        SHT_DYNAMIC,
        wa,
        dynamic_off,
        dynamic_size,
        3,
        0,
        8,
        DYN,
    );
    // .shstrtab is not loaded: its address is 0.
    o.u32(name_at[5]);
    o.u32(SHT_STRTAB);
    o.u64(0);
    o.u64(0);
    o.u64(shstrtab_off);
    o.u64(shstrtab.len() as u64);
    o.u32(0);
    o.u32(0);
    o.u64(1);
    o.u64(0);
    o.0
}

#[cfg(test)]
mod tests {
    use super::shared_library;
    use crate::layout::elf_machine;
    use crate::target::{EM_AARCH64, EM_X86_64};

    #[test]
    fn header_names_the_machine_and_a_shared_object() {
        let so = shared_library(EM_AARCH64, "libcuda.so.1");
        assert_eq!(&so[..4], b"\x7fELF");
        assert_eq!(u16::from_le_bytes([so[16], so[17]]), 3, "ET_DYN");
        assert_eq!(elf_machine(&so), Some(EM_AARCH64));
        let needle = b"\0libcuda.so.1\0";
        assert!(so.windows(needle.len()).any(|w| w == needle));
        // The same bytes every time: nothing of the host goes in.
        assert_eq!(so, shared_library(EM_AARCH64, "libcuda.so.1"));
        assert_ne!(so, shared_library(EM_X86_64, "libcuda.so.1"));
    }

    /// The host's own linker takes the stub for `-lcuda` and records its soname: evidence that the
    /// layout is one a linker reads (the aarch64 stub differs only in `e_machine`).
    #[cfg(all(target_os = "linux", target_arch = "x86_64"))]
    #[test]
    fn the_host_linker_links_against_the_stub_and_records_its_soname() {
        let dir = tempfile::tempdir().unwrap();
        let stubs = dir.path().join("stubs");
        std::fs::create_dir_all(&stubs).unwrap();
        std::fs::write(
            stubs.join("libcuda.so"),
            shared_library(EM_X86_64, "libcuda.so.1"),
        )
        .unwrap();
        let src = dir.path().join("ext.c");
        std::fs::write(
            &src,
            "int cuInit(unsigned);\nint f(void) { return cuInit(0); }\n",
        )
        .unwrap();
        let out = dir.path().join("ext.so");
        let status = std::process::Command::new("cc")
            .args(["-shared", "-fPIC", "-Wl,--no-as-needed", "-o"])
            .arg(&out)
            .arg(&src)
            .arg("-L")
            .arg(&stubs)
            .arg("-lcuda")
            .output()
            .expect("cc");
        assert!(
            status.status.success(),
            "{}",
            String::from_utf8_lossy(&status.stderr)
        );
        // The name can only come from the stub's DT_SONAME, recorded as the module's DT_NEEDED.
        let linked = std::fs::read(&out).unwrap();
        let needle = b"\0libcuda.so.1\0";
        assert!(linked.windows(needle.len()).any(|w| w == needle));
    }
}
