//! Shared test helpers: the shipped code objects, the toolchain's llvm-objdump, and
//! one test per architecture.
#![allow(dead_code, unused_macros, unused_imports)]

use convgrad_isa::{Arch, CodeObject};
use std::path::PathBuf;
use std::process::Command;

/// `target/kernels` of the workspace (or `CONVGRAD_KERNEL_DIR`).
pub fn kernel_dir() -> PathBuf {
    match std::env::var_os("CONVGRAD_KERNEL_DIR") {
        Some(d) => PathBuf::from(d),
        None => PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("../target/kernels"),
    }
}

/// The code object path of an architecture.
pub fn hsaco_path(arch: Arch) -> PathBuf {
    kernel_dir().join(arch.name()).join("convgrad.hsaco")
}

/// Loads the shipped code object of `arch`; panics (fails the test) when it is missing:
/// CI builds the kernels before the tests, so a missing file is an error, not a skip.
pub fn load(arch: Arch) -> CodeObject {
    let p = hsaco_path(arch);
    assert!(
        p.exists(),
        "{} is missing: build the code objects first (`cargo xtask build-kernels`)",
        p.display()
    );
    CodeObject::load(&p).unwrap_or_else(|e| panic!("{}: {e}", p.display()))
}

/// `per_arch!(name, check)`: a module `name` of one `#[test]` per architecture
/// (`name::gfx942`...), each calling `check(arch)`: they run in parallel and fail
/// one by one.
macro_rules! per_arch {
    ($name:ident, $check:ident) => {
        $crate::common::per_arch!(@ $name, $check, gfx90a Gfx90a, gfx942 Gfx942, gfx1100 Gfx1100);
    };
    (@ $name:ident, $check:ident, $($test:ident $arch:ident),+) => {
        mod $name {$(
            #[test]
            fn $test() {
                super::$check(convgrad_isa::Arch::$arch);
            }
        )+}
    };
}
pub(crate) use per_arch;

/// `per_gfx12!(name, check)`: like [`per_arch`] for the RDNA4 objects (gfx1200, gfx1201).
macro_rules! per_gfx12 {
    ($name:ident, $check:ident) => {
        $crate::common::per_arch!(@ $name, $check, gfx1200 Gfx1200, gfx1201 Gfx1201);
    };
}
pub(crate) use per_gfx12;

/// `llvm-objdump` of the toolchain's llvm-tools component.
pub fn llvm_objdump() -> PathBuf {
    let rustc = std::env::var("RUSTC").unwrap_or_else(|_| "rustc".into());
    let out = Command::new(&rustc)
        .args(["--print", "sysroot"])
        .output()
        .expect("running rustc --print sysroot");
    let sysroot = String::from_utf8_lossy(&out.stdout).trim().to_string();
    let vv = Command::new(&rustc)
        .arg("-vV")
        .output()
        .expect("running rustc -vV");
    let host = String::from_utf8_lossy(&vv.stdout)
        .lines()
        .find_map(|l| l.strip_prefix("host: ").map(str::to_string))
        .expect("host triple in rustc -vV");
    let p = PathBuf::from(sysroot)
        .join("lib/rustlib")
        .join(host)
        .join("bin/llvm-objdump");
    assert!(
        p.exists(),
        "{} is missing (rustup component add llvm-tools)",
        p.display()
    );
    p
}

/// A splitmix64 stream seeded from the clock (printed, so a failure can be replayed
/// with `CONVGRAD_ISA_TEST_SEED`). Tests add their own value kinds in `impl Rng` blocks.
pub struct Rng(pub u64);

impl Rng {
    pub fn new(what: &str) -> Rng {
        let seed = std::env::var("CONVGRAD_ISA_TEST_SEED").ok().and_then(|s| s.parse().ok()).unwrap_or_else(|| {
            std::time::SystemTime::now().duration_since(std::time::UNIX_EPOCH).unwrap().as_nanos() as u64
        });
        println!("{what}: seed {seed}");
        Rng(seed)
    }
    pub fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    pub fn u32(&mut self) -> u32 {
        self.next() as u32
    }
    /// The bits of a finite f32 of moderate magnitude (random sign, exponent 2^-7..2^8, mantissa).
    pub fn f32_bits(&mut self) -> u32 {
        let r = self.u32();
        (r & 0x807f_ffff) | (((r >> 23) & 15) + 120) << 23
    }
}

/// One wave (all lanes on) with its LDS, memory and counters, that executes
/// hand-encoded instructions one at a time (tests/semantics.rs, tests/hazard.rs).
pub struct Machine {
    pub arch: Arch,
    pub wave: convgrad_isa::exec::Wave,
    pub lds: convgrad_isa::exec::Lds,
    pub mem: convgrad_isa::exec::Memory,
    pub counters: convgrad_isa::exec::Counters,
}

