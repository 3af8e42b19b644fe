//! AMD HSA code objects: the `NT_AMDGPU_METADATA` note (MessagePack,
//! `amdhsa.kernels`) of an ELF built for `amdgcn-amd-amdhsa`.

use super::msgpack::{self, Value};
use super::{ArgMeta, KernelMeta};

/// `EM_AMDGPU`.
const EM_AMDGPU: u16 = 0xe0;
/// `NT_AMDGPU_METADATA`.
const NT_AMDGPU_METADATA: u32 = 32;
const SHT_NOTE: u32 = 7;
const PT_NOTE: u32 = 4;

/// What the metadata note of an HSA code object says.
#[derive(Clone, Debug, PartialEq)]
pub struct AmdCodeObject {
    /// `amdhsa.target`, e.g. `amdgcn-amd-amdhsa--gfx942:sramecc+:xnack-` (empty if absent).
    pub target: String,
    /// `amdhsa.version`, e.g. `[1, 2]` for code object v5.
    pub version: Vec<u64>,
    /// One entry per kernel, in metadata order.
    pub kernels: Vec<KernelMeta>,
}

impl AmdCodeObject {
    /// The processor of [`AmdCodeObject::target`] without features, e.g. `gfx942`.
    pub fn processor(&self) -> Option<&str> {
        // `<arch>-<vendor>-<os>-<env>-<processor>[:<feature>±]*`
        let proc_and_features = self.target.splitn(5, '-').nth(4)?;
        let p = proc_and_features.split(':').next()?;
        p.starts_with("gfx").then_some(p)
    }
}

struct Elf<'a> {
    data: &'a [u8],
}

impl<'a> Elf<'a> {
    fn u16(&self, off: usize) -> Result<u16, String> {
        self.data
            .get(off..off + 2)
            .map(|b| u16::from_le_bytes([b[0], b[1]]))
            .ok_or_else(|| format!("ELF truncated at {off:#x}"))
    }
    fn u32(&self, off: usize) -> Result<u32, String> {
        self.data
            .get(off..off + 4)
            .map(|b| u32::from_le_bytes(b.try_into().unwrap()))
            .ok_or_else(|| format!("ELF truncated at {off:#x}"))
    }
    fn u64(&self, off: usize) -> Result<u64, String> {
        self.data
            .get(off..off + 8)
            .map(|b| u64::from_le_bytes(b.try_into().unwrap()))
            .ok_or_else(|| format!("ELF truncated at {off:#x}"))
    }
    fn range(&self, off: u64, size: u64) -> Result<&'a [u8], String> {
        let (o, s) = (off as usize, size as usize);
        o.checked_add(s)
            .and_then(|e| self.data.get(o..e))
            .ok_or_else(|| {
                format!(
                    "ELF range {off:#x}+{size:#x} beyond the file ({} bytes)",
                    self.data.len()
                )
            })
    }
    /// Byte offsets of the entries of a header table (sections or segments)
    /// whose offset, entry size and count the ELF header holds at `off_at`,
    /// `size_at` and `count_at`; none when the table is absent or its entries
    /// are shorter than `min_size`.
    fn table(&self, off_at: usize, size_at: usize, count_at: usize, min_size: u64) -> Result<Vec<usize>, String> {
        let off = self.u64(off_at)?;
        let size = self.u16(size_at)? as u64;
        let count = self.u16(count_at)? as u64;
        if off == 0 || size < min_size {
            return Ok(Vec::new());
        }
        Ok((0..count).map(|i| (off + i * size) as usize).collect())
    }
    /// Note segments: from section headers (SHT_NOTE), else program headers (PT_NOTE).
    fn note_blobs(&self) -> Result<Vec<&'a [u8]>, String> {
        let mut out = Vec::new();
        // Section headers: sh_type at 4, sh_offset at 0x18, sh_size at 0x20.
        for h in self.table(0x28, 0x3a, 0x3c, 0x40)? {
            if self.u32(h + 4)? == SHT_NOTE {
                out.push(self.range(self.u64(h + 0x18)?, self.u64(h + 0x20)?)?);
            }
        }
        if out.is_empty() {
            // Program headers: p_type at 0, p_offset at 8, p_filesz at 0x20.
            for h in self.table(0x20, 0x36, 0x38, 0x38)? {
                if self.u32(h)? == PT_NOTE {
                    out.push(self.range(self.u64(h + 8)?, self.u64(h + 0x20)?)?);
                }
            }
        }
        Ok(out)
    }
}

fn align4(n: usize) -> usize {
    (n + 3) & !3
}

