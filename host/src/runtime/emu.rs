//! The emulator backend: `convgrad-emu` runs the device crate's host build of
//! each kernel; launches are synchronous and timed by the host clock.

use super::cpu::{self, Streams};
use super::driver::{Driver, Info, LaunchSpec, LoadedModule, RawEvent, RawKernel, StreamId};
use super::error::{Result, RuntimeError};
use convgrad_emu::{EmuArch, Emulator, KernelEntry, Launch};
use convgrad_types::instance::Family;
use std::sync::Mutex;

/// The host kernel registry: the only place the runtime names it.
pub(crate) fn registry_find(family: Family, name: &str) -> Option<KernelEntry> {
    convgrad_device::kernels::host::find(family, name)
}

/// Names in the host kernel registry for `family`.
pub(crate) fn registry_names(family: Family) -> Vec<String> {
    convgrad_device::kernels::host::names(family)
        .map(str::to_string)
        .collect()
}

pub(crate) struct EmuDriver {
    emu: Emulator,
    info: Info,
    /// Report of the last launch.
    last: Mutex<Option<convgrad_emu::LaunchReport>>,
    /// Stream handles (every launch runs to completion, so streams order nothing).
    streams: Streams,
    /// Launches by stream handle ([`Driver::launches_on`]).
    launches: Mutex<std::collections::HashMap<usize, u64>>,
}

impl EmuDriver {
    /// The handle value `stream` stands for.
    fn handle(&self, stream: StreamId) -> usize {
        match stream {
            StreamId::Own => self.streams.own().addr(),
            StreamId::Handle(h) => h.addr(),
        }
    }
}

pub(crate) fn open(arch: EmuArch) -> EmuDriver {
    let cores = std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1);
    EmuDriver {
        emu: Emulator::new(arch),
        info: Info {
            name: format!(
                "convgrad emulator ({}, {} host threads)",
                arch.name(),
                cores
            ),
            arch: arch.name().to_string(),
            memory_bytes: cpu::host_memory_bytes(),
            compute_units: cores as u32,
            max_lds_bytes: arch.max_lds_bytes() as u32,
            wave_size: arch.wave(),
            ordinal: 0,
        },
        last: Mutex::new(None),
        streams: Streams::new(),
        launches: Mutex::default(),
    }
}

/// The emulator's "driver" version (runtime find's key): raised when a
/// change of the emulator would change what it times.
pub(crate) const DRIVER_VERSION: &str = "convgrad emulator 1";

impl Driver for EmuDriver {
    fn info(&self) -> &Info {
        &self.info
    }
    fn driver_version(&self) -> &str {
        DRIVER_VERSION
    }
    fn encode_tma(&self, m: &convgrad_types::params::TmaMap) -> Result<[u64; 16]> {
        // The emulator reads convgrad's description back (`lane::tma_load`);
        // it exists only where the modelled GPU has the unit.
        if !self.info.arch.starts_with("sm_90") {
            return Err(RuntimeError::NotBuilt(format!("emulated {}: no tensor memory accelerator (sm_90 only)", self.info.arch)));
        }
        let mut slot = [0u64; 16];
        bytemuck::bytes_of_mut(&mut slot)[..std::mem::size_of_val(m)].copy_from_slice(bytemuck::bytes_of(m));
        Ok(slot)
    }
    fn alloc(&self, bytes: usize) -> Result<u64> {
        self.emu
            .alloc(bytes)
            .map_err(|e| RuntimeError::emu("alloc", e))
    }
    fn free(&self, addr: u64) -> Result<()> {
        self.emu
            .free(addr)
            .map_err(|e| RuntimeError::emu("free", e))
    }
    fn write(&self, addr: u64, data: &[u8]) -> Result<()> {
        self.emu
            .write(addr, data)
            .map_err(|e| RuntimeError::emu("write", e))
    }
    fn read(&self, addr: u64, out: &mut [u8]) -> Result<()> {
        self.emu
            .read(addr, out)
            .map_err(|e| RuntimeError::emu("read", e))
    }
    fn fill(&self, addr: u64, value: u8, bytes: usize, _stream: StreamId) -> Result<()> {
        cpu::fill_in_chunks(addr, value, bytes, |at, chunk| self.write(at, chunk))
    }
    fn load(&self, _image: &[u8]) -> Result<Box<dyn LoadedModule>> {
        Err(RuntimeError::NotBuilt(
            "the emulator runs the host build of the kernels; it does not load GPU code objects"
                .into(),
        ))
    }
    fn launch(&self, spec: &LaunchSpec<'_>, stream: StreamId) -> Result<()> {
        *self.launches.lock().unwrap_or_else(|e| e.into_inner()).entry(self.handle(stream)).or_default() += 1;
        let RawKernel::Emu(entry) = spec.kernel else {
            return Err(RuntimeError::WrongDevice("kernel"));
        };
        let args = self.alloc(spec.args.len())?;
        let run = || -> Result<convgrad_emu::LaunchReport> {
            self.write(args, spec.args)?;
            self.emu
                .launch(&Launch {
                    name: spec.name,
                    entry,
                    grid: spec.grid,
                    block: spec.block,
                    lds_bytes: spec.lds_bytes as usize,
                    args,
                })
                .map_err(|e| RuntimeError::emu("launch", e))
        };
        let report = run();
        let freed = self.free(args);
        let report = report?;
        freed?;
        *self.last.lock().unwrap() = Some(report);
        Ok(())
    }
    fn synchronize(&self, _stream: StreamId) -> Result<()> {
        Ok(())
    }
    cpu::synchronous_streams_and_events!();
    fn address_range(&self, addr: u64) -> Result<(u64, usize)> {
        self.emu
            .allocation_of(addr)
            .map_err(|e| RuntimeError::emu("address lookup", e))
    }
    fn launches_on(&self, stream: StreamId) -> Option<u64> {
        Some(self.launches.lock().unwrap_or_else(|e| e.into_inner()).get(&self.handle(stream)).copied().unwrap_or(0))
    }
    fn emu_report(&self) -> Option<convgrad_emu::LaunchReport> {
        *self.last.lock().unwrap()
    }
}
