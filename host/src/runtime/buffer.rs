//! Typed device buffers.

use super::DeviceInner;
use super::error::{Result, RuntimeError, elems};
use std::fmt;
use std::marker::PhantomData;
use std::mem::size_of;
use std::sync::Arc;

/// Element types with a NaN that [`DeviceBuffer::fill_nan`] can poison with.
///
/// The poison is the all-ones bit pattern, a NaN in each of these types
/// (f32 `0xffff_ffff`, f16 and bf16 `0xffff`), so one byte fill writes it.
pub trait NanPoison: bytemuck::Pod {}
impl NanPoison for f32 {}
impl NanPoison for f64 {}
impl NanPoison for half::f16 {}
impl NanPoison for half::bf16 {}

/// `len` elements of `T` in device memory: allocated by convgrad and freed
/// on drop (in the order of the device's own stream), or the caller's memory
/// wrapped by [`Device::wrap_foreign`](super::Device::wrap_foreign), which
/// convgrad never frees.
pub struct DeviceBuffer<T: bytemuck::Pod> {
    dev: Arc<DeviceInner>,
    addr: u64,
    len: usize,
    /// Allocated by convgrad (freed on drop).
    owned: bool,
    _t: PhantomData<T>,
}

/// An untyped view of device memory (a [`DeviceBuffer`] of any element
/// type), as the operations take their tensors: address, byte length and
/// device, so lengths are checked against the plan before any launch.
#[derive(Clone, Copy)]
pub struct BufRef<'a> {
    dev: &'a Arc<DeviceInner>,
    addr: u64,
    bytes: usize,
}

impl<'a, T: bytemuck::Pod> From<&'a DeviceBuffer<T>> for BufRef<'a> {
    fn from(b: &'a DeviceBuffer<T>) -> Self {
        BufRef { dev: &b.dev, addr: b.addr, bytes: b.bytes() }
    }
}

impl BufRef<'_> {
    /// The device address (0 for an empty buffer).
    pub fn device_addr(&self) -> u64 {
        self.addr
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.bytes
    }
    /// Checks that it lives on `dev`; `what` names the tensor in the error.
    pub(crate) fn check_device(&self, dev: &Arc<DeviceInner>, what: &'static str) -> Result<()> {
        if Arc::ptr_eq(self.dev, dev) { Ok(()) } else { Err(RuntimeError::WrongDevice(what)) }
    }
}

impl fmt::Debug for BufRef<'_> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "BufRef[{} bytes] @ {:#x}", self.bytes, self.addr)
    }
}

impl<T: bytemuck::Pod> DeviceBuffer<T> {
    pub(crate) fn new(dev: Arc<DeviceInner>, len: usize) -> Result<Self> {
        let bytes = len
            .checked_mul(size_of::<T>())
            .ok_or_else(|| RuntimeError::SizeMismatch {
                what: "alloc",
                host: format!("{len} elements of {} bytes", size_of::<T>()),
                device: "more than the address space".into(),
            })?;
        let addr = if bytes == 0 {
            0
        } else {
            dev.driver.alloc(bytes)?
        };
        Ok(DeviceBuffer {
            dev,
            addr,
            len,
            owned: true,
            _t: PhantomData,
        })
    }

    /// Wraps `len` elements at `addr`, after checking with the runtime that
    /// they lie inside one allocation of the device.
    pub(crate) fn foreign(dev: Arc<DeviceInner>, addr: u64, len: usize) -> Result<Self> {
        let bytes = len.checked_mul(size_of::<T>()).ok_or_else(|| RuntimeError::SizeMismatch {
            what: "wrap_foreign",
            host: format!("{len} elements of {} bytes", size_of::<T>()),
            device: "more than the address space".into(),
        })?;
        if bytes > 0 {
            if !addr.is_multiple_of(align_of::<T>() as u64) {
                return Err(RuntimeError::ForeignMemory(format!(
                    "address {addr:#x} is not aligned to {} bytes for {}",
                    align_of::<T>(),
                    std::any::type_name::<T>()
                )));
            }
            let (base, size) = dev.driver.address_range(addr).map_err(|e| {
                RuntimeError::ForeignMemory(format!("address {addr:#x} is not device memory of this device ({e})"))
            })?;
            if addr + bytes as u64 > base + size as u64 {
                return Err(RuntimeError::ForeignMemory(format!(
                    "{bytes} bytes at {addr:#x} run past the end of its allocation ({size} bytes at {base:#x}) by {} bytes",
                    addr + bytes as u64 - (base + size as u64)
                )));
            }
        }
        Ok(DeviceBuffer { dev, addr: if bytes == 0 { 0 } else { addr }, len, owned: false, _t: PhantomData })
    }

