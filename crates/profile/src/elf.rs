//! Just enough of an ELF reader to tell whether a binary keeps frame pointers: the
//! header, the section table, the function symbols (static `.symtab` where the binary
//! is not stripped, else the dynamic `.dynsym` every shared object keeps), the first
//! bytes at each function's entry, and the libraries it names (`DT_NEEDED`).
//!
//! Hand-written rather than the `object` crate: it reads four tables of one format
//! (64-bit, little-endian), about 150 lines, and every read is bounded (section count,
//! bytes of symbol table, entries sampled) so a huge or hostile file costs a few
//! hundred small reads at most. Anything it does not understand is an [`ElfError`]
//! that the caller turns into "cannot tell", never a failure of the recording.

use std::fs::File;
use std::os::unix::fs::FileExt;
use std::path::Path;

/// Why a file could not be read as a 64-bit little-endian ELF.
#[derive(Debug, thiserror::Error)]
pub enum ElfError {
    #[error("cannot read it: {0}")]
    Io(#[from] std::io::Error),
    #[error("not an ELF file")]
    NotElf,
    #[error("{0}")]
    Unsupported(String),
    #[error("malformed ELF: {0}")]
    Malformed(&'static str),
}

/// The most sections read; real binaries have a few dozen.
const MAX_SECTIONS: usize = 1024;
/// The most bytes of one symbol table read (~350,000 symbols): a binary with debug
/// symbols can have far more, and a sample of them decides as well.
const MAX_SYMTAB_BYTES: u64 = 8 << 20;
/// The most bytes of `.dynamic` and of the string table read for `DT_NEEDED`.
const MAX_DYNAMIC_BYTES: u64 = 1 << 20;

const SHT_SYMTAB: u32 = 2;
const SHT_DYNAMIC: u32 = 6;
const SHT_NOBITS: u32 = 8;
const SHT_DYNSYM: u32 = 11;
const SHF_EXECINSTR: u64 = 0x4;
const STT_FUNC: u8 = 2;
const DT_NEEDED: u64 = 1;

/// The instruction set: only x86-64's prologue is recognised.
pub const EM_X86_64: u16 = 62;

#[derive(Debug, Clone, Copy)]
struct Section {
    kind: u32,
    flags: u64,
    addr: u64,
    offset: u64,
    size: u64,
    link: u32,
}

/// An open ELF file and its section table.
pub struct Elf {
    file: File,
    pub machine: u16,
    sections: Vec<Section>,
}

fn u16_at(b: &[u8], at: usize) -> u16 {
    u16::from_le_bytes([b[at], b[at + 1]])
}
fn u32_at(b: &[u8], at: usize) -> u32 {
    u32::from_le_bytes([b[at], b[at + 1], b[at + 2], b[at + 3]])
}
fn u64_at(b: &[u8], at: usize) -> u64 {
    let mut a = [0u8; 8];
    a.copy_from_slice(&b[at..at + 8]);
    u64::from_le_bytes(a)
}

impl Elf {
    /// Opens `path` and reads its header and section table.
    pub fn open(path: &Path) -> Result<Elf, ElfError> {
        let file = File::open(path)?;
        let mut h = [0u8; 64];
        file.read_exact_at(&mut h, 0)
            .map_err(|_| ElfError::NotElf)?;
        if &h[..4] != b"\x7fELF" {
            return Err(ElfError::NotElf);
        }
        if h[4] != 2 || h[5] != 1 {
            return Err(ElfError::Unsupported(
                "not a 64-bit little-endian ELF".into(),
            ));
        }
        let machine = u16_at(&h, 18);
        let shoff = u64_at(&h, 40);
        let shentsize = u16_at(&h, 58) as usize;
        let shnum = u16_at(&h, 60) as usize;
        if shnum == 0 || shoff == 0 {
            return Err(ElfError::Malformed("no section table"));
        }
        if !(64..=256).contains(&shentsize) || shnum > MAX_SECTIONS {
            return Err(ElfError::Malformed("section table out of bounds"));
        }
        let mut table = vec![0u8; shentsize * shnum];
        file.read_exact_at(&mut table, shoff)
            .map_err(|_| ElfError::Malformed("section table past the end"))?;
        let sections = table
            .chunks_exact(shentsize)
            .map(|s| Section {
                kind: u32_at(s, 4),
                flags: u64_at(s, 8),
                addr: u64_at(s, 16),
                offset: u64_at(s, 24),
                size: u64_at(s, 32),
                link: u32_at(s, 40),
            })
            .collect();
        Ok(Elf {
            file,
            machine,
            sections,
        })
    }

    fn read(&self, offset: u64, len: u64, cap: u64) -> Result<Vec<u8>, ElfError> {
        let mut b = vec![0u8; len.min(cap) as usize];
        self.file
            .read_exact_at(&mut b, offset)
            .map_err(|_| ElfError::Malformed("a table lies past the end of the file"))?;
        Ok(b)
    }

    /// Entry addresses of the defined functions in `.symtab`, else in `.dynsym`
    /// (a stripped binary), sorted and without duplicates (aliases share one).
    pub fn function_entries(&self) -> Result<Vec<u64>, ElfError> {
        let table = self
            .sections
            .iter()
            .find(|s| s.kind == SHT_SYMTAB)
            .or_else(|| self.sections.iter().find(|s| s.kind == SHT_DYNSYM))
            .ok_or(ElfError::Malformed("no symbol table"))?;
        let bytes = self.read(table.offset, table.size, MAX_SYMTAB_BYTES)?;
        let mut entries: Vec<u64> = bytes
            .chunks_exact(24)
            .filter(|s| s[4] & 0xf == STT_FUNC && u16_at(s, 6) != 0 && u64_at(s, 16) > 0)
            .map(|s| u64_at(s, 8))
            .collect();
        entries.sort_unstable();
        entries.dedup();
        Ok(entries)
    }

    /// The first bytes of the code at virtual address `addr` (None: not in an
    /// executable section of the file).
    pub fn code_at(&self, addr: u64, buf: &mut [u8]) -> Option<()> {
        let len = buf.len() as u64;
        let s = self.sections.iter().find(|s| {
            s.flags & SHF_EXECINSTR != 0
                && s.kind != SHT_NOBITS
                && addr
                    .checked_sub(s.addr)
                    .and_then(|at| at.checked_add(len))
                    .is_some_and(|end| end <= s.size)
        })?;
        let at = s.offset.checked_add(addr - s.addr)?;
        self.file.read_exact_at(buf, at).ok()
    }

    /// The libraries named by `DT_NEEDED`, in order (`libc.so.6`, ...).
    pub fn needed(&self) -> Vec<String> {
        let Some(dynamic) = self.sections.iter().find(|s| s.kind == SHT_DYNAMIC) else {
            return Vec::new();
        };
        let Some(strtab) = self.sections.get(dynamic.link as usize) else {
            return Vec::new();
        };
        let (Ok(d), Ok(strings)) = (
            self.read(dynamic.offset, dynamic.size, MAX_DYNAMIC_BYTES),
            self.read(strtab.offset, strtab.size, MAX_DYNAMIC_BYTES),
        ) else {
            return Vec::new();
        };
        d.chunks_exact(16)
            .filter(|e| u64_at(e, 0) == DT_NEEDED)
            .filter_map(|e| {
                let at = usize::try_from(u64_at(e, 8)).ok()?;
                let rest = strings.get(at..)?;
                let end = rest.iter().position(|b| *b == 0)?;
                String::from_utf8(rest[..end].to_vec()).ok()
            })
            .collect()
    }
}
