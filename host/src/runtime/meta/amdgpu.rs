//! AMD HSA code objects: the `NT_AMDGPU_METADATA` note (MessagePack,
//! `amdhsa.kernels`) of an ELF built for `amdgcn-amd-amdhsa`.

use object::elf::{EM_AMDGPU, FileHeader64, SHT_NOTE};
use object::read::elf::{FileHeader, NoteIterator, ProgramHeader, SectionHeader};
use object::LittleEndian;
use rmpv::Value;

use super::{ArgMeta, KernelMeta};

/// `NT_AMDGPU_METADATA` (not among `object`'s constants).
const NT_AMDGPU_METADATA: u32 = 32;

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

/// The `AMDGPU` / `NT_AMDGPU_METADATA` descriptor among `notes`, if any.
fn find_note<'a>(mut notes: NoteIterator<'a, FileHeader64<LittleEndian>>) -> Result<Option<&'a [u8]>, String> {
    while let Some(n) = notes.next().map_err(|e| format!("ELF note: {e}"))? {
        if n.name() == b"AMDGPU" && n.n_type(LittleEndian) == NT_AMDGPU_METADATA {
            return Ok(Some(n.desc()));
        }
    }
    Ok(None)
}

/// Finds the `AMDGPU` / `NT_AMDGPU_METADATA` note's descriptor: in the note
/// sections, else (no section headers) in the note segments.
fn metadata_note(image: &[u8]) -> Result<&[u8], String> {
    if image.len() < 0x40 || &image[..4] != b"\x7fELF" {
        return Err("not an ELF file (an AMD code object must be an HSA ELF)".into());
    }
    if image[4] != 2 || image[5] != 1 {
        return Err("not a little-endian ELF64 file".into());
    }
    let e = LittleEndian;
    let header = FileHeader64::<LittleEndian>::parse(image).map_err(|x| format!("ELF header: {x}"))?;
    let machine = header.e_machine(e);
    if machine != EM_AMDGPU {
        return Err(format!("ELF machine {machine:#x} is not EM_AMDGPU (0xe0)"));
    }
    // Raw section headers: notes need no section names (string table).
    let sections = header.section_headers(e, image).map_err(|x| format!("ELF sections: {x}"))?;
    let mut any_section_note = false;
    for s in sections.iter().filter(|s| s.sh_type(e) == SHT_NOTE) {
        any_section_note = true;
        let notes = s.notes(e, image).map_err(|x| format!("ELF note section: {x}"))?;
        if let Some(d) = notes.map(find_note).transpose()?.flatten() {
            return Ok(d);
        }
    }
    if !any_section_note {
        for p in header.program_headers(e, image).map_err(|x| format!("ELF program headers: {x}"))? {
            let notes = p.notes(e, image).map_err(|x| format!("ELF note segment: {x}"))?;
            if let Some(d) = notes.map(find_note).transpose()?.flatten() {
                return Ok(d);
            }
        }
    }
    Err("no AMDGPU metadata note (NT_AMDGPU_METADATA, code object v3+) in the ELF".into())
}

/// `map[key]` for a string key (MessagePack maps keep their encoded order).
fn get<'a>(map: &'a Value, key: &str) -> Option<&'a Value> {
    map.as_map()?.iter().find(|(k, _)| k.as_str() == Some(key)).map(|(_, v)| v)
}

fn as_array(v: &Value) -> Option<&[Value]> {
    v.as_array().map(Vec::as_slice)
}

/// The unsigned integers of an array (other elements skipped).
fn u64s(v: &[Value]) -> Vec<u64> {
    v.iter().filter_map(Value::as_u64).collect()
}

/// Parses the kernel metadata of an HSA code object.
pub fn parse(image: &[u8]) -> Result<AmdCodeObject, String> {
    let mut desc = metadata_note(image)?;
    // One value; trailing bytes are ignored.
    let root = rmpv::decode::read_value(&mut desc).map_err(|e| format!("msgpack: {e}"))?;
    let str_of = |v: &Value, key: &str| get(v, key).and_then(Value::as_str).map(str::to_string);
    let kernels = get(&root, "amdhsa.kernels")
        .and_then(as_array)
        .ok_or("metadata has no amdhsa.kernels array")?;
    let mut out = Vec::with_capacity(kernels.len());
    for k in kernels {
        let name = str_of(k, ".name").ok_or("a kernel without .name")?;
        let num = |key: &str| get(k, key).and_then(Value::as_u64);
        let mut args = Vec::new();
        for a in get(k, ".args").and_then(as_array).unwrap_or(&[]) {
            let missing = |key: &str| format!("{name}: arg without {key}");
            let u = |key: &str| get(a, key).and_then(Value::as_u64).ok_or_else(|| missing(key));
            args.push(ArgMeta {
                name: str_of(a, ".name"),
                offset: u(".offset")?,
                size: u(".size")?,
                kind: str_of(a, ".value_kind").ok_or_else(|| missing(".value_kind"))?,
            });
        }
        out.push(KernelMeta {
            symbol: str_of(k, ".symbol"),
            kernarg_size: num(".kernarg_segment_size"),
            static_lds_bytes: num(".group_segment_fixed_size"),
            private_bytes: num(".private_segment_fixed_size"),
            max_threads: num(".max_flat_workgroup_size"),
            required_threads: get(k, ".reqd_workgroup_size").and_then(as_array).map(|v| u64s(v).iter().product()),
            wave_size: num(".wavefront_size"),
            sgprs: num(".sgpr_count"),
            vgprs: num(".vgpr_count"),
            spills: num(".vgpr_spill_count").unwrap_or(0) + num(".sgpr_spill_count").unwrap_or(0),
            name,
            args,
        });
    }
    Ok(AmdCodeObject {
        target: str_of(&root, "amdhsa.target").unwrap_or_default(),
        version: get(&root, "amdhsa.version").and_then(as_array).map(u64s).unwrap_or_default(),
        kernels: out,
    })
}

/// Builds a minimal HSA-like ELF holding `metadata` as its AMDGPU note (for tests).
pub fn build_test_elf(metadata: &Value) -> Vec<u8> {
    let mut desc = Vec::new();
    rmpv::encode::write_value(&mut desc, metadata).expect("writing to a Vec");
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
    let shoff = (note_off + note.len() as u64 + 7) & !7;
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
    let s = |x: &str| Value::from(x);
    let i = Value::from;
    let arg = |&(o, z, k): &(u64, u64, &str)| {
        Value::Map(vec![(s(".offset"), i(o)), (s(".size"), i(z)), (s(".value_kind"), s(k)), (s(".address_space"), s("generic"))])
    };
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
        (s(".args"), Value::Array(args.iter().map(arg).collect())),
    ])
}

/// A whole metadata document for `target` (e.g. `gfx942`) with `kernels` (for tests).
pub fn test_metadata(target: &str, kernels: Vec<Value>) -> Value {
    Value::Map(vec![
        (Value::from("amdhsa.version"), Value::Array(vec![Value::from(1), Value::from(2)])),
        (Value::from("amdhsa.target"), Value::from(format!("amdgcn-amd-amdhsa--{target}"))),
        (Value::from("amdhsa.kernels"), Value::Array(kernels)),
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
