//! The isa backend: `convgrad-isa` runs the real AMD code objects (the embedded
//! `gfx90a`, `gfx942`, `gfx950`, `gfx1100`, `gfx1200`, `gfx1201` HSA ELFs) on the CPU, instruction by
//! instruction, with checked memory (out-of-bounds accesses and reads of
//! never-written bytes fail) and strict barriers. Launches are synchronous and
//! timed by the host clock; the argument block goes through the same
//! [`ArgRing::stage_kernarg`] path as on HIP (uploaded to device memory, the
//! kernarg segment is its address).

use super::cpu::{self, Streams};
use super::driver::{ArgRing, Driver, Info, LaunchSpec, Limits, LoadedModule, RawEvent, RawKernel, StreamId};
use super::error::{Result, RuntimeError};
use super::meta::KernelMeta;
use convgrad_isa::exec::{Counters, Launch, Memory, Program, run};
use convgrad_isa::{Arch, CodeObject};
use std::collections::{BTreeMap, HashMap};
use std::sync::{Arc, Mutex};

/// The architectures the executor runs, by name (for error messages).
pub(crate) fn arch_names() -> String {
    ALL.map(Arch::name).join(", ")
}

/// Every architecture the executor runs.
pub(crate) const ALL: [Arch; 6] = Arch::ALL;

/// Compute units reported for `arch` (the plans' split-K counts depend on it):
/// those of the GPU the architecture is best known by (MI210, MI300X, RX 7900 XTX).
fn compute_units(arch: Arch) -> u32 {
    match arch {
        Arch::Gfx90a => 104,
        Arch::Gfx942 => 304,
        // MI355X.
        Arch::Gfx950 => 256,
        Arch::Gfx1100 => 96,
        // RX 9060 XT, RX 9070 XT.
        Arch::Gfx1200 => 32,
        Arch::Gfx1201 => 64,
    }
}

/// Decoded programs, shared by the driver and its modules; a kernel handle
/// ([`RawKernel::Isa`]) is an index into it.
type Programs = Arc<Mutex<Vec<Arc<Program>>>>;

struct State {
    mem: Memory,
    /// Live allocations: base -> bytes.
    allocs: BTreeMap<u64, usize>,
    ring: ArgRing,
    next_id: u64,
    /// What the last launch executed (`Device::last_isa_counters`).
    last: Option<Counters>,
}

/// The isa executor's "driver" version (runtime find's key).
pub(crate) const DRIVER_VERSION: &str = "convgrad isa executor 1";

pub(crate) struct IsaDriver {
    arch: Arch,
    info: Info,
    state: Mutex<State>,
    programs: Programs,
    /// Stream handles (launches run to completion).
    streams: Streams,
}

pub(crate) fn open(arch: Arch) -> IsaDriver {
    let mut mem = Memory::new();
    let base = mem.alloc("ConvArgs ring", ArgRing::BYTES);
    let lds = 64 * 1024;
    IsaDriver {
        arch,
        info: Info {
            name: format!("convgrad isa executor ({}, real code object on the CPU)", arch.name()),
            arch: arch.name().to_string(),
            memory_bytes: cpu::host_memory_bytes(),
            compute_units: compute_units(arch),
            max_lds_bytes: lds,
            wave_size: if arch.is_cdna() { 64 } else { 32 },
            ordinal: 0,
        },
        state: Mutex::new(State {
            mem,
            allocs: BTreeMap::new(),
            ring: ArgRing {
                base,
                host: vec![0u8; ArgRing::BYTES].into_boxed_slice(),
                used: 0,
                foreign: false,
            },
            next_id: 0,
            last: None,
        }),
        programs: Arc::new(Mutex::new(Vec::new())),
        streams: Streams::new(),
    }
}

fn fault(call: &'static str, f: impl std::fmt::Display) -> RuntimeError {
    RuntimeError::call(call, format!("isa executor: {f}"))
}

impl IsaDriver {
    fn state(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(|e| e.into_inner())
    }
}

struct IsaModule {
    arch: Arch,
    co: CodeObject,
    programs: Programs,
    /// Kernel name -> index in `programs` (each kernel is decoded once).
    decoded: Mutex<HashMap<String, u32>>,
}

impl LoadedModule for IsaModule {
    fn function(&self, meta: &KernelMeta) -> Result<(RawKernel, Limits)> {
        let limits = Limits::from_amd_meta(meta);
        let mut decoded = self.decoded.lock().unwrap_or_else(|e| e.into_inner());
        if let Some(&i) = decoded.get(&meta.name) {
            return Ok((RawKernel::Isa(i), limits));
        }
        let kernel = self.co.kernel(&meta.name).ok_or_else(|| {
            RuntimeError::CodeObject(format!(
                "kernel `{}` is in the metadata but has no descriptor or code in the {} code object",
                meta.name,
                self.arch.name()
            ))
        })?;
        let prog = Program::new(self.arch, kernel).map_err(|e| RuntimeError::CodeObject(format!("isa executor: {e}")))?;
        let mut programs = self.programs.lock().unwrap_or_else(|e| e.into_inner());
        let i = programs.len() as u32;
        programs.push(Arc::new(prog));
        decoded.insert(meta.name.clone(), i);
        Ok((RawKernel::Isa(i), limits))
    }
}

