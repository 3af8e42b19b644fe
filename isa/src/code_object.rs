//! Loading an AMD HSA code object: the ELF, each kernel's code and `.kd` kernel
//! descriptor, and the `amdhsa.kernels` msgpack metadata.
//!
//! Layouts follow LLVM's AMDGPUUsage document ("Kernel Descriptor", "Code Object V3+
//! Metadata", "Initial Kernel Execution State"); nothing here is taken from a
//! loader's source.

use crate::Error;
use crate::arch::Arch;
use object::{Object, ObjectSection, ObjectSymbol, SymbolKind};
use std::collections::BTreeMap;

/// `NT_AMDGPU_METADATA`: the note (owner `AMDGPU`) holding the msgpack metadata.
const NT_AMDGPU_METADATA: u32 = 32;

/// The 64-byte kernel descriptor (`<kernel>.kd`), decoded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelDescriptor {
    /// Bytes of statically allocated LDS per workgroup (`GROUP_SEGMENT_FIXED_SIZE`).
    pub group_segment_fixed_size: u32,
    /// Scratch bytes per work-item (`PRIVATE_SEGMENT_FIXED_SIZE`).
    pub private_segment_fixed_size: u32,
    /// Size of the kernel argument segment in bytes (`KERNARG_SIZE`).
    pub kernarg_size: u32,
    /// Byte offset from the descriptor to the kernel's entry (`KERNEL_CODE_ENTRY_BYTE_OFFSET`).
    pub entry_byte_offset: i64,
    /// `COMPUTE_PGM_RSRC3` (gfx90a/gfx942: ACCUM_OFFSET, TG_SPLIT; GFX10+: SHARED_VGPR_COUNT...).
    pub rsrc3: u32,
    /// `COMPUTE_PGM_RSRC1`.
    pub rsrc1: u32,
    /// `COMPUTE_PGM_RSRC2`.
    pub rsrc2: u32,
    /// Kernel code properties (bits 447:432): which user SGPRs are set up, wave32.
    pub code_properties: u16,
    /// `KERNARG_PRELOAD` (bits 463:448: spec length 6:0, spec offset 15:7).
    pub kernarg_preload: u16,
}

/// User-SGPR inputs enabled by the kernel code properties, in the order the hardware
/// (packet processor) places them from s0 upwards.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum UserSgpr {
    /// 4 SGPRs: private segment buffer descriptor.
    PrivateSegmentBuffer,
    /// 2 SGPRs: dispatch packet address.
    DispatchPtr,
    /// 2 SGPRs: queue address.
    QueuePtr,
    /// 2 SGPRs: kernarg segment address.
    KernargSegmentPtr,
    /// 2 SGPRs: dispatch id.
    DispatchId,
    /// 2 SGPRs: flat scratch init.
    FlatScratchInit,
    /// 1 SGPR: private segment size.
    PrivateSegmentSize,
}

impl UserSgpr {
    /// Each input with its SGPR count, in kernel-code-property bit order (bit 0 first).
    const BY_BIT: [(UserSgpr, u32); 7] = [
        (UserSgpr::PrivateSegmentBuffer, 4),
        (UserSgpr::DispatchPtr, 2),
        (UserSgpr::QueuePtr, 2),
        (UserSgpr::KernargSegmentPtr, 2),
        (UserSgpr::DispatchId, 2),
        (UserSgpr::FlatScratchInit, 2),
        (UserSgpr::PrivateSegmentSize, 1),
    ];

    /// SGPRs the input takes.
    pub fn count(self) -> u32 {
        Self::BY_BIT
            .iter()
            .find(|(u, _)| *u == self)
            .map_or(0, |(_, n)| *n)
    }
}

impl KernelDescriptor {
    /// Decodes the 64 bytes of a `.kd` symbol.
    pub fn parse(b: &[u8]) -> Result<Self, Error> {
        if b.len() < 64 {
            return Err(Error::CodeObject(format!(
                "kernel descriptor of {} bytes (64 expected)",
                b.len()
            )));
        }
        let u32_at = |o: usize| u32::from_le_bytes(b[o..o + 4].try_into().unwrap());
        let u16_at = |o: usize| u16::from_le_bytes(b[o..o + 2].try_into().unwrap());
        Ok(KernelDescriptor {
            group_segment_fixed_size: u32_at(0),
            private_segment_fixed_size: u32_at(4),
            kernarg_size: u32_at(8),
            entry_byte_offset: i64::from_le_bytes(b[16..24].try_into().unwrap()),
            rsrc3: u32_at(44),
            rsrc1: u32_at(48),
            rsrc2: u32_at(52),
            code_properties: u16_at(56),
            kernarg_preload: u16_at(58),
        })
    }

