//! What the two backends that run kernels on the CPU (the emulator and the
//! isa executor) share: memory is the host's, every launch runs to completion
//! before it returns, so streams are tokens that order nothing and events are
//! host clock readings.

use super::driver::RawEvent;
use super::error::{Result, RuntimeError};
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};

/// Physical memory of the host (what a CPU backend allocates from).
pub(crate) fn host_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|s| {
            let line = s.lines().find(|l| l.starts_with("MemTotal:"))?;
            let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
            Some(kib * 1024)
        })
        .unwrap_or(0)
}

/// Sets `bytes` bytes from `addr` to `value` through `write(addr, chunk)`,
/// in chunks that bound the host buffer.
pub(crate) fn fill_in_chunks(
    addr: u64,
    value: u8,
    bytes: usize,
    mut write: impl FnMut(u64, &[u8]) -> Result<()>,
) -> Result<()> {
    const CHUNK: usize = 1 << 22;
    let buf = vec![value; bytes.min(CHUNK)];
    let mut done = 0;
    while done < bytes {
        let n = (bytes - done).min(CHUNK);
        write(addr + done as u64, &buf[..n])?;
        done += n;
    }
    Ok(())
}

/// Stream handles of a CPU backend: distinct tokens (the device's own stream
/// is `usize::MAX`), never dereferenced.
pub(crate) struct Streams(AtomicUsize);

impl Streams {
    pub fn new() -> Self {
        Streams(AtomicUsize::new(1))
    }
    /// The handle of the device's own stream.
    pub fn own(&self) -> *mut c_void {
        std::ptr::without_provenance_mut(usize::MAX)
    }
    /// A fresh handle.
    pub fn create(&self) -> *mut c_void {
        std::ptr::without_provenance_mut(self.0.fetch_add(1, Ordering::Relaxed))
    }
}

/// An event: the host clock now (the work before it has completed).
pub(crate) fn record() -> RawEvent {
    RawEvent::Host(std::time::Instant::now())
}

/// Milliseconds between two events of [`record`].
pub(crate) fn elapsed_ms(start: &RawEvent, end: &RawEvent) -> Result<f32> {
    match (start, end) {
        (RawEvent::Host(a), RawEvent::Host(b)) => Ok(b.saturating_duration_since(*a).as_secs_f32() * 1e3),
        #[allow(unreachable_patterns)]
        _ => Err(RuntimeError::WrongDevice("event")),
    }
}

/// The [`super::driver::Driver`] methods that are the same on every CPU
/// backend (streams, stream waits, events), for a driver with a
/// `streams: Streams` field. Expands inside its `impl Driver`.
macro_rules! synchronous_streams_and_events {
    () => {
        fn own_stream(&self) -> *mut std::ffi::c_void {
            self.streams.own()
        }
        fn create_stream(&self) -> Result<*mut std::ffi::c_void> {
            Ok(self.streams.create())
        }
        fn destroy_stream(&self, _handle: *mut std::ffi::c_void) {}
        fn stream_wait(&self, _waiter: StreamId, _on: StreamId) -> Result<()> {
            Ok(())
        }
        fn record(&self, _stream: StreamId) -> Result<RawEvent> {
            Ok($crate::runtime::cpu::record())
        }
        fn elapsed_ms(&self, start: &RawEvent, end: &RawEvent) -> Result<f32> {
            $crate::runtime::cpu::elapsed_ms(start, end)
        }
    };
}
pub(crate) use synchronous_streams_and_events;
