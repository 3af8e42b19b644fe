//! NVIDIA PTX: per-entry parsing (`.param`, `.maxntid`, `.reg`, `.local`) and,
//! when `ptxas` is available, its register and spill report.

use super::manifest::{NvResources, PtxParam};
use super::{Arch, ArchReport};
use crate::util;
use anyhow::{Context, Result};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// `ptxas` from `PATH`, `$CUDA_HOME/bin` or `/usr/local/cuda/bin`.
pub fn find_ptxas() -> Option<PathBuf> {
    let mut dirs: Vec<PathBuf> = std::env::var_os("PATH")
        .map(|p| std::env::split_paths(&p).collect())
        .unwrap_or_default();
    for v in ["CUDA_HOME", "CUDA_PATH"] {
        if let Some(h) = std::env::var_os(v) {
            dirs.push(PathBuf::from(h).join("bin"));
        }
    }
    dirs.push("/usr/local/cuda/bin".into());
    dirs.into_iter()
        .map(|d| d.join("ptxas"))
        .find(|p| p.is_file())
}

/// One `.entry` of a PTX module.
#[derive(Debug, Default)]
pub struct Entry {
    /// Kernel name.
    pub name: String,
    /// `.param` declarations.
    pub params: Vec<PtxParam>,
    /// `.maxntid x, y, z`.
    pub maxntid: Option<Vec<u32>>,
    /// The body (between the braces), one string.
    pub body: String,
}

/// Splits a PTX module into its `.entry` functions.
pub fn entries(ptx: &str) -> Vec<Entry> {
    let mut out = Vec::new();
    let mut lines = ptx.lines().peekable();
    while let Some(line) = lines.next() {
        let Some(at) = line.find(".entry ") else {
            continue;
        };
        let rest = &line[at + 7..];
        let name = rest
            .split(['(', ' ', '\t'])
            .next()
            .unwrap_or("")
            .to_string();
        let mut e = Entry {
            name,
            ..Entry::default()
        };
        let mut in_params = rest.contains('(') && !rest.trim_end().ends_with(')');
        // Header: params until ')', then directives until '{'.
        for l in lines.by_ref() {
            let t = l.split("//").next().unwrap_or("").trim();
            if in_params {
                if t.starts_with(')') {
                    in_params = false;
                    continue;
                }
                if let Some(p) = t.strip_prefix(".param") {
                    let p = p.trim().trim_end_matches(',');
                    let (ty, name) = p.rsplit_once(char::is_whitespace).unwrap_or(("", p));
                    e.params.push(PtxParam {
                        name: name.trim().into(),
                        ty: ty.trim().into(),
                    });
                }
                continue;
            }
            if t == "(" {
                in_params = true;
                continue;
            }
            if let Some(v) = t.strip_prefix(".maxntid") {
                e.maxntid = Some(v.split(',').filter_map(|x| x.trim().parse().ok()).collect());
            }
            if t == "{" {
                break;
            }
        }
        let mut depth = 1;
        for l in lines.by_ref() {
            let t = l.trim();
            if t == "{" {
                depth += 1;
            } else if t == "}" {
                depth -= 1;
                if depth == 0 {
                    break;
                }
            }
            e.body.push_str(l);
            e.body.push('\n');
        }
        out.push(e);
    }
    out
}

/// `.reg .b32 %r<5>;` declarations of a body: registers per type.
fn reg_decls(body: &str) -> BTreeMap<String, u32> {
    let mut m = BTreeMap::new();
    for l in body.lines() {
        let t = l.trim();
        let Some(rest) = t.strip_prefix(".reg ") else {
            continue;
        };
        let mut it = rest.split_whitespace();
        let ty = it.next().unwrap_or("").trim_start_matches('.').to_string();
        let decl = it.collect::<String>();
        // `%r<5>` declares %r0..%r4 (LLVM uses 1..4); a plain name declares one.
        let n = decl
            .split_once('<')
            .and_then(|(_, r)| r.split('>').next()?.parse::<u32>().ok())
            .map(|n| n.saturating_sub(1))
            .unwrap_or(1);
        *m.entry(ty).or_insert(0) += n;
    }
    m
}

/// Bytes of `.local` arrays declared in a body (e.g. `__local_depot0[16]`).
fn local_bytes(body: &str) -> u32 {
    body.lines()
        .filter(|l| l.trim_start().starts_with(".local"))
        .filter_map(|l| l.split_once('[')?.1.split(']').next()?.parse::<u32>().ok())
        .sum()
}

/// `.extern .func` declarations: calls the PTX cannot satisfy by itself.
pub fn extern_functions(ptx: &str) -> Vec<String> {
    ptx.lines()
        .filter(|l| l.trim_start().starts_with(".extern .func"))
        .map(|l| l.trim().to_string())
        .collect()
}

/// What `ptxas -v` said about one kernel.
#[derive(Default, Debug)]
struct PtxasInfo {
    registers: Option<u32>,
    stack: Option<u32>,
    spill_stores: Option<u32>,
    spill_loads: Option<u32>,
}

fn number_before(s: &str, what: &str) -> Option<u32> {
    let i = s.find(what)?;
    s[..i].split_whitespace().last()?.parse().ok()
}

fn ptxas_report(ptxas: &Path, arch: Arch, ptx_path: &Path) -> Result<BTreeMap<String, PtxasInfo>> {
    let out = util::run(
        ptxas,
        [
            "-v".as_ref(),
            format!("--gpu-name={}", arch.cpu()).as_ref(),
            "-o".as_ref(),
            "/dev/null".as_ref(),
            ptx_path.as_os_str(),
        ],
    )
    .context("ptxas rejected the PTX")?;
    let text =
        String::from_utf8_lossy(&out.stderr).into_owned() + &String::from_utf8_lossy(&out.stdout);
    Ok(parse_ptxas(&text))
}

