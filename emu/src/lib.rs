//! PLACEHOLDER: implemented by the emulator work (see device/src/arch/emu.rs for the lane API used).
pub mod lane {}