impl Driver for IsaDriver {
    fn info(&self) -> &Info {
        &self.info
    }
    fn driver_version(&self) -> &str {
        DRIVER_VERSION
    }
    fn isa_counters(&self) -> Option<Counters> {
        self.state().last.clone()
    }
    fn alloc(&self, bytes: usize) -> Result<u64> {
        let mut st = self.state();
        st.next_id += 1;
        let name = format!("allocation {} ({bytes} bytes)", st.next_id);
        let addr = st.mem.alloc(&name, bytes);
        st.allocs.insert(addr, bytes);
        Ok(addr)
    }
    fn free(&self, addr: u64) -> Result<()> {
        let mut st = self.state();
        if st.allocs.remove(&addr).is_none() {
            return Err(fault("free", format_args!("0x{addr:x} is not an allocation")));
        }
        st.mem.free(addr);
        Ok(())
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.state().mem.write(addr, data).map_err(|f| fault("write", f))
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        let st = self.state();
        match st.mem.read(addr, out) {
            Ok(()) => Ok(()),
            // A host copy may read bytes nothing wrote (their contents are undefined).
            Err(convgrad_isa::exec::memory::Fault::Unwritten { .. }) => {
                out.copy_from_slice(&st.mem.download(addr, out.len()));
                Ok(())
            }
            Err(f) => Err(fault("read", f)),
        }
    }
    fn fill(&self, addr: u64, value: u8, bytes: usize, _stream: StreamId) -> Result<()> {
        let mut st = self.state();
        cpu::fill_in_chunks(addr, value, bytes, |at, chunk| st.mem.write(at, chunk).map_err(|f| fault("fill", f)))
    }
    fn load(&self, image: &[u8]) -> Result<Box<dyn LoadedModule>> {
        let co = CodeObject::parse(image).map_err(|e| RuntimeError::CodeObject(format!("isa executor: {e}")))?;
        if co.arch != self.arch {
            return Err(RuntimeError::ArchMismatch {
                found: co.arch.name().to_string(),
                device_arch: self.arch.name().to_string(),
            });
        }
        Ok(Box::new(IsaModule {
            arch: self.arch,
            co,
            programs: self.programs.clone(),
            decoded: Mutex::new(HashMap::new()),
        }))
    }
    fn launch(&self, spec: &LaunchSpec<'_>, _stream: StreamId) -> Result<()> {
        let RawKernel::Isa(i) = spec.kernel else {
            return Err(RuntimeError::WrongDevice("kernel"));
        };
        let prog = self
            .programs
            .lock()
            .unwrap_or_else(|e| e.into_inner())
            .get(i as usize)
            .cloned()
            .ok_or(RuntimeError::WrongDevice("kernel"))?;
        let mut st = self.state();
        let st = &mut *st;
        // The HIP path: the block goes to the argument ring in device memory, the
        // kernarg segment is its address. Launches are synchronous: nothing to drain.
        let staged = st.ring.stage_kernarg(spec.name, spec.args, || Ok(()))?;
        st.mem
            .write(staged.addr, st.ring.block(&staged))
            .map_err(|f| fault("argument upload", f))?;
        let mut launch = Launch::new(1, spec.block, staged.kernarg.to_vec());
        launch.grid = spec.grid;
        launch.dynamic_lds = spec.lds_bytes;
        launch.strict_barriers = true;
        let mem = &mut st.mem;
        let ran = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| run(&prog, mem, &launch)));
        let failed = |what: String| RuntimeError::InvalidLaunch {
            kernel: spec.name.to_string(),
            what: format!("isa executor ({}): {what}", self.arch.name()),
        };
        match ran {
            Ok(Ok(counters)) => {
                st.last = Some(counters);
                Ok(())
            }
            Ok(Err(e)) => Err(failed(e.to_string())),
            Err(p) => {
                let msg = p
                    .downcast_ref::<&str>()
                    .map(|s| s.to_string())
                    .or_else(|| p.downcast_ref::<String>().cloned())
                    .unwrap_or_else(|| "panic".into());
                Err(failed(format!("executor panicked: {msg}")))
            }
        }
    }
    fn synchronize(&self, _stream: StreamId) -> Result<()> {
        // Every launch has completed: the argument blocks are free again.
        self.state().ring.reset();
        Ok(())
    }
    cpu::synchronous_streams_and_events!();
    fn address_range(&self, addr: u64) -> Result<(u64, usize)> {
        let st = self.state();
        match st.allocs.range(..=addr).next_back() {
            Some((&base, &len)) if addr < base + len as u64 => Ok((base, len)),
            _ => Err(RuntimeError::ForeignMemory(format!(
                "0x{addr:x} is not inside an allocation of the isa executor"
            ))),
        }
    }
}
