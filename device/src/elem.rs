//! Element types in device memory. Arithmetic is f32; these convert.

// IEEE binary16. GPU targets use the primitive `f16` (a nightly feature); the host
// (emulator) build uses `half::f16` so it compiles on stable Rust. Same bits, and
// both convert from f32 rounding to nearest-even, as the hardware does.
#[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
pub use half::f16;

/// f16 under one path on every target (for macros: `core` does not export the
/// primitive `f16` by path).
pub type F16 = f16;

/// bfloat16 stored as its bits (no `core` type exists).
#[repr(transparent)]
#[derive(Clone, Copy, Default, PartialEq, Eq, Debug)]
pub struct Bf16(pub u16);

/// 16 bytes of elements, 16-byte aligned: one vector load on every target.
#[repr(C, align(16))]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Vec16<A>(pub A);

/// 4-byte-aligned elements (LDS fragment runs).
#[repr(C, align(4))]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Al4<A>(pub A);

/// 8-byte-aligned elements (LDS fragment runs).
#[repr(C, align(8))]
#[derive(Clone, Copy, Default, Debug, PartialEq)]
pub struct Al8<A>(pub A);

/// A storage element: f32, f16 or bf16.
pub trait Elem: Copy + Default + 'static {
    /// Bytes in memory.
    const BYTES: usize;
    /// Elements in 16 bytes.
    const LANES: usize = 16 / Self::BYTES;
    /// The 16-byte vector of this type.
    type V16: Copy + Default + AsRef<[Self]> + AsMut<[Self]>;
    /// Widens to f32.
    fn to_f32(self) -> f32;
    /// Rounds f32 to nearest-even.
    fn from_f32(v: f32) -> Self;
    /// Raw bits of 16-bit types (matrix operands); f32 gives its low half (unused).
    fn bits16(self) -> u16;
}

impl Elem for f32 {
    const BYTES: usize = 4;
    type V16 = Vec16<[f32; 4]>;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        self
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        v
    }
    #[inline(always)]
    fn bits16(self) -> u16 {
        self.to_bits() as u16
    }
}

impl Elem for f16 {
    const BYTES: usize = 2;
    type V16 = Vec16<[f16; 8]>;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        #[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
        {
            self as f32
        }
        #[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
        {
            f16::to_f32(self)
        }
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        #[cfg(any(target_arch = "amdgpu", target_arch = "nvptx64"))]
        {
            v as f16
        }
        #[cfg(not(any(target_arch = "amdgpu", target_arch = "nvptx64")))]
        {
            f16::from_f32(v)
        }
    }
    #[inline(always)]
    fn bits16(self) -> u16 {
        f16::to_bits(self)
    }
}

impl Elem for Bf16 {
    const BYTES: usize = 2;
    type V16 = Vec16<[Bf16; 8]>;
    #[inline(always)]
    fn to_f32(self) -> f32 {
        f32::from_bits((self.0 as u32) << 16)
    }
    #[inline(always)]
    fn from_f32(v: f32) -> Self {
        Bf16(crate::arch::f32_to_bf16(v))
    }
    #[inline(always)]
    fn bits16(self) -> u16 {
        self.0
    }
}


impl<T, const N: usize> AsRef<[T]> for Vec16<[T; N]> {
    #[inline(always)]
    fn as_ref(&self) -> &[T] {
        &self.0
    }
}

impl<T, const N: usize> AsMut<[T]> for Vec16<[T; N]> {
    #[inline(always)]
    fn as_mut(&mut self) -> &mut [T] {
        &mut self.0
    }
}

macro_rules! as_slice {
    ($($w:ident),*) => {$(
        impl<T, const N: usize> AsRef<[T]> for $w<[T; N]> {
            #[inline(always)]
            fn as_ref(&self) -> &[T] {
                &self.0
            }
        }
        impl<T, const N: usize> AsMut<[T]> for $w<[T; N]> {
            #[inline(always)]
            fn as_mut(&mut self) -> &mut [T] {
                &mut self.0
            }
        }
    )*};
}
as_slice!(Al4, Al8);
