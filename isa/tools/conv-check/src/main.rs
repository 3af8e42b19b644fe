//! Usage: `isa-conv-check ARCH "CK ARGS" [INSTANCE|""] [f16|bf16|f32] [SPLIT] [atomic|det] [weight|data]`
//!
//! Plans a backward-weight (default) or backward-data problem with the host crate
//! for ARCH's family, runs the planned (or forced) kernel from
//! `target/kernels/ARCH/convgrad.hsaco` on the isa executor, and judges the result
//! as every other check does: fresh random inputs (`check::fill_random`), the
//! output poisoned with NaN first, the float64 reference and the written
//! tolerance rule (`verify::*::judge`). Exits 1 on an executor error, 2 on a
//! failed comparison. `LENIENT=1` runs barriers with hardware semantics
//! (divergence counted, not an error). `sweep.sh` runs a problem list.
//! `MUTATE=ADDR:WORD[,ADDR:WORD...]` (hex) replaces the main kernel's instruction
//! words at ADDR first; `LIST_WAITCNT=1` prints the main kernel's `s_waitcnt`
//! addresses and the needed ones (`Counters::waits_needed`; `mutate.sh` uses both:
//! every needed wait replaced by `s_nop` must fail) and its cache-maintenance
//! instructions (`FENCE ADDR LEN TEXT`; `mutate.sh` removes them), its `s_barrier`s
//! (`BARRIER ADDR TEXT`; `barriers.sh` removes the split-K release one). `LIST_NOPS=1`
//! prints its `s_nop`s (`NOP ADDR TEXT`) and, after the run, the executed ones a
//! wait-state rule needed (`NOPNEEDED ADDR RULE`; `hazards.sh` cuts each to `s_nop 0`).
//! Example: `cargo run --release -- gfx942 "2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1"`.

use convgrad::check::{Init, fill_random, from_bytes, to_bytes};
use convgrad::ops::LaunchSpec;
use convgrad::ops::bwd_data::{self, BwdDataBuffers, BwdDataConfig};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig, SplitK};
use convgrad::types::instance::Family;
use convgrad::types::{ConvProblem, DType, TypeConfig};
use convgrad::verify;
use convgrad_isa::exec::{Launch, Memory, Program, run};
use convgrad_isa::{Arch, CodeObject};

/// Compute units the plans assume (an MI210's count; only split-K counts depend on it).
const COMPUTE_UNITS: u32 = 104;

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let arg = |i: usize| args.get(i).map(String::as_str);
    let name = arg(1).unwrap_or("gfx942");
    let arch = Arch::from_name(name)
        .unwrap_or_else(|| fail(1, &format!("{name}: allowed gfx90a, gfx942, gfx1100, gfx1200, gfx1201")));
    let ck: Vec<usize> = arg(2)
        .map(|s| {
            s.split_whitespace()
                .map(|t| t.parse().expect("CK args: whole numbers"))
                .collect()
        })
        .unwrap_or(vec![2, 1, 2, 16, 16, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]);
    let p = ConvProblem::from_ck_args(&ck).unwrap_or_else(|e| fail(1, &format!("problem: {e}")));
    let instance = arg(3).filter(|s| !s.is_empty()).map(String::from);
    let types = match arg(4) {
        Some("f32") => TypeConfig::F32,
        Some("bf16") => TypeConfig::Bf16,
        _ => TypeConfig::F16,
    };
    let split: u32 = arg(5).map_or(1, |v| v.parse().expect("SPLIT: a whole number"));
    let deterministic = arg(6) == Some("det");
    let family = if arch == Arch::Gfx1100 {
        Family::Rdna3
    } else if arch.gfx12() {
        Family::Rdna4
    } else {
        Family::Cdna
    };
    let c = Check {
        arch,
        family,
        seed: 0x15a_c0de
            ^ ck.iter()
                .fold(0u64, |h, &v| h.wrapping_mul(31).wrapping_add(v as u64)),
    };
    if arg(7) == Some("data") {
        c.data(
            &p,
            BwdDataConfig {
                instance,
                types,
                ..Default::default()
            },
        );
    } else {
        c.weight(
            &p,
            BwdWeightConfig {
                split_k: SplitK::Fixed(split),
                deterministic,
                instance,
                types,
                ..Default::default()
            },
        );
    }
}

