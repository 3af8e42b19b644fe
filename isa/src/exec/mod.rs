//! The executor: runs a decoded kernel over a grid, workgroup by workgroup, each
//! workgroup's waves round-robin between barriers.
//!
//! Semantics live in one file per instruction family ([`sop`], [`smem`], [`vop1`],
//! [`vop2`], [`vop3`], [`vopc`], [`vop3p`], [`matrix`] for MFMA/WMMA, [`ds`],
//! [`flat`], [`mubuf`]); each lists the mnemonics it implements. An instruction
//! without semantics stops the launch with an error naming it and the kernel.
//!
//! Model: every instruction completes before the next one issues (no latencies, so
//! `s_waitcnt`, `s_nop` and dependency hints have nothing to wait for) unless late
//! results are on ([`late`]); memory holds one value per byte, and the cache model
//! ([`cache`]) judges which reads a non-coherent cache could answer stale.

pub mod align;
pub mod cache;
pub mod hazard;
pub mod late;
pub mod memory;
pub mod mods;
pub mod wave;

mod data;
mod ds;
mod flat;
pub mod gfx12;
mod gfx950;
mod matrix;
mod mubuf;
mod smem;
mod sop;
mod valu;
mod vop1;
mod vop2;
mod vop3;
mod vop3p;
mod vopc;
mod war;

use crate::arch::{Arch, Family};
use crate::code_object::{Kernel, UserSgpr};
use crate::decode::{Enc, Inst, decode_all};
pub use memory::{Lds, Memory};
use std::cell::Cell;
use std::collections::{BTreeMap, HashMap};
use std::fmt;
use std::sync::OnceLock;
pub use wave::{Ty, Wave};

/// A failed launch: what happened, and where.
#[derive(Debug, Clone, thiserror::Error)]
pub struct ExecError {
    /// Kernel name.
    pub kernel: String,
    /// Workgroup id.
    pub workgroup: [u32; 3],
    /// Wave inside the workgroup.
    pub wave: u32,
    /// Instruction address.
    pub pc: u64,
    /// The instruction.
    pub inst: String,
    /// What went wrong.
    pub msg: String,
}

impl fmt::Display for ExecError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let [x, y, z] = self.workgroup;
        write!(
            f,
            "kernel {}, workgroup ({x},{y},{z}), wave {}, at 0x{:x} `{}`: {}",
            self.kernel, self.wave, self.pc, self.inst, self.msg
        )
    }
}

/// What the wave does after an instruction.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Flow {
    /// The next instruction.
    Next,
    /// A branch to this address.
    Jump(u64),
    /// `s_endpgm`.
    End,
    /// `s_barrier`: wait for the workgroup.
    Barrier,
}

/// Semantics of one instruction.
pub type Handler = fn(&mut Ctx, &Inst) -> Result<Flow, String>;

