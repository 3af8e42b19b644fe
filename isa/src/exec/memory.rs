//! Checked memories: flat global memory made of host-allocated buffers (bounds and
//! written-ness per byte) and a workgroup's LDS.

use std::collections::BTreeMap;

/// Why an access failed.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Fault {
    /// No buffer holds the range.
    OutOfBounds {
        addr: u64,
        len: usize,
        near: Option<(String, u64, usize)>,
    },
    /// A byte of the range was never written (neither by the host nor by a kernel).
    Unwritten {
        addr: u64,
        len: usize,
        buffer: String,
        offset: usize,
    },
}

impl std::fmt::Display for Fault {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            Fault::OutOfBounds {
                addr,
                len,
                near: Some((n, base, size)),
            } => write!(
                f,
                "out-of-bounds access of {len} bytes at 0x{addr:x} (nearest buffer `{n}` is 0x{base:x}..0x{:x}, offset {})",
                base + *size as u64,
                *addr as i128 - *base as i128
            ),
            Fault::OutOfBounds {
                addr,
                len,
                near: None,
            } => write!(
                f,
                "out-of-bounds access of {len} bytes at 0x{addr:x} (no buffer)"
            ),
            Fault::Unwritten {
                addr,
                len,
                buffer,
                offset,
            } => {
                write!(
                    f,
                    "read of {len} bytes at 0x{addr:x} (buffer `{buffer}` offset {offset}) that were never written"
                )
            }
        }
    }
}

/// One allocation.
#[derive(Clone, Debug)]
pub struct Buffer {
    /// Name used in reports.
    pub name: String,
    /// Contents.
    pub data: Vec<u8>,
    /// Per byte: has it been written?
    pub written: Vec<bool>,
}

/// Global memory: buffers at disjoint addresses with unmapped gaps between them.
#[derive(Clone, Debug, Default)]
pub struct Memory {
    bufs: BTreeMap<u64, Buffer>,
    next: u64,
}

/// First address handed out; small addresses stay unmapped so null pointers fault.
const BASE: u64 = 0x1_0000_0000;
/// Unmapped bytes between two buffers.
const GAP: u64 = 0x1_0000;

impl Memory {
    /// Empty memory.
    pub fn new() -> Self {
        Memory {
            bufs: BTreeMap::new(),
            next: BASE,
        }
    }

    /// Allocates `size` bytes (unwritten) and returns the device address.
    pub fn alloc(&mut self, name: &str, size: usize) -> u64 {
        if self.next == 0 {
            self.next = BASE;
        }
        let addr = self.next;
        self.next = (addr + size as u64 + GAP).next_multiple_of(GAP);
        self.bufs.insert(
            addr,
            Buffer {
                name: name.to_string(),
                data: vec![0; size],
                written: vec![false; size],
            },
        );
        addr
    }

    /// Allocates a buffer holding `bytes` (written).
    pub fn upload(&mut self, name: &str, bytes: &[u8]) -> u64 {
        let a = self.alloc(name, bytes.len());
        let b = self.bufs.get_mut(&a).unwrap();
        b.data.copy_from_slice(bytes);
        b.written.fill(true);
        a
    }

    /// Frees a buffer.
    pub fn free(&mut self, addr: u64) {
        self.bufs.remove(&addr);
    }

    fn locate(&self, addr: u64, len: usize) -> Result<(u64, usize), Fault> {
        if let Some((&base, b)) = self.bufs.range(..=addr).next_back() {
            let off = (addr - base) as usize;
            if off + len <= b.data.len() {
                return Ok((base, off));
            }
        }
        let near = self
            .bufs
            .iter()
            .min_by_key(|(b, buf)| {
                let end = **b + buf.data.len() as u64;
                if addr < **b {
                    **b - addr
                } else {
                    addr.saturating_sub(end)
                }
            })
            .map(|(b, buf)| (buf.name.clone(), *b, buf.data.len()));
        Err(Fault::OutOfBounds { addr, len, near })
    }

    /// A device read: bounds and written-ness checked.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), Fault> {
        let (base, off) = self.locate(addr, out.len())?;
        let b = &self.bufs[&base];
        if let Some(k) = b.written[off..off + out.len()].iter().position(|w| !w) {
            return Err(Fault::Unwritten {
                addr,
                len: out.len(),
                buffer: b.name.clone(),
                offset: off + k,
            });
        }
        out.copy_from_slice(&b.data[off..off + out.len()]);
        Ok(())
    }

    /// A device write: bounds checked, bytes become written.
    pub fn write(&mut self, addr: u64, data: &[u8]) -> Result<(), Fault> {
        let (base, off) = self.locate(addr, data.len())?;
        let b = self.bufs.get_mut(&base).unwrap();
        b.data[off..off + data.len()].copy_from_slice(data);
        b.written[off..off + data.len()].fill(true);
        Ok(())
    }

    /// Host view of a buffer by its address (whole contents, written or not).
    pub fn buffer(&self, addr: u64) -> Option<&Buffer> {
        self.bufs.get(&addr)
    }

    /// Host read of `len` bytes of a buffer.
    pub fn download(&self, addr: u64, len: usize) -> Vec<u8> {
        let (base, off) = self.locate(addr, len).expect("download out of bounds");
        self.bufs[&base].data[off..off + len].to_vec()
    }
}

/// A workgroup's LDS, with written-ness per byte.
#[derive(Clone, Debug)]
pub struct Lds {
    /// Contents.
    pub data: Vec<u8>,
    /// Per byte: written?
    pub written: Vec<bool>,
}

impl Lds {
    /// `size` bytes, unwritten.
    pub fn new(size: usize) -> Self {
        Lds {
            data: vec![0; size],
            written: vec![false; size],
        }
    }
    /// Checked read.
    pub fn read(&self, addr: u64, out: &mut [u8]) -> Result<(), String> {
        let a = addr as usize;
        if addr > u32::MAX as u64 || a + out.len() > self.data.len() {
            return Err(format!(
                "LDS access of {} bytes at offset {addr} outside the {} bytes allocated",
                out.len(),
                self.data.len()
            ));
        }
        if let Some(k) = self.written[a..a + out.len()].iter().position(|w| !w) {
            return Err(format!(
                "read of LDS bytes {}..{} that were never written (first: {})",
                a,
                a + out.len(),
                a + k
            ));
        }
        out.copy_from_slice(&self.data[a..a + out.len()]);
        Ok(())
    }
    /// Checked write.
    pub fn write(&mut self, addr: u64, bytes: &[u8]) -> Result<(), String> {
        let a = addr as usize;
        if addr > u32::MAX as u64 || a + bytes.len() > self.data.len() {
            return Err(format!(
                "LDS access of {} bytes at offset {addr} outside the {} bytes allocated",
                bytes.len(),
                self.data.len()
            ));
        }
        self.data[a..a + bytes.len()].copy_from_slice(bytes);
        self.written[a..a + bytes.len()].fill(true);
        Ok(())
    }
}