    /// `GRANULATED_WORKITEM_VGPR_COUNT` (rsrc1 5:0).
    pub fn granulated_vgprs(&self) -> u32 {
        self.rsrc1 & 0x3f
    }
    /// `GRANULATED_WAVEFRONT_SGPR_COUNT` (rsrc1 9:6).
    pub fn granulated_sgprs(&self) -> u32 {
        (self.rsrc1 >> 6) & 0xf
    }
    /// rsrc1 `ENABLE_IEEE_MODE` (bit 23).
    pub fn ieee_mode(&self) -> bool {
        self.rsrc1 >> 23 & 1 != 0
    }
    /// rsrc1 `FLOAT_DENORM_MODE_32` (17:16): 3 = no flushing.
    pub fn denorm_mode_32(&self) -> u32 {
        (self.rsrc1 >> 16) & 3
    }
    /// rsrc2 `ENABLE_PRIVATE_SEGMENT` (bit 0): the kernel uses scratch.
    pub fn private_segment(&self) -> bool {
        self.rsrc2 & 1 != 0
    }
    /// rsrc2 `USER_SGPR_COUNT` (5:1).
    pub fn user_sgpr_count(&self) -> u32 {
        (self.rsrc2 >> 1) & 0x1f
    }
    /// rsrc2 `ENABLE_SGPR_WORKGROUP_ID_X/Y/Z` (bits 7, 8, 9).
    pub fn workgroup_id_enabled(&self) -> [bool; 3] {
        [
            self.rsrc2 >> 7 & 1 != 0,
            self.rsrc2 >> 8 & 1 != 0,
            self.rsrc2 >> 9 & 1 != 0,
        ]
    }
    /// rsrc2 `ENABLE_SGPR_WORKGROUP_INFO` (bit 10).
    pub fn workgroup_info_enabled(&self) -> bool {
        self.rsrc2 >> 10 & 1 != 0
    }
    /// rsrc2 `ENABLE_VGPR_WORKITEM_ID` (12:11): 0 = x, 1 = x,y, 2 = x,y,z.
    pub fn workitem_id_dims(&self) -> u32 {
        (self.rsrc2 >> 11) & 3
    }
    /// gfx90a/gfx942 rsrc3 `ACCUM_OFFSET` (5:0): first AccVGPR index = (value + 1) * 4
    /// in the unified register file.
    pub fn accum_offset(&self) -> u32 {
        ((self.rsrc3 & 0x3f) + 1) * 4
    }
    /// GFX10+ rsrc1 `WGP_MODE` (bit 29): a workgroup's waves may run on both CUs
    /// of a WGP (each with its own L0).
    pub fn wgp_mode(&self) -> bool {
        self.rsrc1 >> 29 & 1 != 0
    }
    /// Kernel code property `ENABLE_WAVEFRONT_SIZE32` (bit 10).
    pub fn wave32(&self) -> bool {
        self.code_properties >> 10 & 1 != 0
    }
    /// Kernel code property `USES_DYNAMIC_STACK` (bit 11).
    pub fn uses_dynamic_stack(&self) -> bool {
        self.code_properties >> 11 & 1 != 0
    }
    /// The user SGPRs enabled by the kernel code properties (bits 0..6), in order.
    pub fn user_sgprs(&self) -> Vec<UserSgpr> {
        (0..UserSgpr::BY_BIT.len())
            .filter(|b| self.code_properties >> b & 1 != 0)
            .map(|b| UserSgpr::BY_BIT[b].0)
            .collect()
    }
    /// Kernarg preload length in SGPRs (gfx940+; 0 elsewhere).
    pub fn kernarg_preload_len(&self) -> u32 {
        (self.kernarg_preload & 0x7f) as u32
    }
}

/// A kernel argument as the metadata describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelArg {
    /// `.offset` in the kernarg segment.
    pub offset: u32,
    /// `.size` in bytes.
    pub size: u32,
    /// `.value_kind` (`global_buffer`, `by_value`, `hidden_*`...).
    pub value_kind: String,
}