/// Per-launch counters.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct Counters {
    /// Wave-instructions executed, by class (`salu`, `smem`, `branch`, `valu`,
    /// `mfma`/`wmma`, `lds`, `vmem_load`, `vmem_store`, `vmem_atomic`, `other`).
    pub by_class: BTreeMap<&'static str, u64>,
    /// Wave-instructions executed, by mnemonic.
    pub by_mnemonic: BTreeMap<String, u64>,
    /// Matrix-unit busy cycles (sum of the issued MFMA/WMMA instructions' cycles).
    pub matrix_cycles: u64,
    /// LDS bank-conflict cycles (extra cycles over a conflict-free access; see `ds.rs`).
    pub lds_bank_conflicts: u64,
    /// Global bytes read by vector memory instructions (active lanes).
    pub global_bytes_read: u64,
    /// Global bytes written (stores and atomics).
    pub global_bytes_written: u64,
    /// Bytes read by scalar memory instructions.
    pub scalar_bytes_read: u64,
    /// LDS bytes read and written.
    pub lds_bytes: u64,
    /// Barriers completed (per workgroup).
    pub barriers: u64,
    /// Addresses of the `s_waitcnt` instructions that landed a load result which the
    /// wave then read before its next wait (late results): replacing one of them by
    /// `s_nop` must be caught.
    pub waits_needed: std::collections::BTreeSet<u64>,
    /// Barriers completed with the waves at different `s_barrier` instructions, or
    /// with some waves already ended (only counted when `Launch::strict_barriers` is off).
    pub divergent_barriers: u64,
    /// Reads the cache model answered with a stale line's value ([`cache`]).
    pub stale_reads: u64,
    /// Wait-state dependencies ([`hazard`]): accesses inside a rule's window whose
    /// wait states were met only with the `s_nop`s in between.
    pub hazard_deps: u64,
    /// The wait states those dependencies required (summed).
    pub hazard_wait_states: u64,
    /// Wait states inserted by executed `s_nop`s (N+1 each).
    pub nop_wait_states: u64,
    /// Executed `s_nop`s that a dependency needed (cut to `s_nop 0` it would have
    /// too few wait states), with the first rule that needed each.
    pub nops_needed: BTreeMap<u64, &'static str>,
    /// Per rule that applied: the fewest wait states beyond the required count seen
    /// between a writer and a dependent instruction, and that instruction's address.
    pub hazard_min_slack: BTreeMap<&'static str, (u64, u64)>,
    /// Lane accesses to LDS that break the alignment rules of [`align`] (counted
    /// whether or not `Launch::alignment` makes them errors).
    pub misaligned_lds: u64,
    /// The same for global memory.
    pub misaligned_global: u64,
}

impl Counters {
    /// Total wave-instructions.
    pub fn instructions(&self) -> u64 {
        self.by_class.values().sum()
    }
}

/// Execution context handed to instruction semantics.
pub struct Ctx<'a> {
    /// Architecture.
    pub arch: Arch,
    /// Encoding family.
    pub family: Family,
    /// The wave.
    pub wave: &'a mut Wave,
    /// The workgroup's LDS.
    pub lds: &'a mut Lds,
    /// Global memory.
    pub mem: &'a mut Memory,
    /// Counters of the launch.
    pub counters: &'a mut Counters,
    /// Workgroup id.
    pub wg: [u32; 3],
    /// Modifier fields the handler consulted ([`mods`]).
    used: Cell<u32>,
    /// Register writes held back while a memory instruction issues ([`late`]).
    defer: Option<Vec<late::Write>>,
}

impl<'a> Ctx<'a> {
    /// A context for one instruction of `wave`.
    pub fn new(
        arch: Arch,
        wave: &'a mut Wave,
        lds: &'a mut Lds,
        mem: &'a mut Memory,
        counters: &'a mut Counters,
        wg: [u32; 3],
    ) -> Ctx<'a> {
        Ctx {
            arch,
            family: arch.family(),
            wave,
            lds,
            mem,
            counters,
            wg,
            used: Cell::new(0),
            defer: None,
        }
    }
    /// Marks modifier fields ([`mods`]) as implemented by the running handler.
    pub fn uses(&self, bits: u32) {
        self.used.set(self.used.get() | bits);
    }
}