/// Applies `MUTATE=ADDR:WORD[,ADDR:WORD...]` (hex) to the kernel's code.
fn mutate(k: &mut convgrad_isa::Kernel) {
    let Ok(m) = std::env::var("MUTATE") else {
        return;
    };
    let hex = |s: &str| u64::from_str_radix(s.trim_start_matches("0x"), 16).ok();
    for one in m.split(',').filter(|s| !s.is_empty()) {
        let Some((a, w)) = one
            .split_once(':')
            .and_then(|(a, w)| Some((hex(a)?, hex(w)?)))
        else {
            fail(1, &format!("MUTATE=`{m}`: expected ADDR:WORD in hex"))
        };
        let Some(o) = a
            .checked_sub(k.entry)
            .map(|o| o as usize)
            .filter(|&o| o + 4 <= k.code.len())
        else {
            fail(1, &format!("MUTATE: 0x{a:x} is outside kernel {}", k.name))
        };
        k.code[o..o + 4].copy_from_slice(&(w as u32).to_le_bytes());
        eprintln!("mutated: word at 0x{a:x} of {} is now {w:08x}", k.name);
    }
}

/// Prints `msg` and exits with `code`.
fn fail(code: i32, msg: &str) -> ! {
    println!("FAIL {msg}");
    std::process::exit(code)
}

/// One check on one architecture.
struct Check {
    arch: Arch,
    family: Family,
    seed: u64,
}

impl Check {
    /// Random values of type `t` (exactly representable), as bytes and as f64.
    fn random(&self, salt: u64, t: DType, n: usize) -> (Vec<u8>, Vec<f64>) {
        let v = fill_random(self.seed ^ salt, Init::Float, t, n);
        (to_bytes(t, &v), v)
    }

    /// A NaN-poisoned output buffer of `n` elements of `t`.
    fn poisoned(mem: &mut Memory, name: &str, t: DType, n: usize) -> u64 {
        mem.upload(name, &to_bytes(t, &vec![f64::NAN; n]))
    }