/// The parts of a kernel's `amdhsa.kernels` entry the executor needs.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct KernelMeta {
    /// `.name`.
    pub name: String,
    /// `.symbol` (`<name>.kd`).
    pub symbol: String,
    /// `.kernarg_segment_size`.
    pub kernarg_segment_size: u32,
    /// `.group_segment_fixed_size`.
    pub group_segment_fixed_size: u32,
    /// `.private_segment_fixed_size`.
    pub private_segment_fixed_size: u32,
    /// `.wavefront_size`.
    pub wavefront_size: u32,
    /// `.sgpr_count`.
    pub sgpr_count: u32,
    /// `.vgpr_count`.
    pub vgpr_count: u32,
    /// `.agpr_count` (CDNA).
    pub agpr_count: u32,
    /// `.max_flat_workgroup_size`.
    pub max_flat_workgroup_size: u32,
    /// `.args`.
    pub args: Vec<KernelArg>,
}

/// One kernel of a code object.
#[derive(Clone, Debug)]
pub struct Kernel {
    /// Symbol name of the entry point.
    pub name: String,
    /// Virtual address of the first instruction.
    pub entry: u64,
    /// The kernel's code bytes (the function symbol's size).
    pub code: Vec<u8>,
    /// Decoded `.kd`.
    pub descriptor: KernelDescriptor,
    /// Metadata entry (defaults if the note lacks one).
    pub meta: KernelMeta,
}

/// A loaded code object.
#[derive(Clone, Debug)]
pub struct CodeObject {
    /// Architecture from the ELF header's `e_flags`.
    pub arch: Arch,
    /// `amdhsa.target` from the metadata, if present.
    pub target: Option<String>,
    /// Kernels, sorted by name.
    pub kernels: Vec<Kernel>,
}

impl CodeObject {
    /// Parses an HSA code object (ELF64, machine EM_AMDGPU).
    pub fn parse(bytes: &[u8]) -> Result<CodeObject, Error> {
        let bad = |m: String| Error::CodeObject(m);
        let file = object::File::parse(bytes).map_err(|e| bad(format!("not an ELF file: {e}")))?;
        if bytes.len() < 64 || bytes[..4] != [0x7f, b'E', b'L', b'F'] || bytes[4] != 2 {
            return Err(bad("not an ELF64 file".into()));
        }
        let e_machine = u16::from_le_bytes([bytes[18], bytes[19]]);
        if e_machine != 224 {
            return Err(bad(format!("ELF machine {e_machine}, not EM_AMDGPU (224)")));
        }
        let e_flags = u32::from_le_bytes(bytes[48..52].try_into().unwrap());
        let arch = Arch::from_elf_mach(e_flags).ok_or_else(|| {
            bad(format!(
                "unsupported AMDGPU machine 0x{:x} in e_flags",
                e_flags & 0xff
            ))
        })?;

        // Bytes at a virtual address, from the section containing it.
        let read_at = |addr: u64, len: u64| -> Result<Vec<u8>, Error> {
            for s in file.sections() {
                let (a, sz) = (s.address(), s.size());
                if addr >= a && addr + len <= a + sz {
                    let data = s.data().map_err(|e| bad(format!("section data: {e}")))?;
                    let o = (addr - a) as usize;
                    if o + len as usize <= data.len() {
                        return Ok(data[o..o + len as usize].to_vec());
                    }
                }
            }
            Err(bad(format!("no section holds 0x{addr:x}..+{len}")))
        };

        let (meta, target) = match file.section_by_name(".note") {
            Some(s) => parse_metadata_notes(s.data().map_err(|e| bad(format!(".note: {e}")))?)?,
            None => (BTreeMap::new(), None),
        };

        let mut funcs = BTreeMap::new();
        let mut kds = BTreeMap::new();
        for sym in file.symbols().chain(file.dynamic_symbols()) {
            let Ok(name) = sym.name() else { continue };
            if let Some(k) = name.strip_suffix(".kd") {
                kds.insert(k.to_string(), (sym.address(), sym.size()));
            } else if sym.kind() == SymbolKind::Text {
                funcs.insert(name.to_string(), (sym.address(), sym.size()));
            }
        }
        let mut kernels = Vec::new();
        for (name, &(kd_addr, _)) in &kds {
            let descriptor = KernelDescriptor::parse(&read_at(kd_addr, 64)?)?;
            let entry = (kd_addr as i64 + descriptor.entry_byte_offset) as u64;
            let size = match funcs.get(name) {
                Some(&(a, s)) if a == entry => s,
                Some(&(a, _)) => {
                    return Err(bad(format!(
                        "kernel {name}: .kd entry 0x{entry:x} but symbol at 0x{a:x}"
                    )));
                }
                None => return Err(bad(format!("kernel {name}: no function symbol"))),
            };
            let code = read_at(entry, size)?;
            let meta = meta.get(name).cloned().unwrap_or_default();
            kernels.push(Kernel {
                name: name.clone(),
                entry,
                code,
                descriptor,
                meta,
            });
        }
        Ok(CodeObject {
            arch,
            target,
            kernels,
        })
    }