/// Finds the `AMDGPU` / `NT_AMDGPU_METADATA` note's descriptor.
fn metadata_note(image: &[u8]) -> Result<&[u8], String> {
    if image.len() < 0x40 || &image[..4] != b"\x7fELF" {
        return Err("not an ELF file (an AMD code object must be an HSA ELF)".into());
    }
    if image[4] != 2 || image[5] != 1 {
        return Err("not a little-endian ELF64 file".into());
    }
    let elf = Elf { data: image };
    let machine = elf.u16(0x12)?;
    if machine != EM_AMDGPU {
        return Err(format!("ELF machine {machine:#x} is not EM_AMDGPU (0xe0)"));
    }
    for blob in elf.note_blobs()? {
        let mut p = 0usize;
        while p + 12 <= blob.len() {
            let namesz = u32::from_le_bytes(blob[p..p + 4].try_into().unwrap()) as usize;
            let descsz = u32::from_le_bytes(blob[p + 4..p + 8].try_into().unwrap()) as usize;
            let ty = u32::from_le_bytes(blob[p + 8..p + 12].try_into().unwrap());
            let name_at = p + 12;
            let desc_at = name_at + align4(namesz);
            let next = desc_at + align4(descsz);
            if desc_at + descsz > blob.len() {
                return Err("ELF note runs past its section".into());
            }
            let name = &blob[name_at..name_at + namesz];
            let name = name.strip_suffix(b"\0").unwrap_or(name);
            if name == b"AMDGPU" && ty == NT_AMDGPU_METADATA {
                return Ok(&blob[desc_at..desc_at + descsz]);
            }
            p = next;
        }
    }
    Err("no AMDGPU metadata note (NT_AMDGPU_METADATA, code object v3+) in the ELF".into())
}

/// Parses the kernel metadata of an HSA code object.
pub fn parse(image: &[u8]) -> Result<AmdCodeObject, String> {
    let desc = metadata_note(image)?;
    let root = msgpack::decode(desc)?;
    let target = root
        .get("amdhsa.target")
        .and_then(Value::as_str)
        .unwrap_or("")
        .to_string();
    let version = root
        .get("amdhsa.version")
        .and_then(Value::as_array)
        .map(|v| v.iter().filter_map(Value::as_u64).collect())
        .unwrap_or_default();
    let kernels = root
        .get("amdhsa.kernels")
        .and_then(Value::as_array)
        .ok_or("metadata has no amdhsa.kernels array")?;
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        let name = k
            .get(".name")
            .and_then(Value::as_str)
            .ok_or("a kernel without .name")?
            .to_string();
        let num = |key: &str| k.get(key).and_then(Value::as_u64);
        let mut args = Vec::new();
        for a in k.get(".args").and_then(Value::as_array).unwrap_or(&[]) {
            args.push(ArgMeta {
                name: a.get(".name").and_then(Value::as_str).map(str::to_string),
                offset: a
                    .get(".offset")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("{name}: arg without .offset"))?,
                size: a
                    .get(".size")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| format!("{name}: arg without .size"))?,
                kind: a
                    .get(".value_kind")
                    .and_then(Value::as_str)
                    .ok_or_else(|| format!("{name}: arg without .value_kind"))?
                    .to_string(),
            });
        }
        out.push(KernelMeta {
            symbol: k.get(".symbol").and_then(Value::as_str).map(str::to_string),
            kernarg_size: num(".kernarg_segment_size"),
            static_lds_bytes: num(".group_segment_fixed_size"),
            private_bytes: num(".private_segment_fixed_size"),
            max_threads: num(".max_flat_workgroup_size"),
            required_threads: k
                .get(".reqd_workgroup_size")
                .and_then(Value::as_array)
                .map(|v| v.iter().filter_map(Value::as_u64).product()),
            wave_size: num(".wavefront_size"),
            sgprs: num(".sgpr_count"),
            vgprs: num(".vgpr_count"),
            spills: num(".vgpr_spill_count").unwrap_or(0) + num(".sgpr_spill_count").unwrap_or(0),
            name,
            args,
        });
    }
    Ok(AmdCodeObject {
        target,
        version,
        kernels: out,
    })
}

