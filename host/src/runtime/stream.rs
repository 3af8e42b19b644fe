//! Streams: the queues launches, fills and events are ordered on.
//!
//! A [`Device`] has its own stream ([`Device::default_stream`]). A framework
//! passes its own instead ([`Device::wrap_stream`]: PyTorch's
//! `torch.cuda.current_stream().cuda_stream`, a `hipStream_t`), so that
//! convgrad's launches are ordered with the framework's work without a host
//! wait; [`Device::create_stream`] makes a new one that convgrad owns.
//!
//! Uploads, downloads and frees are ordered on the device's own stream. A
//! buffer that work on another stream still uses must not be dropped before
//! that work is done: make the device's stream wait for it first
//! ([`Stream::wait_for`]) or synchronize the other stream. The emulator runs
//! every launch to completion, so its streams order nothing.

use super::driver::{RawEvent, StreamId};
use super::error::{Result, RuntimeError};
use super::{Device, DeviceInner, Event};
use std::ffi::c_void;
use std::fmt;
use std::sync::Arc;

/// A stream of one device: its own, one convgrad created, or a caller's.
pub struct Stream {
    dev: Arc<DeviceInner>,
    id: StreamId,
    /// Destroyed on drop (made by [`Device::create_stream`]).
    owned: bool,
}

impl fmt::Debug for Stream {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let kind = match (self.id, self.owned) {
            (StreamId::Own, _) => "device's own",
            (_, true) => "created",
            (_, false) => "foreign",
        };
        write!(f, "Stream({kind}, {:p})", self.handle())
    }
}

impl Stream {
    pub(crate) fn own(dev: Arc<DeviceInner>) -> Stream {
        Stream { dev, id: StreamId::Own, owned: false }
    }
    pub(crate) fn id(&self) -> StreamId {
        self.id
    }
    /// Checks that the stream belongs to `dev`.
    pub(crate) fn check_device(&self, dev: &Arc<DeviceInner>) -> Result<()> {
        if Arc::ptr_eq(&self.dev, dev) { Ok(()) } else { Err(RuntimeError::WrongDevice("stream")) }
    }

    /// The runtime handle (`CUstream` / `hipStream_t`; the emulator: a token).
    /// Null for a wrapped null handle (CUDA's legacy default stream).
    pub fn handle(&self) -> *mut c_void {
        match self.id {
            StreamId::Handle(h) => h,
            StreamId::Own => self.dev.driver.own_stream(),
        }
    }
    /// The device it belongs to.
    pub fn device(&self) -> Device {
        Device { inner: self.dev.clone() }
    }
    /// Waits on the host until all work queued on this stream is done; reports
    /// errors of earlier launches.
    pub fn synchronize(&self) -> Result<()> {
        self.dev.driver.synchronize(self.id)
    }
    /// Makes this stream wait (on the device, not the host) for the work
    /// queued on `other` so far.
    pub fn wait_for(&self, other: &Stream) -> Result<()> {
        other.check_device(&self.dev)?;
        if self.id == other.id {
            return Ok(());
        }
        self.dev.driver.stream_wait(self.id, other.id)
    }
    /// Kernel launches queued on this stream so far, on the emulator (which
    /// counts them per stream handle: two wraps of one handle share a count);
    /// `None` on the other backends. For tests of which stream work went to.
    pub fn emulated_launches(&self) -> Option<u64> {
        self.dev.driver.launches_on(self.id)
    }
    /// Records an event on this stream (for timing with [`Event::elapsed_ms`]).
    pub fn record_event(&self) -> Result<Event> {
        let raw: RawEvent = self.dev.driver.record(self.id)?;
        Ok(Event { dev: self.dev.clone(), raw })
    }
}

impl Drop for Stream {
    fn drop(&mut self) {
        if let (true, StreamId::Handle(h)) = (self.owned, self.id) {
            self.dev.driver.destroy_stream(h);
        }
    }
}

impl Device {
    /// The device's own stream, which [`Device::launch`], uploads, downloads
    /// and frees use (a handle to it: dropping it destroys nothing).
    pub fn default_stream(&self) -> Stream {
        Stream::own(self.inner.clone())
    }
    /// Creates a new stream of this device, destroyed when dropped.
    pub fn create_stream(&self) -> Result<Stream> {
        let h = self.inner.driver.create_stream()?;
        Ok(Stream { dev: self.inner.clone(), id: StreamId::Handle(h), owned: true })
    }
    /// Wraps a stream the caller owns: a `CUstream` on CUDA (null is the
    /// legacy default stream), a `hipStream_t` on HIP; any value on the
    /// emulator. convgrad never destroys it. On CUDA a stream of another
    /// context (another device, or not the primary context) is an error,
    /// [`RuntimeError::WrongDevice`]`("stream")`, as is a handle the driver
    /// reports unknown (`cuStreamGetCtx`).
    ///
    /// # Safety
    /// `handle` must be a live stream of this device's context (CUDA: the
    /// primary context, which PyTorch and the runtime API use) and outlive
    /// every use of the returned [`Stream`]. The check above catches a live
    /// stream of another device; it cannot make an arbitrary integer safe.
    pub unsafe fn wrap_stream(&self, handle: *mut c_void) -> Result<Stream> {
        self.inner.driver.check_stream(handle)?;
        Ok(Stream { dev: self.inner.clone(), id: StreamId::Handle(handle), owned: false })
    }
}