/// Runs one instruction's semantics and checks that every modifier it sets was
/// implemented (see [`mods`]); `present` is [`mods::present`] of `i`.
fn step(c: &mut Ctx, h: Handler, i: &Inst, present: u32) -> Result<Flow, String> {
    c.used.set(0);
    let valu = matches!(
        i.enc,
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 | Enc::Vop3p | Enc::Vopd
    );
    let idle = valu && c.wave.exec() == 0;
    let late = if c.wave.late.on {
        late::class_of(c.arch, i)
    } else {
        None
    };
    let memory = matches!(i.enc, Enc::Flat | Enc::Mubuf | Enc::Smem | Enc::Ds);
    if memory && c.wave.barrier_signaled {
        return Err(
            "a memory instruction between s_barrier_signal and s_barrier_wait is not modelled"
                .into(),
        );
    }
    if matches!(i.enc, Enc::Flat | Enc::Mubuf | Enc::Smem) {
        let bits = if c.family == Family::Gfx12 {
            // GFX12 scope (gfx12.rs): SE or wider misses the L0, DEV or wider the
            // SE-level cache; an atomic's `glc` says it returns (an acquire).
            let atomic = i.name.contains("atomic");
            cache::Bits {
                glc: if atomic { i.mods.glc } else { i.mods.scope >= 1 },
                slc: false,
                dlc: i.mods.scope >= 2,
            }
        } else {
            cache::Bits {
                glc: i.mods.glc,
                slc: i.mods.slc,
                dlc: i.mods.dlc,
            }
        };
        c.mem.set_access(Some(cache::Access {
            wave: c.wave.uid,
            bits,
            atomic: i.name.contains("atomic"),
            immediate: !c.wave.late.on,
            pc: i.addr,
            name: i.name,
        }));
    }
    if c.wave.hazard.on {
        c.wave.hazard.begin();
    }
    let flow = match late {
        None => h(c, i)?,
        Some((class, flat)) => {
            // The instruction's register writes wait in its entry; its stores are
            // marked outstanding until an s_waitcnt covers them.
            c.defer = Some(Vec::new());
            c.mem.set_agent(Some(memory::Agent {
                id: c.wave.uid,
                atomic: i.name.contains("atomic"),
            }));
            c.lds.set_marking(true);
            let r = h(c, i);
            let writes = c.defer.take().unwrap_or_default();
            c.mem.set_agent(None);
            c.lds.set_marking(false);
            let global = c.mem.take_log();
            let lds = c.lds.take_log();
            let flow = r?;
            if !global.is_empty() {
                let who = memory::Writer {
                    wg: c.wg,
                    wave: c.wave.id,
                    inst: i.clone(),
                };
                c.mem.describe_writer(c.wave.uid, who);
            }
            late::issue(c, i, class, flat, writes, global, lds)?;
            flow
        }
    };
    if c.wave.hazard.on {
        hazard::after(c, i)?;
    }
    // With no lane active a lane-wise handler reads no modifier: nothing to judge.
    if !idle {
        mods::check(i, present, c.used.get())?;
    }
    Ok(flow)
}

/// Executes one decoded instruction on a context: its semantics, then the check that
/// every modifier it sets is implemented. Unknown mnemonics are errors naming them.
pub fn execute(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    let h = handler(i.name).ok_or_else(|| {
        format!(
            "unimplemented instruction {} ({:?} opcode {}) on {}",
            i.mnemonic(),
            i.enc,
            i.op,
            c.arch
        )
    })?;
    step(c, h, i, mods::present(i))
}

fn registry() -> &'static HashMap<&'static str, Handler> {
    static R: OnceLock<HashMap<&'static str, Handler>> = OnceLock::new();
    R.get_or_init(|| {
        let mut m = HashMap::new();
        for t in [
            sop::HANDLERS,
            sop::COMPARES,
            smem::HANDLERS,
            vop1::HANDLERS,
            vop2::HANDLERS,
            vop3::HANDLERS,
            gfx950::HANDLERS,
            gfx12::HANDLERS,
            vopc::HANDLERS,
            vop3p::HANDLERS,
            matrix::HANDLERS,
            ds::HANDLERS,
            flat::HANDLERS,
            mubuf::HANDLERS,
        ] {
            for &(n, h) in t {
                m.insert(n, h);
            }
        }
        for t in [
            sop::ALIASES,
            smem::ALIASES,
            ds::ALIASES,
            flat::ALIASES,
            gfx12::ALIASES,
        ] {
            for &(alias, name) in t {
                m.insert(alias, m[name]);
            }
        }
        m
    })
}

/// The semantics of a mnemonic (without encoding suffix), if implemented.
pub fn handler(name: &str) -> Option<Handler> {
    if let Some(h) = registry().get(name) {
        return Some(*h);
    }
    vopc::compare_handler(name)
}

