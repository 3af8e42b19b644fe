//! The emulator backend: `convgrad-emu` runs the device crate's host build of
//! each kernel; launches are synchronous and timed by the host clock.

use super::driver::{Driver, Info, LaunchSpec, LoadedModule, RawEvent, RawKernel, StreamId};
use super::error::{Result, RuntimeError};
use convgrad_emu::{EmuArch, Emulator, KernelEntry, Launch};
use convgrad_types::instance::Family;
use std::ffi::c_void;
use std::sync::Mutex;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::Instant;

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
    /// Tokens handed out as stream handles (every launch runs to completion,
    /// so streams order nothing).
    streams: AtomicUsize,
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
            memory_bytes: host_memory_bytes(),
            compute_units: cores as u32,
            max_lds_bytes: arch.max_lds_bytes() as u32,
            wave_size: arch.wave(),
            ordinal: 0,
        },
        last: Mutex::new(None),
        streams: AtomicUsize::new(1),
    }
}

/// Physical memory of the host (what the emulator allocates from).
fn host_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

impl Driver for EmuDriver {
    fn info(&self) -> &Info {
        &self.info
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
        // In chunks, to bound the host buffer.
        const CHUNK: usize = 1 << 22;
        let buf = vec![value; bytes.min(CHUNK)];
        let mut done = 0;
        while done < bytes {
            let n = (bytes - done).min(CHUNK);
            self.write(addr + done as u64, &buf[..n])?;
            done += n;
        }
        Ok(())
    }
    fn load(&self, _image: &[u8]) -> Result<Box<dyn LoadedModule>> {
        Err(RuntimeError::NotBuilt(
            "the emulator runs the host build of the kernels; it does not load GPU code objects"
                .into(),
        ))
    }
    fn launch(&self, spec: &LaunchSpec<'_>, _stream: StreamId) -> Result<()> {
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
    fn own_stream(&self) -> *mut c_void {
        std::ptr::without_provenance_mut(usize::MAX)
    }
    fn create_stream(&self) -> Result<*mut c_void> {
        let token = self.streams.fetch_add(1, Ordering::Relaxed);
        Ok(std::ptr::without_provenance_mut(token))
    }
    fn destroy_stream(&self, _handle: *mut c_void) {}
    fn stream_wait(&self, _waiter: StreamId, _on: StreamId) -> Result<()> {
        Ok(())
    }
    fn address_range(&self, addr: u64) -> Result<(u64, usize)> {
        self.emu
            .allocation_of(addr)
            .map_err(|e| RuntimeError::emu("address lookup", e))
    }
    fn emu_report(&self) -> Option<convgrad_emu::LaunchReport> {
        *self.last.lock().unwrap()
    }
    fn record(&self, _stream: StreamId) -> Result<RawEvent> {
        Ok(RawEvent::Host(Instant::now()))
    }
    fn elapsed_ms(&self, start: &RawEvent, end: &RawEvent) -> Result<f32> {
        match (start, end) {
            (RawEvent::Host(a), RawEvent::Host(b)) => {
                Ok(b.saturating_duration_since(*a).as_secs_f32() * 1e3)
            }
            #[allow(unreachable_patterns)]
            _ => Err(RuntimeError::WrongDevice("event")),
        }
    }
}