/// Parses `ptxas -v` output into per-kernel figures.
fn parse_ptxas(text: &str) -> BTreeMap<String, PtxasInfo> {
    let mut m: BTreeMap<String, PtxasInfo> = BTreeMap::new();
    let mut cur = String::new();
    for l in text.lines() {
        for key in ["Compiling entry function '", "Function properties for "] {
            if let Some(i) = l.find(key) {
                cur = l[i + key.len()..]
                    .split(['\'', ' '])
                    .next()
                    .unwrap_or("")
                    .to_string();
            }
        }
        if cur.is_empty() {
            continue;
        }
        let e = m.entry(cur.clone()).or_default();
        if let Some(n) = number_before(l, "bytes stack frame") {
            e.stack = Some(n);
        }
        if let Some(n) = number_before(l, "bytes spill stores") {
            e.spill_stores = Some(n);
        }
        if let Some(n) = number_before(l, "bytes spill loads") {
            e.spill_loads = Some(n);
        }
        if let Some(i) = l.find("Used ") {
            e.registers = l[i + 5..]
                .split_whitespace()
                .next()
                .and_then(|x| x.parse().ok());
        }
    }
    m
}

/// Reads the kernels' resources from a PTX module and builds the arch's entries.
pub fn read_back(
    arch: Arch,
    ptx: &[u8],
    ptx_path: &Path,
    ptxas: Option<&Path>,
) -> Result<ArchReport> {
    let text = String::from_utf8_lossy(ptx);
    let entries = entries(&text);
    let names: Vec<String> = entries.iter().map(|e| e.name.clone()).collect();
    let (present, missing, unlisted) = super::classify(arch, &names);
    let measured = match ptxas {
        Some(p) => Some(ptxas_report(p, arch, ptx_path)?),
        None => None,
    };
    let mut out = Vec::new();
    for inst in present {
        let e = entries
            .iter()
            .find(|e| e.name == inst.name)
            .expect("present");
        let mut k = super::entry(arch, inst);
        let info = measured.as_ref().and_then(|m| m.get(inst.name));
        k.nvptx = Some(NvResources {
            source: if measured.is_some() {
                "ptxas".into()
            } else {
                "ptx".into()
            },
            registers: info.and_then(|i| i.registers),
            spill_store_bytes: info.and_then(|i| i.spill_stores),
            spill_load_bytes: info.and_then(|i| i.spill_loads),
            stack_frame_bytes: info.and_then(|i| i.stack),
            ptx_regs: reg_decls(&e.body),
            local_bytes: local_bytes(&e.body),
            maxntid: e.maxntid.clone(),
            params: e.params.clone(),
        });
        out.push(k);
    }
    Ok(ArchReport {
        rebuilt: false,
        kernels: out,
        missing,
        unlisted,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    const PTX: &str = "\
.version 7.8
.target sm_90
.address_size 64
.extern .shared .align 16 .b8 dyn[];
	// .globl	k
.visible .entry k(
	.param .u64 .ptr .align 1 k_param_0
)
.maxntid 256                            // @k
{
	.local .align 8 .b8 	__local_depot0[16];
	.reg .b32 	%r<5>;
	.reg .b64 	%rd<5>;
	.reg .pred 	%p<2>;

	ld.param.b64 	%rd1, [k_param_0];
	{
	mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%r1}, {%r2}, {%r3}, {%r4};
	}
	ret;
}
";

    #[test]
    fn parses_entries() {
        let e = entries(PTX);
        assert_eq!(e.len(), 1);
        assert_eq!(e[0].name, "k");
        assert_eq!(e[0].params.len(), 1);
        assert_eq!(e[0].params[0].name, "k_param_0");
        assert_eq!(e[0].params[0].ty, ".u64 .ptr .align 1");
        assert_eq!(e[0].maxntid, Some(vec![256]));
        assert!(e[0].body.contains("mma.sync.aligned.m16n8k16"));
        assert!(e[0].body.contains("ret;"));
        let r = reg_decls(&e[0].body);
        assert_eq!(r["b32"], 4);
        assert_eq!(r["b64"], 4);
        assert_eq!(r["pred"], 1);
        assert_eq!(local_bytes(&e[0].body), 16);
        assert!(extern_functions(PTX).is_empty());
    }

    #[test]
    fn parses_ptxas() {
        let out = "\
ptxas info    : 0 bytes gmem
ptxas info    : Compiling entry function 'k1' for 'sm_90'
ptxas info    : Function properties for k1
    8 bytes stack frame, 4 bytes spill stores, 12 bytes spill loads
ptxas info    : Used 168 registers, used 1 barriers, 8 bytes cumulative stack size, 360 bytes cmem[0]
ptxas info    : Compiling entry function 'k2' for 'sm_90'
ptxas info    : Function properties for k2
    0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads
ptxas info    : Used 26 registers, used 0 barriers, 360 bytes cmem[0]
";
        let m = parse_ptxas(out);
        let k1 = &m["k1"];
        assert_eq!(
            (k1.registers, k1.stack, k1.spill_stores, k1.spill_loads),
            (Some(168), Some(8), Some(4), Some(12))
        );
        let k2 = &m["k2"];
        assert_eq!((k2.registers, k2.spill_stores), (Some(26), Some(0)));
    }
}