/// Whether the executor implements a mnemonic (without encoding suffix).
pub fn implemented(name: &str) -> bool {
    handler(name).is_some()
}

/// A kernel prepared for execution: decoded once, handlers resolved.
pub struct Program {
    /// Architecture.
    pub arch: Arch,
    /// The kernel (descriptor, metadata, code).
    pub kernel: Kernel,
    /// Decoded instructions in address order.
    pub insts: Vec<Inst>,
    handlers: Vec<Option<Handler>>,
    /// [`mods::present`] of each instruction.
    present: Vec<u32>,
    index: HashMap<u64, usize>,
}

impl Program {
    /// Decodes a kernel.
    pub fn new(arch: Arch, kernel: &Kernel) -> Result<Program, crate::Error> {
        let insts =
            decode_all(arch, &kernel.code, kernel.entry).map_err(|err| crate::Error::Decode {
                kernel: kernel.name.clone(),
                err,
            })?;
        let handlers = insts.iter().map(|i| handler(i.name)).collect();
        let present = insts.iter().map(mods::present).collect();
        let index = insts.iter().enumerate().map(|(k, i)| (i.addr, k)).collect();
        Ok(Program {
            arch,
            kernel: kernel.clone(),
            insts,
            handlers,
            present,
            index,
        })
    }

    /// Mnemonics (with suffix) that have no semantics yet, with their counts.
    pub fn unimplemented(&self) -> BTreeMap<String, usize> {
        let mut m = BTreeMap::new();
        for (i, h) in self.insts.iter().zip(&self.handlers) {
            if h.is_none() {
                *m.entry(i.mnemonic()).or_insert(0) += 1;
            }
        }
        m
    }
}

/// A launch: grid in workgroups, workgroup size in work-items, kernel arguments.
#[derive(Clone, Debug)]
pub struct Launch {
    /// Workgroups along x, y, z.
    pub grid: [u32; 3],
    /// Work-items per workgroup along x, y, z.
    pub block: [u32; 3],
    /// The kernarg segment bytes (copied into a buffer of global memory).
    pub kernarg: Vec<u8>,
    /// LDS bytes beyond the descriptor's static size (dynamic shared memory).
    pub dynamic_lds: u32,
    /// Instruction budget per wave (a runaway loop stops with an error).
    pub max_wave_instructions: u64,
    /// Barrier divergence (waves of a workgroup waiting at different `s_barrier`
    /// instructions, or ending while others wait) is an error; when off, the barrier
    /// releases as the hardware's does (every live wave waits at some barrier) and
    /// `Counters::divergent_barriers` counts it.
    pub strict_barriers: bool,
    /// Late memory results ([`late`]): loads write their destinations at the
    /// `s_waitcnt` that covers them, early reads and unreleased stores are errors.
    /// On unless `CONVGRAD_ISA_LATE_RESULTS=0`.
    pub late_results: bool,
    /// The order workgroups run in, and waves inside a workgroup between barriers.
    pub order: Order,
    /// The cache model and global races ([`cache`]): on unless
    /// `CONVGRAD_ISA_CACHE=0`.
    pub cache_model: bool,
    /// Wait states between dependent instructions checked against the CDNA2/CDNA3
    /// tables ([`hazard`]; gfx90a and gfx942) and gfx1100's `s_waitcnt_depctr` /
    /// `v_nop` hazards: on unless `CONVGRAD_ISA_HAZARDS=0`.
    pub hazards: bool,
    /// Which misaligned accesses are errors ([`align`]): LDS ones unless
    /// `CONVGRAD_ISA_ALIGNMENT=0`, global ones too with `=strict`.
    pub alignment: align::Check,
}

/// Order of workgroups (and of a workgroup's waves between barriers).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Order {
    /// Workgroups in x, then y, then z order; waves by id.
    Sequential,
    /// A permutation chosen by the seed: seeds = 0 mod 4 run the workgroups last
    /// first (waves too), the others shuffle them (a fresh shuffle of the waves after
    /// every barrier). Errors name the seed.
    Seeded(u64),
}