/// Builds a minimal HSA-like ELF holding `metadata` as its AMDGPU note (for tests).
pub fn build_test_elf(metadata: &Value) -> Vec<u8> {
    let mut desc = Vec::new();
    msgpack::encode(metadata, &mut desc);
    let mut note = Vec::new();
    note.extend_from_slice(&7u32.to_le_bytes());
    note.extend_from_slice(&(desc.len() as u32).to_le_bytes());
    note.extend_from_slice(&NT_AMDGPU_METADATA.to_le_bytes());
    note.extend_from_slice(b"AMDGPU\0\0");
    note.extend_from_slice(&desc);
    while note.len() % 4 != 0 {
        note.push(0);
    }
    // ELF header (0x40) + note + 2 section headers (null, .note).
    let note_off = 0x40u64;
    let shoff = note_off + note.len() as u64;
    let shoff = (shoff + 7) & !7;
    let mut e = vec![0u8; 0x40];
    e[..4].copy_from_slice(b"\x7fELF");
    e[4] = 2; // ELFCLASS64
    e[5] = 1; // little-endian
    e[6] = 1; // version
    e[7] = 64; // ELFOSABI_AMDGPU_HSA
    e[0x10..0x12].copy_from_slice(&3u16.to_le_bytes()); // ET_DYN
    e[0x12..0x14].copy_from_slice(&EM_AMDGPU.to_le_bytes());
    e[0x14..0x18].copy_from_slice(&1u32.to_le_bytes());
    e[0x28..0x30].copy_from_slice(&shoff.to_le_bytes());
    e[0x34..0x36].copy_from_slice(&0x40u16.to_le_bytes()); // ehsize
    e[0x3a..0x3c].copy_from_slice(&0x40u16.to_le_bytes()); // shentsize
    e[0x3c..0x3e].copy_from_slice(&2u16.to_le_bytes()); // shnum
    e.extend_from_slice(&note);
    e.resize(shoff as usize, 0);
    e.extend_from_slice(&[0u8; 0x40]); // null section
    let mut sh = [0u8; 0x40];
    sh[4..8].copy_from_slice(&SHT_NOTE.to_le_bytes());
    sh[0x18..0x20].copy_from_slice(&note_off.to_le_bytes());
    sh[0x20..0x28].copy_from_slice(&(note.len() as u64).to_le_bytes());
    e.extend_from_slice(&sh);
    e
}

/// The metadata of one kernel in the shape LLVM writes it (for tests):
/// `args` are `(offset, size, value_kind)`.
pub fn test_kernel_metadata(name: &str, args: &[(u64, u64, &str)], kernarg_size: u64) -> Value {
    let s = |x: &str| Value::Str(x.to_string());
    let i = |x: u64| Value::Int(x as i128);
    Value::Map(vec![
        (s(".name"), s(name)),
        (s(".symbol"), s(&format!("{name}.kd"))),
        (s(".kernarg_segment_size"), i(kernarg_size)),
        (s(".group_segment_fixed_size"), i(0)),
        (s(".private_segment_fixed_size"), i(0)),
        (s(".max_flat_workgroup_size"), i(256)),
        (s(".wavefront_size"), i(64)),
        (s(".sgpr_count"), i(24)),
        (s(".vgpr_count"), i(40)),
        (
            s(".args"),
            Value::Array(
                args.iter()
                    .map(|&(o, z, k)| {
                        Value::Map(vec![
                            (s(".offset"), i(o)),
                            (s(".size"), i(z)),
                            (s(".value_kind"), s(k)),
                            (s(".address_space"), s("generic")),
                        ])
                    })
                    .collect(),
            ),
        ),
    ])
}

/// A whole metadata document for `target` (e.g. `gfx942`) with `kernels` (for tests).
pub fn test_metadata(target: &str, kernels: Vec<Value>) -> Value {
    let s = |x: &str| Value::Str(x.to_string());
    Value::Map(vec![
        (
            s("amdhsa.version"),
            Value::Array(vec![Value::Int(1), Value::Int(2)]),
        ),
        (
            s("amdhsa.target"),
            s(&format!("amdgcn-amd-amdhsa--{target}")),
        ),
        (s("amdhsa.kernels"), Value::Array(kernels)),
    ])
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_synthetic_code_object() {
        let md = test_metadata(
            "gfx942:sramecc+:xnack-",
            vec![
                test_kernel_metadata("k1", &[(0, 8, "global_buffer")], 8),
                test_kernel_metadata("k2", &[(0, 8, "global_buffer"), (8, 4, "by_value")], 16),
            ],
        );
        let co = parse(&build_test_elf(&md)).unwrap();
        assert_eq!(co.processor(), Some("gfx942"));
        assert_eq!(co.version, vec![1, 2]);
        assert_eq!(co.kernels.len(), 2);
        assert_eq!(co.kernels[0].name, "k1");
        assert_eq!(co.kernels[0].symbol.as_deref(), Some("k1.kd"));
        assert_eq!(co.kernels[1].args[1].kind, "by_value");
        assert_eq!(co.kernels[0].max_threads, Some(256));
    }

    #[test]
    fn rejects_non_elf() {
        assert!(
            parse(b"// PTX\n.version 8.0")
                .unwrap_err()
                .contains("not an ELF")
        );
    }
}
