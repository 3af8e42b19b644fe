//! LLVM IR text surgery: find kernel definitions, add function attributes to
//! them, pass their argument block by value, list functions that are declared
//! but not defined.

use crate::util::Toolchain;
use anyhow::{Context, Result, bail};
use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

/// Name of the function a `define`/`declare` line introduces (`@name(` or `@"name"(`).
fn function_name(line: &str) -> Option<String> {
    let at = line.find(" @")? + 2;
    let rest = &line[at..];
    if let Some(q) = rest.strip_prefix('"') {
        let end = q.find('"')?;
        Some(q[..end].to_string())
    } else {
        let end = rest.find('(')?;
        Some(rest[..end].to_string())
    }
}

/// Whether a `define` line is a kernel with calling convention `cc`.
fn is_kernel_define(line: &str, cc: &str) -> bool {
    line.starts_with("define ")
        && line
            .split_whitespace()
            .take_while(|w| !w.starts_with('@'))
            .any(|w| w == cc)
}

/// Names of the kernels (`define ... <cc> ... @name(`) in a module, in order.
pub fn kernels(ll: &str, cc: &str) -> Vec<String> {
    ll.lines()
        .filter(|l| is_kernel_define(l, cc))
        .filter_map(function_name)
        .collect()
}

/// Adds string function attributes to kernel definitions:
/// `define ... @k(...) ... #0 {` becomes `define ... @k(...) ... #0 "key"="value" {`.
pub fn annotate(
    ll: &str,
    cc: &str,
    attrs: &BTreeMap<String, Vec<(String, String)>>,
) -> Result<String> {
    let mut out = String::with_capacity(ll.len() + attrs.len() * 64);
    let mut done = 0;
    for line in ll.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if is_kernel_define(body, cc)
            && let Some(a) = function_name(body).and_then(|n| attrs.get(&n))
        {
            let Some(head) = body.strip_suffix('{') else {
                bail!("kernel definition line does not end in `{{`: {body}");
            };
            out.push_str(head.trim_end());
            for (k, v) in a {
                out.push_str(&format!(" \"{k}\"=\"{v}\""));
            }
            out.push_str(" {\n");
            done += 1;
            continue;
        }
        out.push_str(line);
    }
    if done != attrs.len() {
        bail!(
            "annotated {done} kernel definitions, expected {}",
            attrs.len()
        );
    }
    Ok(out)
}

/// Makes every kernel's one pointer parameter `byval([bytes x i8]) align 8`
/// (NVIDIA): the argument block travels in the launch's parameter space
/// (`.param .align 64 .b8 args[N]`, constant bank 0), so every field read is an
/// operand of the instruction that uses it, not a global load that each store
/// and barrier would force the compiler to repeat, and the host needs no
/// per-launch upload. The body is unchanged: it still reads the block through
/// its pointer.
///
/// AMD keeps the pointer: the same change there (a `byref` kernarg wrapper)
/// hoisted so many fields into SGPRs that kernels spilled.
pub fn args_by_value(ll: &str, cc: &str, bytes: u32) -> Result<String> {
    let mut out = String::with_capacity(ll.len() + 4096);
    for line in ll.split_inclusive('\n') {
        let body = line.trim_end_matches('\n');
        if !is_kernel_define(body, cc) {
            out.push_str(line);
            continue;
        }
        let name = function_name(body).unwrap_or_default();
        let open = body.find('(').map(|i| i + 1);
        // The list's own `)`: attributes such as `dereferenceable(N)` nest.
        let close = open.and_then(|o| {
            let mut depth = 0;
            body[o..].char_indices().find_map(|(i, c)| match c {
                '(' => {
                    depth += 1;
                    None
                }
                ')' if depth == 0 => Some(o + i),
                ')' => {
                    depth -= 1;
                    None
                }
                _ => None,
            })
        });
        let (Some(open), Some(close)) = (open, close) else {
            bail!("kernel `{name}`: no parameter list in `{body}`");
        };
        let params = &body[open..close];
        let one_ptr = params.starts_with("ptr ") && !params.contains(',') && !params.contains("byval");
        if !one_ptr {
            bail!("kernel `{name}`: expected one plain pointer parameter, found `({params})`");
        }
        // Aligned to 64 bytes and `grid_constant` (the kernel takes its
        // address without a local copy): `cp.async.bulk.tensor` reads the
        // block's tensor maps in place (`ConvArgs::tma`).
        let rest = params[4..].replace(" align 8 ", " ").replace("align 8 ", "");
        out.push_str(&body[..open]);
        out.push_str(&format!("ptr byval([{bytes} x i8]) align 64 \"nvvm.grid_constant\" {rest}"));
        out.push_str(&body[close..]);
        out.push('\n');
    }
    Ok(out)
}