impl Order {
    /// From `CONVGRAD_ISA_ORDER_SEED`: `sequential`, a number, or (unset) a seed
    /// taken from the clock.
    pub fn from_env() -> Order {
        match std::env::var("CONVGRAD_ISA_ORDER_SEED") {
            Ok(v) if v == "sequential" => Order::Sequential,
            Ok(v) => Order::Seeded(v.trim().parse().unwrap_or_else(|_| {
                panic!("CONVGRAD_ISA_ORDER_SEED=`{v}`: expected `sequential` or a number")
            })),
            Err(_) => Order::Seeded(
                std::time::SystemTime::now()
                    .duration_since(std::time::UNIX_EPOCH)
                    .map_or(1, |d| d.as_nanos() as u64),
            ),
        }
    }
}

/// splitmix64: the permutations' random stream.
struct Mix(u64);

impl Mix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
    /// Permutes `v` as the order asks.
    fn permute<T>(&mut self, order: Order, v: &mut [T]) {
        match order {
            Order::Sequential => {}
            Order::Seeded(s) if s % 4 == 0 => v.reverse(),
            Order::Seeded(_) => {
                for k in (1..v.len()).rev() {
                    let j = (self.next() % (k as u64 + 1)) as usize;
                    v.swap(k, j);
                }
            }
        }
    }
}

impl Launch {
    /// A 1-D launch.
    pub fn new(grid: u32, block: u32, kernarg: Vec<u8>) -> Launch {
        Launch {
            grid: [grid, 1, 1],
            block: [block, 1, 1],
            kernarg,
            dynamic_lds: 0,
            max_wave_instructions: 50_000_000,
            strict_barriers: true,
            late_results: std::env::var("CONVGRAD_ISA_LATE_RESULTS").map_or(true, |v| v != "0"),
            order: Order::from_env(),
            cache_model: std::env::var("CONVGRAD_ISA_CACHE").map_or(true, |v| v != "0"),
            hazards: std::env::var("CONVGRAD_ISA_HAZARDS").map_or(true, |v| v != "0"),
            alignment: align::Check::from_env(),
        }
    }
}

fn class(i: &Inst) -> &'static str {
    match i.enc {
        Enc::Sop1 | Enc::Sop2 | Enc::Sopk | Enc::Sopc => "salu",
        Enc::Sopp => {
            if i.name.starts_with("s_branch") || i.name.starts_with("s_cbranch") {
                "branch"
            } else {
                "other"
            }
        }
        Enc::Smem => "smem",
        Enc::Vop3p if i.name.starts_with("v_mfma") => "mfma",
        Enc::Vop3p if i.name.starts_with("v_wmma") => "wmma",
        Enc::Vop1 | Enc::Vop2 | Enc::Vopc | Enc::Vop3 | Enc::Vop3p | Enc::Vopd => "valu",
        Enc::Ds => "lds",
        Enc::Flat | Enc::Mubuf => {
            if i.name.contains("atomic") {
                "vmem_atomic"
            } else if i.name.contains("store") {
                "vmem_store"
            } else if i.name.contains("load") {
                "vmem_load"
            } else {
                "other"
            }
        }
    }
}

