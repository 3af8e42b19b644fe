//! Element types. Accumulation is always f32; partial sums of split-K are f32.

/// An element type in memory.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DType {
    /// IEEE binary32.
    F32,
    /// IEEE binary16.
    F16,
    /// bfloat16 (8-bit exponent, 7-bit mantissa).
    Bf16,
    /// TensorFloat-32 (8-bit exponent, 10-bit mantissa): a compute type only
    /// (matrix operands rounded from f32, [`TypeConfig::F32Tf32`]), held in
    /// f32 containers; never a tensor's storage type.
    Tf32,
}

impl DType {
    /// Bytes per element.
    pub const fn bytes(self) -> usize {
        match self {
            DType::F32 | DType::Tf32 => 4,
            DType::F16 | DType::Bf16 => 2,
        }
    }
    /// Explicit mantissa bits (the unit roundoff is `2^-(bits+1)`).
    pub const fn mantissa_bits(self) -> u32 {
        match self {
            DType::F32 => 23,
            DType::F16 | DType::Tf32 => 10,
            DType::Bf16 => 7,
        }
    }
    /// Lower-case name as in `.npy` dumps and command lines.
    pub const fn name(self) -> &'static str {
        match self {
            DType::F32 => "f32",
            DType::F16 => "f16",
            DType::Bf16 => "bf16",
            DType::Tf32 => "tf32",
        }
    }
}

/// The type combination of one operation: activations (x, dy, dx) and weights (w, dw).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum TypeConfig {
    /// Everything f32.
    F32,
    /// Everything f16.
    F16,
    /// Everything bf16.
    Bf16,
    /// bf16 activations, f32 weights / weight gradient (CK's "bf16 (fp32 for weight)").
    Bf16F32,
    /// Everything f32 in memory, the matrix units multiplying operands rounded
    /// to TF32 (10-bit mantissa) with f32 accumulation: NVIDIA's
    /// `mma.sync ... .tf32` (PyTorch's `allow_tf32` for convolutions). Opt-in;
    /// [`TypeConfig::F32`] stays exact.
    F32Tf32,
}

impl TypeConfig {
    /// All combinations.
    /// The combinations every family runs (the test suites rotate over these).
    pub const ALL: [TypeConfig; 4] = [TypeConfig::F32, TypeConfig::F16, TypeConfig::Bf16, TypeConfig::Bf16F32];
    /// Every combination, [`TypeConfig::ALL`] then the opt-in ones that
    /// only some families run ([`TypeConfig::F32Tf32`]: NVIDIA).
    pub const EVERY: [TypeConfig; 5] =
        [TypeConfig::F32, TypeConfig::F16, TypeConfig::Bf16, TypeConfig::Bf16F32, TypeConfig::F32Tf32];
    /// Activation type.
    pub const fn act(self) -> DType {
        match self {
            TypeConfig::F32 | TypeConfig::F32Tf32 => DType::F32,
            TypeConfig::F16 => DType::F16,
            TypeConfig::Bf16 | TypeConfig::Bf16F32 => DType::Bf16,
        }
    }
    /// Weight type.
    pub const fn wei(self) -> DType {
        match self {
            TypeConfig::F32 | TypeConfig::Bf16F32 | TypeConfig::F32Tf32 => DType::F32,
            TypeConfig::F16 => DType::F16,
            TypeConfig::Bf16 => DType::Bf16,
        }
    }
    /// The type the matrix unit multiplies (f32 data is multiplied as f32 on the
    /// CPU-side paths and as f16/bf16-split-free f32 FMA on the GPU paths;
    /// [`TypeConfig::F32Tf32`] as TF32).
    pub const fn compute(self) -> DType {
        match self {
            TypeConfig::F32Tf32 => DType::Tf32,
            _ => self.act(),
        }
    }
    /// Command-line name: `f32`, `f16`, `bf16`, `bf16-f32`, `f32-tf32`.
    pub const fn name(self) -> &'static str {
        match self {
            TypeConfig::F32 => "f32",
            TypeConfig::F16 => "f16",
            TypeConfig::Bf16 => "bf16",
            TypeConfig::Bf16F32 => "bf16-f32",
            TypeConfig::F32Tf32 => "f32-tf32",
        }
    }
    /// Parses [`TypeConfig::name`].
    pub fn parse(s: &str) -> Option<TypeConfig> {
        TypeConfig::EVERY.into_iter().find(|t| t.name().eq_ignore_ascii_case(s))
    }
}
