//! Kernel metadata read from code objects before anything is loaded, and the
//! check of each kernel's argument list against convgrad's kernel ABI: exactly
//! one 8-byte argument, the device address of a `#[repr(C)]` argument block
//! (see [`convgrad_types::params`]).
//!
//! - AMD: the `NT_AMDGPU_METADATA` note (`amdhsa.kernels`) of the HSA ELF
//!   ([`amdgpu::parse`]). Compiler-added `hidden_*` arguments are filled by the
//!   HIP runtime and are not part of the check.
//! - NVIDIA: the `.entry` parameter lists of the PTX text ([`ptx::parse`]).

pub mod amdgpu;
pub mod ptx;

use super::error::RuntimeError;

/// One kernel argument as the code object declares it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct ArgMeta {
    /// Argument name, when recorded.
    pub name: Option<String>,
    /// Byte offset in the kernarg segment (AMD), or parameter index (PTX).
    pub offset: u64,
    /// Size in bytes.
    pub size: u64,
    /// AMD `.value_kind` (`global_buffer`, `by_value`, `hidden_*`, ...), or the PTX type (`.u64 .ptr`).
    pub kind: String,
}

impl ArgMeta {
    /// Whether the compiler added it (AMD `hidden_*`), rather than the source.
    pub fn is_hidden(&self) -> bool {
        self.kind.starts_with("hidden_")
    }
}

/// What a code object says about one kernel.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct KernelMeta {
    /// Kernel (function) name.
    pub name: String,
    /// AMD kernel descriptor symbol (`name.kd`).
    pub symbol: Option<String>,
    /// Explicit arguments (and AMD hidden ones), in order.
    pub args: Vec<ArgMeta>,
    /// AMD `.kernarg_segment_size`; PTX: the parameters' total size.
    pub kernarg_size: Option<u64>,
    /// AMD `.group_segment_fixed_size` (static LDS).
    pub static_lds_bytes: Option<u64>,
    /// AMD `.private_segment_fixed_size` (scratch per lane).
    pub private_bytes: Option<u64>,
    /// AMD `.max_flat_workgroup_size`; PTX `.maxntid` product.
    pub max_threads: Option<u64>,
    /// AMD `.reqd_workgroup_size` / PTX `.reqntid` product.
    pub required_threads: Option<u64>,
    /// AMD `.wavefront_size`; 32 for PTX.
    pub wave_size: Option<u64>,
    /// AMD `.sgpr_count`.
    pub sgprs: Option<u64>,
    /// AMD `.vgpr_count`.
    pub vgprs: Option<u64>,
    /// AMD VGPR + SGPR spill counts.
    pub spills: u64,
}

/// What every convgrad kernel must declare, in words.
pub const EXPECTED_AMD: &str = "exactly one explicit argument at .offset 0, .size 8, .value_kind global_buffer (the device address of the argument block), kernarg_segment_size >= 8";
/// What every convgrad kernel must declare in PTX, in words.
pub const EXPECTED_PTX: &str =
    "exactly one parameter, the argument block by value: `.param .align 64 .b8 NAME[N]` with N = size_of::<ConvArgs>()";

fn describe(args: &[ArgMeta]) -> String {
    if args.is_empty() {
        return "no arguments".into();
    }
    let list: Vec<String> = args
        .iter()
        .map(|a| {
            format!(
                "{}offset {} size {} {}",
                a.name
                    .as_deref()
                    .map(|n| format!("{n}: "))
                    .unwrap_or_default(),
                a.offset,
                a.size,
                a.kind
            )
        })
        .collect();
    format!("{} argument(s) [{}]", args.len(), list.join("; "))
}

/// Checks an AMD kernel's metadata against the one-pointer ABI.
pub fn check_amd_abi(k: &KernelMeta) -> Result<(), RuntimeError> {
    let explicit: Vec<ArgMeta> = k.args.iter().filter(|a| !a.is_hidden()).cloned().collect();
    let ok_arg = matches!(explicit.as_slice(), [a] if a.offset == 0 && a.size == 8 && a.kind == "global_buffer");
    let ok_seg = k.kernarg_size.is_some_and(|s| s >= 8);
    if ok_arg && ok_seg {
        return Ok(());
    }
    let mut found = describe(&explicit);
    match k.kernarg_size {
        Some(s) => found.push_str(&format!(", kernarg_segment_size {s}")),
        None => found.push_str(", no kernarg_segment_size"),
    }
    Err(RuntimeError::ArgLayout {
        kernel: k.name.clone(),
        found,
        expected: EXPECTED_AMD.into(),
    })
}

/// Checks a PTX kernel's parameters against the by-value ABI: one `ConvArgs`
/// block in the parameter space.
pub fn check_ptx_abi(k: &KernelMeta) -> Result<(), RuntimeError> {
    let bytes = std::mem::size_of::<convgrad_types::params::ConvArgs>() as u64;
    let ok = matches!(k.args.as_slice(), [a] if a.size == bytes && a.kind.starts_with(".b8["));
    if ok {
        return Ok(());
    }
    Err(RuntimeError::ArgLayout {
        kernel: k.name.clone(),
        found: describe(&k.args),
        expected: EXPECTED_PTX.into(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn amd(args: &[(u64, u64, &str)], seg: u64) -> KernelMeta {
        let md =
            amdgpu::test_metadata("gfx942", vec![amdgpu::test_kernel_metadata("k", args, seg)]);
        amdgpu::parse(&amdgpu::build_test_elf(&md))
            .unwrap()
            .kernels
            .remove(0)
    }

    #[test]
    fn amd_abi() {
        check_amd_abi(&amd(&[(0, 8, "global_buffer")], 8)).unwrap();
        // Hidden arguments appended by the compiler are fine.
        check_amd_abi(&amd(
            &[(0, 8, "global_buffer"), (8, 4, "hidden_block_count_x")],
            264,
        ))
        .unwrap();
        let e = check_amd_abi(&amd(&[(0, 8, "global_buffer"), (8, 4, "by_value")], 16))
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("kernel `k`") && e.contains("2 argument(s)") && e.contains("by_value"),
            "{e}"
        );
        let e = check_amd_abi(&amd(&[(0, 8, "by_value")], 8))
            .unwrap_err()
            .to_string();
        assert!(e.contains("global_buffer"), "{e}");
        assert!(
            check_amd_abi(&amd(&[], 0))
                .unwrap_err()
                .to_string()
                .contains("no arguments")
        );
    }

    #[test]
    fn ptx_abi() {
        let n = std::mem::size_of::<convgrad_types::params::ConvArgs>();
        let m = ptx::parse(&format!(
            ".target sm_90\n.visible .entry a(.param .align 8 .b8 a_p0[{n}])\n{{ ret; }}\n\
             .visible .entry b(.param .u32 b_p0, .param .u32 b_p1)\n{{ ret; }}\n\
             .visible .entry c(.param .u64 c_p0)\n{{ ret; }}\n\
             .visible .entry d(.param .align 8 .b8 d_p0[{}])\n{{ ret; }}",
            n - 8
        ))
        .unwrap();
        check_ptx_abi(&m.kernels[0]).unwrap();
        let e = check_ptx_abi(&m.kernels[1]).unwrap_err().to_string();
        assert!(
            e.contains("kernel `b`") && e.contains("2 argument(s)"),
            "{e}"
        );
        // The old pointer ABI and a block of another size are refused.
        assert!(check_ptx_abi(&m.kernels[2]).is_err());
        assert!(check_ptx_abi(&m.kernels[3]).is_err());
    }
}