/// Runs a launch to completion.
pub fn run(prog: &Program, mem: &mut Memory, launch: &Launch) -> Result<Counters, ExecError> {
    let k = &prog.kernel;
    let d = &k.descriptor;
    let arch = prog.arch;
    let lanes = if d.wave32() { 32 } else { 64 };
    let threads = (launch.block[0] * launch.block[1] * launch.block[2]) as usize;
    let top = |msg: String| ExecError {
        kernel: k.name.clone(),
        workgroup: [0; 3],
        wave: 0,
        pc: k.entry,
        inst: String::new(),
        msg,
    };
    if threads == 0 || threads > 1024 {
        return Err(top(format!("workgroup of {threads} work-items")));
    }
    if k.meta.max_flat_workgroup_size != 0 && threads > k.meta.max_flat_workgroup_size as usize {
        return Err(top(format!(
            "workgroup of {threads} work-items exceeds the kernel's max_flat_workgroup_size {}",
            k.meta.max_flat_workgroup_size
        )));
    }
    if (launch.kernarg.len() as u32) < d.kernarg_size {
        return Err(top(format!(
            "{} kernarg bytes given, the kernel's segment is {}",
            launch.kernarg.len(),
            d.kernarg_size
        )));
    }
    if d.private_segment() || d.private_segment_fixed_size != 0 {
        return Err(top(
            "the kernel uses scratch memory, which is not modelled".into()
        ));
    }
    mem.release_all();
    let kernarg = mem.upload("kernarg segment", &launch.kernarg);
    mem.set_cache(
        launch
            .cache_model
            .then(|| cache::Cache::new(arch, d.wgp_mode())),
    );
    let mut counters = Counters::default();
    let lds_size = d.group_segment_fixed_size as usize + launch.dynamic_lds as usize;
    let nwaves = threads.div_ceil(lanes);
    let user = d.user_sgprs();
    let [gx, gy, gz] = launch.grid;
    let mut mix = Mix(match launch.order {
        Order::Seeded(s) => s,
        Order::Sequential => 0,
    });
    let result = (|| {
        let total = gx as u64 * gy as u64 * gz as u64;
        let mut ids: Vec<u64> = (0..total).collect();
        mix.permute(launch.order, &mut ids);
        for id in ids {
            let wg = [
                (id % gx as u64) as u32,
                (id / gx as u64 % gy as u64) as u32,
                (id / (gx as u64 * gy as u64)) as u32,
            ];
            let mut lds = Lds::new(lds_size);
            let mut waves: Vec<Wave> = (0..nwaves)
                .map(|w| init_wave(arch, k, &user, lanes, w, threads, launch, kernarg, wg))
                .collect();
            if let Some(c) = mem.cache() {
                let dom = c.dispatch(id as u32);
                for w in &waves {
                    c.place_wave(w.uid, id as u32, wg, w.id, dom);
                }
            }
            run_workgroup(
                prog,
                mem,
                &mut lds,
                &mut waves,
                &mut counters,
                wg,
                launch,
                &mut mix,
            )?;
        }
        Ok(counters)
    })()
    .map_err(|mut e: ExecError| {
        if let Order::Seeded(s) = launch.order {
            e.msg +=
                &format!(" [workgroups and waves in permuted order: CONVGRAD_ISA_ORDER_SEED={s}]");
        }
        e
    });
    // The launch's end completes every store and makes it visible.
    let stale = mem.cache().map_or(0, |c| c.stale_reads);
    let result = result.map(|mut c| {
        c.stale_reads = stale;
        c
    });
    mem.set_cache(None);
    mem.release_all();
    mem.free(kernarg);
    result
}