impl Machine {
    /// Wave64 on CDNA, wave32 on gfx1100; 1 KiB of LDS.
    pub fn new(arch: Arch) -> Machine {
        let lanes = if arch.family().rdna() { 32 } else { 64 };
        let mut wave = convgrad_isa::exec::Wave::new(lanes, 0, arch.is_cdna());
        wave.set_exec(u64::MAX);
        Machine {
            arch,
            wave,
            lds: convgrad_isa::exec::Lds::new(1024),
            mem: convgrad_isa::exec::Memory::new(),
            counters: Default::default(),
        }
    }
    pub fn v(&self, r: usize, lane: usize) -> u32 {
        self.wave.vgpr[r * self.wave.lanes + lane]
    }
    pub fn set_v(&mut self, r: usize, lane: usize, x: u32) {
        let lanes = self.wave.lanes;
        self.wave.vgpr[r * lanes + lane] = x;
    }
    /// Sets `(register, value)` pairs of one lane.
    pub fn set(&mut self, lane: usize, regs: &[(usize, u32)]) {
        for &(r, x) in regs {
            self.set_v(r, lane, x);
        }
    }
    /// Decodes `words` (one whole instruction) at address `addr`.
    pub fn decode(&self, words: &[u32], addr: u64) -> convgrad_isa::decode::Inst {
        let bytes: Vec<u8> = words.iter().flat_map(|w| w.to_le_bytes()).collect();
        let mut inst = convgrad_isa::decode::decode_at(self.arch, &bytes, 0, 0).unwrap();
        assert_eq!(inst.len as usize, bytes.len(), "{inst}");
        inst.addr = addr;
        inst
    }
    /// Decodes `words` and executes the instruction, which must have semantics and succeed.
    pub fn exec(&mut self, words: &[u32]) -> convgrad_isa::decode::Inst {
        let inst = self.decode(words, 0);
        assert!(
            convgrad_isa::exec::handler(inst.name).is_some(),
            "no semantics for {}",
            inst.name
        );
        assert_eq!(
            self.try_exec(&inst),
            Ok(convgrad_isa::exec::Flow::Next),
            "{inst}"
        );
        inst
    }
    /// Executes a decoded instruction (semantics and modifier check).
    pub fn try_exec(
        &mut self,
        inst: &convgrad_isa::decode::Inst,
    ) -> Result<convgrad_isa::exec::Flow, String> {
        let mut c = convgrad_isa::exec::Ctx::new(
            self.arch,
            &mut self.wave,
            &mut self.lds,
            &mut self.mem,
            &mut self.counters,
            [0; 3],
        );
        convgrad_isa::exec::execute(&mut c, inst)
    }
    /// Executes a sequence at consecutive addresses from 0; the first error names
    /// its instruction.
    pub fn run(&mut self, seq: &[Vec<u32>]) -> Result<(), String> {
        let mut addr = 0u64;
        for words in seq {
            let inst = self.decode(words, addr);
            addr += inst.len as u64;
            self.try_exec(&inst)
                .map_err(|e| format!("at `{inst}`: {e}"))?;
        }
        Ok(())
    }
}

/// The modifier and cache fields `i` sets away from their defaults, as a canonical
/// text (issue #42's inventory of the combinations the shipped objects use): VOP3
/// abs/neg/op_sel/clamp/omod, VOP3P neg_lo/neg_hi/op_sel/op_sel_hi (every packed or
/// mixed op shows its op_sel_hi), MFMA cbsz/abid/blgp/acc_cd, SDWA selects, memory
/// cache bits, GDS, AccVGPR data. Empty: none.
pub fn combo(i: &convgrad_isa::decode::Inst) -> String {
    use convgrad_isa::decode::{Enc, Variant};
    let m = &i.mods;
    let mfma = i.name.starts_with("v_mfma");
    let matrix = mfma || i.name.starts_with("v_wmma");
    let mut v = Vec::new();
    let mut bits = |name: &str, x: u8, w: usize| {
        if x != 0 {
            v.push(format!("{name}:{x:0w$b}"));
        }
    };
    bits("abs", m.abs, 3);
    bits(if mfma { "blgp" } else { "neg" }, m.neg, 3);
    bits(if mfma { "cbsz" } else { "neg_hi" }, m.neg_hi, 3);
    bits(if mfma { "abid" } else { "op_sel" }, m.opsel, 4);
    bits("acc", m.acc, 3);
    if i.enc == Enc::Vop3p && !matrix {
        v.push(format!("op_sel_hi:{:03b}", m.opsel_hi));
    }
    for (on, name) in [
        (m.clamp, if mfma { "acc_cd" } else { "clamp" }),
        (m.glc, "glc/sc0"),
        (m.slc, "slc/nt"),
        (m.dlc, "dlc/sc1"),
        (m.gds, "gds"),
    ] {
        if on {
            v.push(name.to_string());
        }
    }
    if m.omod != 0 {
        v.push(format!("omod:{}", m.omod));
    }
    if let (Some(s), Variant::Sdwa) = (m.sdwa, i.variant) {
        let f = |sel: u8, sext: bool, neg: bool, abs: bool| {
            format!("{sel}{}{}{}", if sext { "s" } else { "" }, if neg { "n" } else { "" }, if abs { "a" } else { "" })
        };
        v.push(format!(
            "sdwa:dst{}/{},src0 {},src1 {}",
            s.dst_sel,
            s.dst_unused,
            f(s.src0_sel, s.src0_sext, s.src0_neg, s.src0_abs),
            f(s.src1_sel, s.src1_sext, s.src1_neg, s.src1_abs)
        ));
    }
    v.join(" ")
}