    /// Runs the kernel of `spec` (the plan's `how`) of the code object with argument
    /// block `args`.
    fn launch(&self, mem: &mut Memory, how: &str, spec: &LaunchSpec, args: &[u8]) {
        let name = spec.instance.name;
        eprintln!(
            "{how} grid {:?} block {} lds {}",
            spec.grid, spec.block, spec.lds_bytes
        );
        // `CONVGRAD_KERNEL_DIR` (a `target/kernels` of another build), as the host and
        // the isa tests take it.
        let dir = std::env::var("CONVGRAD_KERNEL_DIR")
            .unwrap_or_else(|_| format!("{}/../../../target/kernels", env!("CARGO_MANIFEST_DIR")));
        let path = format!("{dir}/{}/convgrad.hsaco", self.arch.name());
        let co = CodeObject::load(std::path::Path::new(&path))
            .unwrap_or_else(|e| fail(1, &format!("{path}: {e}")));
        let mut kernel = co
            .kernel(name)
            .unwrap_or_else(|| fail(1, &format!("{path} has no kernel {name}")))
            .clone();
        if how != "unfold pre-pass" {
            mutate(&mut kernel);
        }
        let prog = Program::new(self.arch, &kernel).unwrap_or_else(|e| fail(1, &format!("{e}")));
        if std::env::var("LIST_NOPS").is_ok() && how != "unfold pre-pass" {
            for i in prog.insts.iter().filter(|i| i.name == "s_nop") {
                println!("NOP 0x{:x} {}", i.addr, i);
            }
        }
        if std::env::var("LIST_WAITCNT").is_ok() && how != "unfold pre-pass" {
            for i in prog.insts.iter().filter(|i| {
                // GFX12: the split s_wait_* (s_wait_alu is s_waitcnt_depctr).
                (i.name.starts_with("s_waitcnt") || i.name.starts_with("s_wait_"))
                    && !matches!(
                        i.name,
                        "s_waitcnt_depctr" | "s_waitcnt_expcnt" | "s_wait_alu" | "s_wait_expcnt"
                    )
            }) {
                println!("WAITCNT 0x{:x} {}", i.addr, i);
            }
            for i in prog.insts.iter().filter(|i| i.name.starts_with("buffer_")) {
                let bits = [
                    (i.mods.glc, "sc0/glc"),
                    (i.mods.slc, "nt/slc"),
                    (i.mods.dlc, "sc1/dlc"),
                ];
                let on: Vec<&str> = bits.iter().filter(|b| b.0).map(|b| b.1).collect();
                println!("FENCE 0x{:x} {} {} {}", i.addr, i.len, i.name, on.join(" "));
            }
            for i in prog.insts.iter().filter(|i| i.name == "s_barrier") {
                println!("BARRIER 0x{:x} {}", i.addr, i);
            }
            // The split-K arrival: a returning integer add (the tile counter).
            for i in prog
                .insts
                .iter()
                .filter(|i| i.name.ends_with("atomic_add") || i.name.ends_with("atomic_add_u32"))
            {
                if i.mods.glc {
                    println!("ARRIVE 0x{:x} {}", i.addr, i);
                }
            }
        }
        let pargs = mem.upload("ConvArgs", args);
        let mut l = Launch::new(1, spec.block, pargs.to_le_bytes().to_vec());
        l.grid = spec.grid;
        l.dynamic_lds = spec.lds_bytes;
        l.strict_barriers = std::env::var("LENIENT").is_err();
        let t = std::time::Instant::now();
        match run(&prog, mem, &l) {
            Err(e) => fail(1, &format!("{e}")),
            Ok(c) if std::env::var("LIST_NOPS").is_ok() && how != "unfold pre-pass" => {
                for (a, rule) in &c.nops_needed {
                    println!("NOPNEEDED 0x{a:x} {rule}");
                }
                for (rule, (slack, at)) in &c.hazard_min_slack {
                    println!("SLACK {rule} {slack} 0x{at:x}");
                    // The dependent instruction swapped with the one before it: one
                    // wait state fewer (`hazards.sh` uses it at slack 0).
                    let Some(k) = prog.insts.iter().position(|i| i.addr == *at) else {
                        continue;
                    };
                    if k == 0 {
                        continue;
                    }
                    let (p, r) = (&prog.insts[k - 1], &prog.insts[k]);
                    let words = |i: &convgrad_isa::decode::Inst| {
                        let o = (i.addr - kernel.entry) as usize;
                        kernel.code[o..o + i.len as usize]
                            .chunks(4)
                            .map(|w| u32::from_le_bytes(w.try_into().unwrap()))
                            .collect::<Vec<u32>>()
                    };
                    // The region [p, r's end) rewritten as r's words, then p's.
                    let m: Vec<String> = words(r)
                        .into_iter()
                        .chain(words(p))
                        .enumerate()
                        .map(|(j, w)| format!("{:x}:{w:x}", p.addr + 4 * j as u64))
                        .collect();
                    println!("SWAP {rule} {slack} {} `{r}` above `{p}`", m.join(","));
                }
            }
            Ok(c) if std::env::var("LIST_WAITCNT").is_ok() && how != "unfold pre-pass" => {
                for a in &c.waits_needed {
                    println!("LANDS 0x{a:x}");
                }
            }
            Ok(c) => eprintln!(
                "ran in {:?}: stale reads {}, divergent barriers {} of {}; wait states: {} dependencies needed {} (s_nop inserted {}, {} s_nops needed); {} instr, classes {:?}, matrix cycles {}, lds conflicts {}, lds bytes {}, misaligned lds {} global {}",
                t.elapsed(),
                c.stale_reads,
                c.divergent_barriers,
                c.barriers + c.divergent_barriers,
                c.hazard_deps,
                c.hazard_wait_states,
                c.nop_wait_states,
                c.nops_needed.len(),
                c.instructions(),
                c.by_class,
                c.matrix_cycles,
                c.lds_bank_conflicts,
                c.lds_bytes,
                c.misaligned_lds,
                c.misaligned_global
            ),
        }
    }