#[allow(clippy::too_many_arguments)]
fn init_wave(
    arch: Arch,
    k: &Kernel,
    user: &[UserSgpr],
    lanes: usize,
    w: usize,
    threads: usize,
    launch: &Launch,
    kernarg: u64,
    wg: [u32; 3],
) -> Wave {
    let d = &k.descriptor;
    let mut wave = Wave::new(lanes, w as u32, arch.is_cdna());
    let nwaves = threads.div_ceil(lanes) as u64;
    let [gx, gy, _] = launch.grid.map(u64::from);
    let linear = wg[0] as u64 + gx * (wg[1] as u64 + gy * wg[2] as u64);
    // 31 bits (the memory marks keep the top bit for atomics), never 0.
    wave.uid = ((linear * nwaves + w as u64) % 0x7fff_ffff) as u32 + 1;
    wave.late.on = launch.late_results;
    wave.late.gfx12 = arch.gfx12();
    wave.hazard.on = launch.hazards && (arch.is_cdna() || arch == Arch::Gfx1100);
    wave.align = launch.alignment;
    // User SGPRs from s0, in the order the descriptor enables them.
    let mut s = 0usize;
    for u in user {
        if *u == UserSgpr::KernargSegmentPtr {
            wave.sgpr[s] = kernarg as u32;
            wave.sgpr[s + 1] = (kernarg >> 32) as u32;
        }
        s += u.count() as usize;
    }
    // Preloaded kernel arguments (gfx942) follow the user SGPRs.
    let pre = d.kernarg_preload_len() as usize;
    let pre_off = (d.kernarg_preload >> 7) as usize * 4;
    for j in 0..pre {
        let o = pre_off + 4 * j;
        if let Some(b) = launch.kernarg.get(o..o + 4) {
            wave.sgpr[s + j] = u32::from_le_bytes(b.try_into().unwrap());
        }
    }
    // System SGPRs start at USER_SGPR_COUNT: workgroup ids, then workgroup info.
    let mut s = d.user_sgpr_count() as usize;
    for (dim, on) in d.workgroup_id_enabled().into_iter().enumerate() {
        if on {
            wave.sgpr[s] = wg[dim];
            s += 1;
        }
    }
    if d.workgroup_info_enabled() {
        wave.sgpr[s] = 0;
    }
    // GFX12 architected SGPRs (LLVM `hasArchitectedSGPRs`, AMDGPULegalizerInfo
    // `loadInputValue`): the workgroup ids also sit in trap temporaries, which the
    // code reads: ttmp9 = x, ttmp7 = y | z << 16; ttmp8[29:25] = wave id in the group.
    if arch.gfx12() {
        const TTMP0: usize = 108;
        wave.sgpr[TTMP0 + 9] = wg[0];
        wave.sgpr[TTMP0 + 7] = (wg[1] & 0xffff) | wg[2] << 16;
        wave.sgpr[TTMP0 + 8] = (w as u32 & 0x1f) << 25;
    }
    // Work-item ids: packed into v0 (x 9:0, y 19:10, z 29:20) on gfx90a, gfx942 and
    // GFX11; separate v0, v1, v2 before.
    let [bx, by, _] = launch.block;
    let mut exec = 0u64;
    for lane in 0..lanes {
        let t = w * lanes + lane;
        if t >= threads {
            continue;
        }
        exec |= 1 << lane;
        let (x, y, z) = (t as u32 % bx, t as u32 / bx % by, t as u32 / (bx * by));
        wave.vgpr[lane] = x | y << 10 | z << 20;
    }
    wave.set_exec(exec);
    wave.launch_exec = exec;
    wave
}