    /// Reads and parses a code object file.
    pub fn load(path: &std::path::Path) -> Result<CodeObject, Error> {
        let bytes = std::fs::read(path)
            .map_err(|e| Error::CodeObject(format!("{}: {e}", path.display())))?;
        Self::parse(&bytes)
    }

    /// A kernel by name.
    pub fn kernel(&self, name: &str) -> Option<&Kernel> {
        self.kernels.iter().find(|k| k.name == name)
    }
}

/// Walks ELF notes (namesz, descsz, type, name padded to 4, desc padded to 4) and
/// decodes the `AMDGPU` / `NT_AMDGPU_METADATA` one.
fn parse_metadata_notes(
    data: &[u8],
) -> Result<(BTreeMap<String, KernelMeta>, Option<String>), Error> {
    let mut o = 0usize;
    let rd = |o: usize| u32::from_le_bytes(data[o..o + 4].try_into().unwrap()) as usize;
    let pad = |n: usize| n.div_ceil(4) * 4;
    while o + 12 <= data.len() {
        let (namesz, descsz, ty) = (rd(o), rd(o + 4), rd(o + 8) as u32);
        let name = &data[o + 12..(o + 12 + namesz).min(data.len())];
        let d0 = o + 12 + pad(namesz);
        let desc = &data[d0.min(data.len())..(d0 + descsz).min(data.len())];
        if ty == NT_AMDGPU_METADATA && name.starts_with(b"AMDGPU") {
            return parse_metadata(desc);
        }
        o = d0 + pad(descsz);
    }
    Ok((BTreeMap::new(), None))
}

fn parse_metadata(desc: &[u8]) -> Result<(BTreeMap<String, KernelMeta>, Option<String>), Error> {
    use rmpv::Value;
    let mut rd = desc;
    let v = rmpv::decode::read_value(&mut rd)
        .map_err(|e| Error::CodeObject(format!("metadata msgpack: {e}")))?;
    let get = |m: &Value, k: &str| -> Option<Value> {
        m.as_map()?
            .iter()
            .find(|(kk, _)| kk.as_str() == Some(k))
            .map(|(_, v)| v.clone())
    };
    let num = |m: &Value, k: &str| get(m, k).and_then(|v| v.as_u64()).unwrap_or(0) as u32;
    let string = |m: &Value, k: &str| {
        get(m, k)
            .and_then(|v| v.as_str().map(str::to_string))
            .unwrap_or_default()
    };
    let target = get(&v, "amdhsa.target").and_then(|t| t.as_str().map(str::to_string));
    let mut out = BTreeMap::new();
    if let Some(Value::Array(ks)) = get(&v, "amdhsa.kernels") {
        for k in &ks {
            let args = match get(k, ".args") {
                Some(Value::Array(a)) => a
                    .iter()
                    .map(|a| KernelArg {
                        offset: num(a, ".offset"),
                        size: num(a, ".size"),
                        value_kind: string(a, ".value_kind"),
                    })
                    .collect(),
                _ => Vec::new(),
            };
            let m = KernelMeta {
                name: string(k, ".name"),
                symbol: string(k, ".symbol"),
                kernarg_segment_size: num(k, ".kernarg_segment_size"),
                group_segment_fixed_size: num(k, ".group_segment_fixed_size"),
                private_segment_fixed_size: num(k, ".private_segment_fixed_size"),
                wavefront_size: num(k, ".wavefront_size"),
                sgpr_count: num(k, ".sgpr_count"),
                vgpr_count: num(k, ".vgpr_count"),
                agpr_count: num(k, ".agpr_count"),
                max_flat_workgroup_size: num(k, ".max_flat_workgroup_size"),
                args,
            };
            out.insert(m.name.clone(), m);
        }
    }
    Ok((out, target))
}