    /// Prints the verdict; exits 2 where it failed.
    fn verdict(&self, what: &str, instance: &str, report: &convgrad::check::ErrorReport) {
        println!(
            "{} {instance}{what}: {}",
            self.arch.name(),
            report.summary()
        );
        if !report.passed() {
            std::process::exit(2)
        }
    }

    /// Uploads random inputs (name, salt, type, elements) and a NaN-poisoned output,
    /// runs `spec`'s kernel with the argument block `args` makes from their addresses
    /// (it may upload more), and returns the inputs' and the output's values.
    fn run(
        &self,
        how: &str,
        spec: &LaunchSpec,
        inputs: [(&str, u64, DType, usize); 2],
        (out, t, n): (&str, DType, usize),
        args: impl FnOnce(&mut Memory, [u64; 2], u64) -> Vec<u8>,
    ) -> ([Vec<f64>; 2], Vec<f64>) {
        let data = inputs.map(|(_, salt, t, n)| self.random(salt, t, n));
        let mut mem = Memory::new();
        let ptrs = [0, 1].map(|k| mem.upload(inputs[k].0, &data[k].0));
        let pout = Self::poisoned(&mut mem, out, t, n);
        let a = args(&mut mem, ptrs, pout);
        self.launch(&mut mem, how, spec, &a);
        let got = from_bytes(t, &mem.download(pout, n * t.bytes()));
        (data.map(|d| d.1), got)
    }

    fn weight(&self, p: &ConvProblem, cfg: BwdWeightConfig) {
        let plan = bwd_weight::plan(p, &cfg, self.family, COMPUTE_UNITS)
            .unwrap_or_else(|e| fail(1, &format!("{e}")));
        let (act, wei) = (cfg.types.act(), cfg.types.wei());
        let ([x, dy], dw) = self.run(
            &plan.describe(),
            &plan.main,
            [
                ("x", 1, act, plan.x.span() as usize),
                ("dy", 2, act, plan.dy.span() as usize),
            ],
            ("dw", wei, plan.dw.span() as usize),
            |mem, [px, pdy], pdw| {
                // Split-K partials: zeroed, as the host's workspace contract asks.
                let pws = if plan.workspace_elems > 0 {
                    mem.upload("workspace", &vec![0u8; plan.workspace_elems * 4])
                } else {
                    0
                };
                // Small-C inputs: the pre-pass writes x' at the workspace's start first.
                if let (Some(u), Some(pre)) = (&plan.unfold, plan.unfold_args(px, pws)) {
                    self.launch(mem, "unfold pre-pass", &u.launch, bytemuck::bytes_of(&pre));
                }
                bytemuck::bytes_of(&plan.args(px, pdw, pdy, pws, &[])).to_vec()
            },
        );
        let judged = verify::bwd_weight::judge(&plan, &cfg, &x, &dy, &[], &dw);
        self.verdict("", plan.main.instance.name, &judged.report);
    }

    fn data(&self, p: &ConvProblem, cfg: BwdDataConfig) {
        let plan = bwd_data::plan(p, &cfg, self.family, COMPUTE_UNITS)
            .unwrap_or_else(|e| fail(1, &format!("{e}")));
        let (act, wei) = (cfg.types.act(), cfg.types.wei());
        let ([dy, w], dx) = self.run(
            &plan.describe(),
            &plan.main,
            [
                ("dy", 3, act, plan.dy.span() as usize),
                ("w", 4, wei, plan.w.span() as usize),
            ],
            ("dx", act, plan.dx.span() as usize),
            |_, [dy, w], dx| {
                let buffers = BwdDataBuffers { dy, w, dx, ds: &[], workspace: 0 };
                bytemuck::bytes_of(&plan.args(&buffers)).to_vec()
            },
        );
        let judged = verify::bwd_data::judge(&plan, &cfg, &dy, &w, &[], &dx);
        self.verdict(" (bwd-data)", plan.main.instance.name, &judged.report);
    }
}