    /// Whether convgrad allocated it (and frees it on drop).
    pub fn is_owned(&self) -> bool {
        self.owned
    }
    /// An untyped view, as the operations take their tensors.
    pub fn as_buf_ref(&self) -> BufRef<'_> {
        self.into()
    }

    /// Elements.
    pub fn len(&self) -> usize {
        self.len
    }
    /// Whether it holds no elements.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }
    /// Size in bytes.
    pub fn bytes(&self) -> usize {
        self.len * size_of::<T>()
    }
    /// The device address (what goes into argument blocks); 0 for an empty buffer.
    pub fn device_addr(&self) -> u64 {
        self.addr
    }
    /// The device it lives on.
    pub fn device(&self) -> super::Device {
        super::Device {
            inner: self.dev.clone(),
        }
    }

    fn check_len(&self, what: &'static str, n: usize) -> Result<()> {
        if n != self.len {
            return Err(RuntimeError::SizeMismatch {
                what,
                host: elems(n, size_of::<T>()),
                device: elems(self.len, size_of::<T>()),
            });
        }
        Ok(())
    }

    /// Checks that the buffer holds at least `required` elements, as a problem
    /// descriptor demands of tensor `what` (call before launching).
    pub fn require_len(&self, what: &str, required: usize) -> Result<()> {
        if self.len < required {
            return Err(RuntimeError::BufferTooSmall {
                what: what.to_string(),
                required: elems(required, size_of::<T>()),
                actual: elems(self.len, size_of::<T>()),
            });
        }
        Ok(())
    }

    /// Copies `data` (exactly [`DeviceBuffer::len`] elements) to the device.
    pub fn upload(&self, data: &[T]) -> Result<()> {
        self.check_len("upload", data.len())?;
        if self.addr == 0 {
            return Ok(());
        }
        self.dev.driver.write(self.addr, bytemuck::cast_slice(data))
    }

    /// Copies the buffer into `out` (exactly [`DeviceBuffer::len`] elements).
    pub fn download_into(&self, out: &mut [T]) -> Result<()> {
        self.check_len("download", out.len())?;
        if self.addr == 0 {
            return Ok(());
        }
        self.dev
            .driver
            .read(self.addr, bytemuck::cast_slice_mut(out))
    }

    /// Copies the buffer to a new vector.
    pub fn download(&self) -> Result<Vec<T>> {
        let mut v = vec![T::zeroed(); self.len];
        self.download_into(&mut v)?;
        Ok(v)
    }

    /// Sets every byte to `value` (queued on the device's own stream).
    pub fn fill_bytes(&self, value: u8) -> Result<()> {
        self.fill_bytes_on(&super::Stream::own(self.dev.clone()), value)
    }

    /// Sets every byte to `value`, queued on `stream`.
    pub fn fill_bytes_on(&self, stream: &super::Stream, value: u8) -> Result<()> {
        stream.check_device(&self.dev)?;
        if self.addr == 0 {
            return Ok(());
        }
        self.dev.driver.fill(self.addr, value, self.bytes(), stream.id())
    }

    /// Sets every element to zero.
    pub fn fill_zero(&self) -> Result<()> {
        self.fill_bytes(0)
    }
}

impl<T: NanPoison> DeviceBuffer<T> {
    /// Poisons the buffer with NaN (all bits set), so that any element a kernel
    /// fails to write shows up in a comparison.
    pub fn fill_nan(&self) -> Result<()> {
        self.fill_bytes(0xff)
    }
}

impl<T: bytemuck::Pod> Drop for DeviceBuffer<T> {
    fn drop(&mut self) {
        if self.owned && self.addr != 0 {
            // A failure here has nowhere to go; the runtime reports it on the next call.
            let _ = self.dev.driver.free(self.addr);
        }
    }
}

impl<T: bytemuck::Pod> fmt::Debug for DeviceBuffer<T> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "DeviceBuffer<{}>[{}] @ {:#x}",
            std::any::type_name::<T>(),
            self.len,
            self.addr
        )
    }
}