#[allow(clippy::too_many_arguments)]
fn run_workgroup(
    prog: &Program,
    mem: &mut Memory,
    lds: &mut Lds,
    waves: &mut [Wave],
    counters: &mut Counters,
    wg: [u32; 3],
    launch: &Launch,
    mix: &mut Mix,
) -> Result<(), ExecError> {
    let budget = launch.max_wave_instructions;
    loop {
        let mut turn: Vec<usize> = (0..waves.len()).collect();
        mix.permute(launch.order, &mut turn);
        for &t in &turn {
            let wave = &mut waves[t];
            if wave.done || wave.at_barrier.is_some() {
                continue;
            }
            loop {
                let Some(inst) = prog.insts.get(wave.pc) else {
                    return Err(ExecError {
                        kernel: prog.kernel.name.clone(),
                        workgroup: wg,
                        wave: wave.id,
                        pc: prog.kernel.entry + prog.kernel.code.len() as u64,
                        inst: String::new(),
                        msg: "ran past the end of the kernel".into(),
                    });
                };
                let err = |wave: &Wave, msg: String| ExecError {
                    kernel: prog.kernel.name.clone(),
                    workgroup: wg,
                    wave: wave.id,
                    pc: inst.addr,
                    inst: inst.to_string(),
                    msg,
                };
                let Some(h) = prog.handlers[wave.pc] else {
                    return Err(err(
                        wave,
                        format!(
                            "unimplemented instruction {} ({:?} opcode {}) on {}",
                            inst.mnemonic(),
                            inst.enc,
                            inst.op,
                            prog.arch
                        ),
                    ));
                };
                wave.executed += 1;
                if wave.executed > budget {
                    return Err(err(
                        wave,
                        format!("more than {budget} instructions executed by one wave"),
                    ));
                }
                *counters.by_class.entry(class(inst)).or_insert(0) += 1;
                *counters.by_mnemonic.entry(inst.mnemonic()).or_insert(0) += 1;
                lds.set_wave(wave.id);
                let present = prog.present[wave.pc];
                let flow = {
                    let mut ctx = Ctx::new(prog.arch, wave, lds, mem, counters, wg);
                    step(&mut ctx, h, inst, present)
                };
                let flow = flow.map_err(|m| err(wave, m))?;
                match flow {
                    Flow::Next => wave.pc += 1,
                    Flow::Jump(a) => match prog.index.get(&a) {
                        Some(&p) => wave.pc = p,
                        None => {
                            return Err(err(
                                wave,
                                format!(
                                    "branch to 0x{a:x}, which is not an instruction of the kernel"
                                ),
                            ));
                        }
                    },
                    Flow::End => {
                        if wave.barrier_signaled {
                            return Err(err(
                                wave,
                                "the wave ended between s_barrier_signal and s_barrier_wait".into(),
                            ));
                        }
                        wave.done = true;
                        counters.waits_needed.extend(wave.late.take_needed());
                        wave.late.end();
                        break;
                    }
                    Flow::Barrier => {
                        if launch.strict_barriers && wave.exec() != wave.launch_exec {
                            return Err(err(
                                wave,
                                format!(
                                    "barrier in divergent control flow: s_barrier executed with EXEC 0x{:x} while the wave's lanes are 0x{:x} (the other lanes reach a barrier separately, so this wave arrives more often than the others)",
                                    wave.exec(),
                                    wave.launch_exec
                                ),
                            ));
                        }
                        wave.at_barrier = Some(inst.addr);
                        wave.pc += 1;
                        break;
                    }
                }
            }
        }
        let live: Vec<&Wave> = waves.iter().filter(|w| !w.done).collect();
        if live.is_empty() {
            return Ok(());
        }
        // Every live wave waits at a barrier: they must all wait at the same one.
        let first = live[0].at_barrier;
        let diverged = live.iter().any(|w| w.at_barrier != first) || waves.iter().any(|w| w.done);
        if diverged && !launch.strict_barriers {
            counters.divergent_barriers += 1;
        } else if let Some(w) = live.iter().find(|w| w.at_barrier != first) {
            return Err(ExecError {
                kernel: prog.kernel.name.clone(),
                workgroup: wg,
                wave: w.id,
                pc: w.at_barrier.unwrap_or(0),
                inst: "s_barrier".into(),
                msg: format!(
                    "barrier divergence: wave {} waits at 0x{:x}, wave {} at 0x{:x}",
                    live[0].id,
                    first.unwrap_or(0),
                    w.id,
                    w.at_barrier.unwrap_or(0)
                ),
            });
        } else if waves.iter().any(|w| w.done) {
            let done: Vec<u32> = waves.iter().filter(|w| w.done).map(|w| w.id).collect();
            return Err(ExecError {
                kernel: prog.kernel.name.clone(),
                workgroup: wg,
                wave: live[0].id,
                pc: first.unwrap_or(0),
                inst: "s_barrier".into(),
                msg: format!(
                    "barrier divergence: waves {done:?} ended while the others wait at a barrier"
                ),
            });
        }
        counters.barriers += 1;
        lds.barrier();
        if let Some(c) = mem.cache() {
            let [gx, gy, _] = launch.grid;
            c.barrier(wg[0] + gx * (wg[1] + gy * wg[2]));
        }
        for w in waves.iter_mut() {
            w.at_barrier = None;
        }
    }
}
