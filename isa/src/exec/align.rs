//! Alignment of LDS and global accesses (issue #42).
//!
//! What the hardware does with a misaligned address depends on
//! `SH_MEM_CONFIG.alignment_mode`. ROCm's KFD programs `UNALIGNED` for every
//! compute process (`update_qpd_v9`/`_v10`/`_v11` in
//! `drivers/gpu/drm/amd/amdkfd/kfd_device_queue_manager_v*.c`), so such accesses
//! give the right bytes there, and LLVM, knowing it, turns on
//! `unaligned-access-mode` for every `amdhsa` target (`GCNSubtarget.cpp`,
//! `initializeSubtargetDependencies`): it then emits e.g. `ds_load_b64` for 8 bytes
//! that are only 2-aligned. LDS serves such an access in more than one pass
//! (`SIISelLowering.cpp`, `allowsMisalignedMemoryAccessesImpl`, ranks a
//! misaligned `ds_read_b64` as slow), and under any other mode (a runtime
//! that leaves `DWORD`/`DWORD_STRICT`/`STRICT` set) it reads the wrong bytes
//! or faults. Our kernels must not depend on the mode, so the check requires:
//!
//! - LDS (`ds_*` loads and stores): natural alignment of each element, the rule
//!   LLVM follows without `unaligned-access-mode` (same function: `ds_read_b64`
//!   8, `ds_read2_b32` 4 per address, `ds_read2_b64` 8, `ds_read_b128` 16; `b96`
//!   16, as its comment gives for gfx8 and older);
//! - global (`global_*`/`flat_*`): alignment to the smaller of the access size
//!   and a dword, a policy rather than a guide's rule (under `UNALIGNED` the
//!   hardware takes any address; the other values of amdgpu's
//!   `SH_MEM_ALIGNMENT_MODE`, `DWORD`, `DWORD_STRICT` and `STRICT`, are the
//!   ones that constrain it).
//!
//! `Launch::alignment` ([`Check`], `CONVGRAD_ISA_ALIGNMENT`): by default a
//! misaligned LDS access is an error and a misaligned global one is only counted
//! (`Counters::misaligned_lds` / `misaligned_global`), because the shipped
//! `bwdd_direct_f16` stores f16 pairs as dwords at 2 mod 4 (correct under
//! `UNALIGNED`; its cost is not modelled here); `strict` makes global ones
//! errors too, `0` turns both off.

use super::Ctx;

/// Which misaligned accesses stop the launch.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Check {
    /// None (still counted).
    Off,
    /// LDS ones (the default).
    Lds,
    /// LDS and global ones.
    Strict,
}

impl Check {
    /// From `CONVGRAD_ISA_ALIGNMENT`: `0` (off), `strict`, anything else or unset: LDS.
    pub fn from_env() -> Check {
        match std::env::var("CONVGRAD_ISA_ALIGNMENT").as_deref() {
            Ok("0") => Check::Off,
            Ok("strict") => Check::Strict,
            _ => Check::Lds,
        }
    }
}

/// Which memory an access goes to.
#[derive(Clone, Copy)]
pub(super) enum Space {
    Lds,
    Global,
}

/// The alignment `space` requires of an `n`-byte element.
fn required(space: Space, n: usize) -> u64 {
    match space {
        Space::Lds => (n as u64).next_power_of_two().min(16),
        Space::Global => (n as u64).min(4),
    }
}

/// Checks lane `l`'s `n`-byte access at `a` (an LDS offset or a global address).
pub(super) fn check(c: &mut Ctx, space: Space, l: usize, a: u64, n: usize) -> Result<(), String> {
    let need = required(space, n);
    if a.is_multiple_of(need) {
        return Ok(());
    }
    let (what, rule, fatal) = match space {
        Space::Lds => {
            c.counters.misaligned_lds += 1;
            (
                "LDS offset",
                "LDS accesses must be naturally aligned",
                c.wave.align != Check::Off,
            )
        }
        Space::Global => {
            c.counters.misaligned_global += 1;
            (
                "global address",
                "global accesses must be aligned to min(size, 4)",
                c.wave.align == Check::Strict,
            )
        }
    };
    if !fatal {
        return Ok(());
    }
    Err(format!(
        "lane {l}: misaligned {n}-byte access at {what} 0x{a:x} (= {} mod {need}): {rule} \
         (correct only under SH_MEM_CONFIG alignment_mode UNALIGNED, and slower there; \
         CONVGRAD_ISA_ALIGNMENT=0 turns the check off)",
        a % need
    ))
}
