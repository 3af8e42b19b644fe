//! AMD code objects: the `NT_AMDGPU_METADATA` note (msgpack) read straight from
//! the ELF, and the occupancy its resources allow.

use super::manifest::{AmdResources, KernArg};
use super::{Arch, ArchReport};
use anyhow::{Context, Result, bail};
use serde_json::{Map, Value};

/// Reads the kernels' resources from a code object and builds the arch's entries.
pub fn read_back(arch: Arch, elf: &[u8]) -> Result<ArchReport> {
    let md = metadata(elf)?;
    let target = md
        .get("amdhsa.target")
        .and_then(Value::as_str)
        .unwrap_or("");
    if !target.contains(arch.name) {
        bail!("code object is for `{target}`, expected {}", arch.name);
    }
    let kernels = md
        .get("amdhsa.kernels")
        .and_then(Value::as_array)
        .context("no amdhsa.kernels in the metadata")?;
    let by_name: Vec<(String, &Map<String, Value>)> = kernels
        .iter()
        .filter_map(|k| {
            let k = k.as_object()?;
            Some((k.get(".name")?.as_str()?.to_string(), k))
        })
        .collect();
    let names: Vec<String> = by_name.iter().map(|(n, _)| n.clone()).collect();
    let (present, missing, unlisted) = super::classify(arch, &names);
    let mut out = Vec::new();
    for inst in present {
        let k = by_name
            .iter()
            .find(|(n, _)| n == inst.name)
            .map(|(_, k)| *k)
            .expect("present");
        let mut e = super::entry(arch, inst);
        let u = |key: &str| k.get(key).and_then(Value::as_u64).unwrap_or(0) as u32;
        let args = k
            .get(".args")
            .and_then(Value::as_array)
            .map(|a| {
                a.iter()
                    .filter_map(Value::as_object)
                    .map(|a| KernArg {
                        offset: a.get(".offset").and_then(Value::as_u64).unwrap_or(0) as u32,
                        size: a.get(".size").and_then(Value::as_u64).unwrap_or(0) as u32,
                        value_kind: a
                            .get(".value_kind")
                            .and_then(Value::as_str)
                            .unwrap_or("?")
                            .to_string(),
                    })
                    .collect()
            })
            .unwrap_or_default();
        let wave = u(".wavefront_size");
        if wave != arch.family().wave() {
            bail!(
                "kernel {} was compiled for wave{wave}, family {} expects wave{}",
                inst.name,
                arch.family().cfg(),
                arch.family().wave()
            );
        }
        let static_lds = u(".group_segment_fixed_size");
        let (occ, limit) = occupancy(
            arch.name,
            wave,
            u(".vgpr_count"),
            u(".sgpr_count"),
            static_lds + e.lds_bytes,
            e.workgroup_size,
        );
        e.amdgpu = Some(AmdResources {
            vgpr_count: u(".vgpr_count"),
            agpr_count: u(".agpr_count"),
            sgpr_count: u(".sgpr_count"),
            scratch_bytes: u(".private_segment_fixed_size"),
            dynamic_stack: k
                .get(".uses_dynamic_stack")
                .and_then(Value::as_bool)
                .unwrap_or(false),
            vgpr_spill_count: u(".vgpr_spill_count"),
            sgpr_spill_count: u(".sgpr_spill_count"),
            static_lds_bytes: static_lds,
            kernarg_size: u(".kernarg_segment_size"),
            args,
            max_flat_workgroup_size: u(".max_flat_workgroup_size"),
            wavefront_size: wave,
            occupancy_waves_per_simd: occ,
            occupancy_limited_by: limit.into(),
        });
        out.push(e);
    }
    Ok(ArchReport {
        rebuilt: false,
        kernels: out,
        missing,
        unlisted,
    })
}

