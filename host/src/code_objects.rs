//! The GPU kernels, embedded at build time.
//!
//! `cargo xtask build-kernels` compiles the device crate into
//! `target/kernels/<arch>/convgrad.hsaco` (AMD: `gfx90a`, `gfx942`, `gfx1100`) and
//! `target/kernels/<arch>/convgrad.ptx` (NVIDIA: `sm_80`, `sm_90`), with
//! `target/kernels/manifest.json` describing every kernel. This crate's build script
//! embeds whatever it finds there, so a binary carries its kernels and needs no
//! files at run time.
//!
//! # Getting kernels into a crate that depends on `convgrad`
//!
//! - In this workspace, run `cargo xtask build-kernels` once (and again after
//!   changing the device crate); the next `cargo build` re-embeds them (the build
//!   script watches the directory).
//! - From another crate (path or git dependency): run `cargo xtask build-kernels`
//!   in a convgrad checkout and point the build at it with
//!   `CONVGRAD_KERNEL_DIR=/path/to/convgrad/target/kernels cargo build`
//!   (without it, `target/kernels` beside the host crate's own directory is used).
//!
//! With no kernels the build prints a warning and everything here is empty:
//! the emulator backend still works.

mod generated {
    // The generated file defines the page-aligned `Aligned` storage itself, and
    // only when it embeds a code object (no dead-code warning without kernels).
    include!(concat!(env!("OUT_DIR"), "/code_objects.rs"));
}

/// The code object built for `arch`: the HSA code object (ELF) for `"gfx90a"`,
/// `"gfx942"`, `"gfx1100"`, the PTX text (UTF-8, no trailing NUL) for `"sm_80"`,
/// `"sm_90"`. `None` if it was not built when this crate was compiled.
pub fn code_object(arch: &str) -> Option<&'static [u8]> {
    generated::CODE_OBJECTS.iter().find(|(a, _)| *a == arch).map(|(_, bytes)| *bytes)
}

/// The architectures with an embedded code object, sorted by name.
pub fn built_archs() -> &'static [&'static str] {
    &generated::BUILT_ARCHS
}

/// The embedded `manifest.json` (kernels, launch sizes, resources per arch; format
/// in `xtask/src/build/manifest.rs`), if kernels were built.
pub fn manifest_json() -> Option<&'static str> {
    generated::MANIFEST
}

/// The directory the build script took the kernels from (for messages).
pub fn kernel_dir() -> &'static str {
    generated::KERNEL_DIR
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn embedded_objects_are_consistent() {
        for arch in built_archs() {
            let b = code_object(arch).expect("listed arch has an object");
            if arch.starts_with("gfx") {
                assert!(b.starts_with(b"\x7fELF"), "{arch}: not an ELF");
                assert_eq!(b.as_ptr() as usize % 4096, 0, "{arch}: not page-aligned");
            } else {
                assert!(std::str::from_utf8(b).expect("PTX is UTF-8").contains(".entry"), "{arch}: no entry");
            }
        }
        if !built_archs().is_empty() {
            assert!(manifest_json().expect("manifest embedded").contains("\"kernels\""));
        }
        assert!(code_object("gfx000").is_none());
    }
}