/// Functions declared (called) but not defined, intrinsics excluded.
pub fn undefined_functions(ll: &str) -> Vec<String> {
    let mut v: Vec<String> = ll
        .lines()
        .filter(|l| l.starts_with("declare "))
        .filter_map(function_name)
        .filter(|n| !n.starts_with("llvm."))
        .collect();
    v.sort();
    v.dedup();
    v
}

/// Extracts the LLVM bitcode members of `rlibs` into `dir` (an rlib is an `ar`
/// archive; on nvptx its objects are bitcode). Non-bitcode members are skipped.
pub fn bitcode_members(tc: &Toolchain, rlibs: &[PathBuf], dir: &Path) -> Result<Vec<PathBuf>> {
    let mut out = Vec::new();
    for (i, rlib) in rlibs.iter().enumerate() {
        let d = dir.join(i.to_string());
        let _ = std::fs::remove_dir_all(&d);
        std::fs::create_dir_all(&d)?;
        let abs = std::fs::canonicalize(rlib)
            .with_context(|| format!("rlib {} on rustc's link line", rlib.display()))?;
        duct::cmd(tc.tool("llvm-ar"), ["x".as_ref(), abs.as_os_str()])
            .dir(&d)
            .stdout_null()
            .run()
            .with_context(|| format!("llvm-ar x {}", abs.display()))?;
        for e in std::fs::read_dir(&d)? {
            let p = e?.path();
            let bytes = std::fs::read(&p)?;
            if bytes.starts_with(b"BC\xC0\xDE") {
                out.push(p);
            }
        }
    }
    out.sort();
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;

    const LL: &str = "define amdgpu_kernel void @k1(ptr noundef %p) unnamed_addr #0 {\nstart:\n  ret void\n}\n\
define internal void @helper() #1 {\n  ret void\n}\n\
define ptx_kernel void @\"k 2\"(ptr %p) #0 {\n  ret void\n}\n\
declare void @convgrad_atomic_add_f32(ptr noundef, float noundef) unnamed_addr #0\n\
declare i32 @llvm.amdgcn.workitem.id.x() #1\n";

    #[test]
    fn finds_kernels_and_undefined() {
        assert_eq!(kernels(LL, "amdgpu_kernel"), vec!["k1"]);
        assert_eq!(kernels(LL, "ptx_kernel"), vec!["k 2"]);
        assert_eq!(undefined_functions(LL), vec!["convgrad_atomic_add_f32"]);
    }

    #[test]
    fn annotates() {
        let mut a = BTreeMap::new();
        a.insert(
            "k1".to_string(),
            vec![(
                "amdgpu-flat-work-group-size".to_string(),
                "1,256".to_string(),
            )],
        );
        let out = annotate(LL, "amdgpu_kernel", &a).unwrap();
        assert!(out.starts_with(
            "define amdgpu_kernel void @k1(ptr noundef %p) unnamed_addr #0 \"amdgpu-flat-work-group-size\"=\"1,256\" {\nstart:"
        ));
        assert_eq!(
            out.len(),
            LL.len() + " \"amdgpu-flat-work-group-size\"=\"1,256\"".len()
        );
    }

    #[test]
    fn passes_args_by_value() {
        let out = args_by_value(LL, "ptx_kernel", 984).unwrap();
        assert!(out.contains("define ptx_kernel void @\"k 2\"(ptr byval([984 x i8]) align 64 \"nvvm.grid_constant\" %p) #0 {\n  ret void"));
        // Other functions and other calling conventions are left alone.
        assert!(out.contains("define amdgpu_kernel void @k1(ptr noundef %p)"));
        assert!(out.contains("define internal void @helper() #1 {"));
        let nested = "define ptx_kernel void @k(ptr noundef align 8 dereferenceable(984) %a) #0 {\n}\n";
        let out = args_by_value(nested, "ptx_kernel", 984).unwrap();
        assert!(out.starts_with("define ptx_kernel void @k(ptr byval([984 x i8]) align 64 \"nvvm.grid_constant\" noundef dereferenceable(984) %a) #0 {"));
        let two = "define ptx_kernel void @k(ptr %a, i32 %b) #0 {\n}\n";
        let e = args_by_value(two, "ptx_kernel", 8).unwrap_err();
        assert!(e.to_string().contains("one plain pointer"));
    }
}