/// Register-file and CU geometry of an AMD target, for the occupancy estimate.
///
/// Figures follow LLVM's `AMDGPUBaseInfo.cpp` (`getTotalNumVGPRs`,
/// `getVGPRAllocGranule`, `getMaxWavesPerEU`, `getEUsPerCU`,
/// `getMaxWorkGroupsPerCU`) and AMDGPUUsage:
/// - gfx90a/gfx942/gfx950 (CDNA2/3/4): one unified 512-entry VGPR file per SIMD lane
///   shared by ArchVGPRs and AGPRs, allocation granule 8, at most 8 waves per
///   SIMD; 4 SIMDs and 64 KiB LDS per CU (gfx950: 160 KiB, LLVM
///   `FeatureAddressableLocalMemorySize163840`); SGPRs limit occupancy below 8 only
///   past 100 (gfx9 rule: <=80 -> 10, <=88 -> 9, <=100 -> 8, else 7).
/// - gfx1100 (RDNA3, Navi31, `FeatureGFX11FullVGPRs` / 1.5x VGPRs): 1536 VGPRs
///   per SIMD lane in wave32 (768 in wave64), granule 24 (12), at most 16 waves
///   per SIMD; kernels run in WGP mode (LLVM default: `cumode` off), so a
///   workgroup's "CU" is the WGP: 4 SIMD32s and 128 KiB LDS (64 KiB addressable
///   per workgroup; LLVM review D139468); SGPRs never limit on gfx10+.
/// - workgroups per CU: at most 16 barriers (32 in WGP mode) for workgroups of
///   more than one wave.
/// - LDS is allocated in 512-byte blocks (AMDGPUUsage: `GRANULATED_LDS_SIZE`).
struct Geometry {
    max_waves: u32,
    total_vgprs: u32,
    vgpr_granule: u32,
    simds: u32,
    lds_bytes: u32,
    gfx9_sgprs: bool,
    max_barriers: u32,
}

fn geometry(arch: &str, wave: u32) -> Option<Geometry> {
    match arch {
        "gfx90a" | "gfx942" | "gfx950" => Some(Geometry {
            max_waves: 8,
            total_vgprs: 512,
            vgpr_granule: 8,
            simds: 4,
            lds_bytes: if arch == "gfx950" { 160 << 10 } else { 64 << 10 },
            gfx9_sgprs: true,
            max_barriers: 16,
        }),
        // RDNA4 taken as RDNA3's WGP (LLVM gives gfx12 the same 1.5x VGPR
        // file); not measured on hardware.
        "gfx1100" | "gfx1200" | "gfx1201" => Some(Geometry {
            max_waves: 16,
            total_vgprs: if wave == 32 { 1536 } else { 768 },
            vgpr_granule: if wave == 32 { 24 } else { 12 },
            simds: 4,
            lds_bytes: 128 << 10,
            gfx9_sgprs: false,
            max_barriers: 32,
        }),
        _ => None,
    }
}

/// Waves per SIMD a kernel reaches with `vgprs` (unified VGPR+AGPR count on
/// gfx90a/gfx942, i.e. `.vgpr_count`), `sgprs` (`.sgpr_count`), `lds` bytes of
/// LDS (static + dynamic) and `threads` per workgroup; and what limits it.
pub fn occupancy(
    arch: &str,
    wave: u32,
    vgprs: u32,
    sgprs: u32,
    lds: u32,
    threads: u32,
) -> (u32, &'static str) {
    let Some(g) = geometry(arch, wave) else {
        return (0, "unknown arch");
    };
    let by_vgpr = if vgprs == 0 {
        g.max_waves
    } else {
        (g.total_vgprs / vgprs.next_multiple_of(g.vgpr_granule)).min(g.max_waves)
    };
    let by_sgpr = if !g.gfx9_sgprs {
        g.max_waves
    } else {
        (match sgprs {
            0..=80 => 10,
            81..=88 => 9,
            89..=100 => 8,
            _ => 7,
        })
        .min(g.max_waves)
    };
    let wg_waves = threads.div_ceil(wave).max(1);
    let wgs_by_regs = by_vgpr.min(by_sgpr) * g.simds / wg_waves;
    let wgs_by_lds = if lds == 0 {
        u32::MAX
    } else {
        g.lds_bytes / lds.next_multiple_of(512)
    };
    let wgs_max = if wg_waves == 1 {
        g.max_waves * g.simds
    } else {
        (g.max_waves * g.simds / wg_waves).min(g.max_barriers)
    };
    let waves = |wgs: u32| (wgs.saturating_mul(wg_waves) / g.simds).min(g.max_waves);
    // Ties go to the first: "max" when nothing holds the kernel below the hardware limit.
    let candidates = [
        (g.max_waves, "max"),
        (by_vgpr, "vgpr"),
        (by_sgpr, "sgpr"),
        (waves(wgs_by_regs), "vgpr"),
        (waves(wgs_by_lds), "lds"),
        (waves(wgs_max), "workgroup"),
    ];
    let (w, why) = candidates
        .iter()
        .copied()
        .min_by_key(|c| c.0)
        .expect("nonempty");
    (w, why)
}

/// The `NT_AMDGPU_METADATA` note of an AMD code object, decoded.
pub fn metadata(elf: &[u8]) -> Result<Map<String, Value>> {
    for (name, ty, desc) in notes(elf)? {
        if name == b"AMDGPU" && ty == 32 {
            let (v, _) = msgpack(desc, 0).context("decoding the AMDGPU metadata (msgpack)")?;
            return match v {
                Value::Object(m) => Ok(m),
                _ => bail!("AMDGPU metadata is not a map"),
            };
        }
    }
    bail!("no NT_AMDGPU_METADATA note (is this an HSA code object?)")
}

fn le_u16(b: &[u8], o: usize) -> Result<u16> {
    Ok(u16::from_le_bytes(
        b.get(o..o + 2).context("truncated ELF")?.try_into()?,
    ))
}
fn le_u32(b: &[u8], o: usize) -> Result<u32> {
    Ok(u32::from_le_bytes(
        b.get(o..o + 4).context("truncated ELF")?.try_into()?,
    ))
}
fn le_u64(b: &[u8], o: usize) -> Result<u64> {
    Ok(u64::from_le_bytes(
        b.get(o..o + 8).context("truncated ELF")?.try_into()?,
    ))
}

/// An ELF note: owner, type, descriptor.
type Note<'a> = (&'a [u8], u32, &'a [u8]);

/// Every note in the SHT_NOTE sections of a little-endian ELF64.
fn notes(elf: &[u8]) -> Result<Vec<Note<'_>>> {
    if !elf.starts_with(b"\x7fELF\x02\x01") {
        bail!("not a little-endian ELF64 file");
    }
    let shoff = le_u64(elf, 0x28)? as usize;
    let shentsize = le_u16(elf, 0x3a)? as usize;
    let shnum = le_u16(elf, 0x3c)? as usize;
    let mut out = Vec::new();
    for i in 0..shnum {
        let sh = shoff + i * shentsize;
        if le_u32(elf, sh + 4)? != 7 {
            continue; // SHT_NOTE
        }
        let off = le_u64(elf, sh + 0x18)? as usize;
        let size = le_u64(elf, sh + 0x20)? as usize;
        let sec = elf
            .get(off..off + size)
            .context("note section out of bounds")?;
        let mut p = 0;
        while p + 12 <= sec.len() {
            let namesz = le_u32(sec, p)? as usize;
            let descsz = le_u32(sec, p + 4)? as usize;
            let ty = le_u32(sec, p + 8)?;
            let name_at = p + 12;
            let desc_at = name_at + namesz.next_multiple_of(4);
            let name = sec
                .get(name_at..name_at + namesz)
                .context("truncated note")?;
            let desc = sec
                .get(desc_at..desc_at + descsz)
                .context("truncated note")?;
            out.push((name.strip_suffix(b"\0").unwrap_or(name), ty, desc));
            p = desc_at + descsz.next_multiple_of(4);
        }
    }
    Ok(out)
}

/// Decodes one msgpack value at `p`; returns it and the next position.
fn msgpack(b: &[u8], p: usize) -> Result<(Value, usize)> {
    let tag = *b.get(p).context("truncated msgpack")?;
    let be = |at: usize, n: usize| -> Result<u64> {
        let s = b.get(at..at + n).context("truncated msgpack")?;
        Ok(s.iter().fold(0u64, |a, &x| (a << 8) | u64::from(x)))
    };
    let str_at = |at: usize, n: usize| -> Result<(Value, usize)> {
        let s = b.get(at..at + n).context("truncated msgpack string")?;
        Ok((
            Value::String(String::from_utf8_lossy(s).into_owned()),
            at + n,
        ))
    };
    let array = |mut at: usize, n: usize| -> Result<(Value, usize)> {
        let mut v = Vec::with_capacity(n);
        for _ in 0..n {
            let (x, q) = msgpack(b, at)?;
            v.push(x);
            at = q;
        }
        Ok((Value::Array(v), at))
    };
    let map = |mut at: usize, n: usize| -> Result<(Value, usize)> {
        let mut m = Map::new();
        for _ in 0..n {
            let (k, q) = msgpack(b, at)?;
            let (v, r) = msgpack(b, q)?;
            let k = match k {
                Value::String(s) => s,
                other => other.to_string(),
            };
            m.insert(k, v);
            at = r;
        }
        Ok((Value::Object(m), at))
    };
    Ok(match tag {
        0x00..=0x7f => (Value::from(tag), p + 1),
        0x80..=0x8f => map(p + 1, usize::from(tag & 0x0f))?,
        0x90..=0x9f => array(p + 1, usize::from(tag & 0x0f))?,
        0xa0..=0xbf => str_at(p + 1, usize::from(tag & 0x1f))?,
        0xc0 => (Value::Null, p + 1),
        0xc2 => (Value::Bool(false), p + 1),
        0xc3 => (Value::Bool(true), p + 1),
        0xc4..=0xc6 => {
            let n = 1usize << (tag - 0xc4);
            let len = be(p + 1, n)? as usize;
            let s = b
                .get(p + 1 + n..p + 1 + n + len)
                .context("truncated msgpack bin")?;
            (
                Value::Array(s.iter().map(|&x| Value::from(x)).collect()),
                p + 1 + n + len,
            )
        }
        0xca => (
            Value::from(f64::from(f32::from_bits(be(p + 1, 4)? as u32))),
            p + 5,
        ),
        0xcb => (Value::from(f64::from_bits(be(p + 1, 8)?)), p + 9),
        0xcc..=0xcf => {
            let n = 1usize << (tag - 0xcc);
            (Value::from(be(p + 1, n)?), p + 1 + n)
        }
        0xd0..=0xd3 => {
            let n = 1usize << (tag - 0xd0);
            let raw = be(p + 1, n)?;
            let shift = 64 - 8 * n as u32;
            (Value::from(((raw << shift) as i64) >> shift), p + 1 + n)
        }
        0xd9..=0xdb => {
            let n = 1usize << (tag - 0xd9);
            str_at(p + 1 + n, be(p + 1, n)? as usize)?
        }
        0xdc | 0xdd => {
            let n = if tag == 0xdc { 2 } else { 4 };
            array(p + 1 + n, be(p + 1, n)? as usize)?
        }
        0xde | 0xdf => {
            let n = if tag == 0xde { 2 } else { 4 };
            map(p + 1 + n, be(p + 1, n)? as usize)?
        }
        0xe0..=0xff => (Value::from(i64::from(tag as i8)), p + 1),
        _ => bail!("unsupported msgpack tag {tag:#04x} at {p}"),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn msgpack_basics() {
        // {"a": [1, -1, "xy"], "b": true, "c": 300}
        let b = [
            0x83, 0xa1, b'a', 0x93, 0x01, 0xff, 0xa2, b'x', b'y', 0xa1, b'b', 0xc3, 0xa1, b'c',
            0xcd, 0x01, 0x2c,
        ];
        let (v, n) = msgpack(&b, 0).unwrap();
        assert_eq!(n, b.len());
        assert_eq!(
            v,
            serde_json::json!({"a": [1, -1, "xy"], "b": true, "c": 300})
        );
    }

    #[test]
    fn occupancy_figures() {
        // gfx942, 256 threads (4 waves), small kernel: 8 waves/SIMD.
        assert_eq!(occupancy("gfx942", 64, 32, 20, 0, 256), (8, "max"));
        // 128 unified VGPRs -> 512/128 = 4 waves.
        assert_eq!(occupancy("gfx942", 64, 128, 20, 0, 256).0, 4);
        // 129 -> rounded to 136 -> 3 waves.
        assert_eq!(occupancy("gfx942", 64, 129, 20, 0, 256).0, 3);
        // 256 + AGPRs up to 512 -> 1 wave.
        assert_eq!(occupancy("gfx90a", 64, 512, 20, 0, 256).0, 1);
        // LDS: 40 KiB per 4-wave workgroup -> 1 workgroup per CU -> 1 wave per SIMD.
        assert_eq!(occupancy("gfx942", 64, 64, 20, 40 << 10, 256), (1, "lds"));
        // gfx950 has 160 KiB: four such workgroups fit.
        assert_eq!(occupancy("gfx950", 64, 64, 20, 40 << 10, 256), (4, "lds"));
        // gfx1100 wave32: 96 VGPRs -> 16 waves; 97 -> 120 -> 12.
        assert_eq!(occupancy("gfx1100", 32, 96, 20, 0, 256).0, 16);
        assert_eq!(occupancy("gfx1100", 32, 97, 20, 0, 256).0, 12);
        // gfx1100 LDS 40 KiB per 4-wave workgroup: 3 per WGP -> 12 waves / 4 SIMDs = 3.
        assert_eq!(occupancy("gfx1100", 32, 64, 20, 40 << 10, 128), (3, "lds"));
    }
}
