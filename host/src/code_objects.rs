//! The GPU kernels, embedded at build time.
//!
//! `cargo xtask build-kernels` compiles the device crate into
//! `target/kernels/<arch>/convgrad.hsaco` (AMD: `gfx90a`, `gfx942`, `gfx1100`) and
//! `target/kernels/<arch>/convgrad.ptx` (NVIDIA: `sm_80`, `sm_90`), with
//! `target/kernels/manifest.json` describing every kernel. This crate's build script
//! embeds them, so a binary carries its kernels and needs no files at run time.
//!
//! # Where the embedded kernels come from
//!
//! The build script takes the first of:
//!
//! 1. `CONVGRAD_KERNEL_DIR=/path/to/target/kernels` (any `cargo xtask build-kernels` output);
//! 2. the workspace's own `target/kernels`, when it holds code objects (a developer of
//!    convgrad who just rebuilt the kernels; the next `cargo build` re-embeds them);
//! 3. the kernel bundle checked in beside the host crate (`host/kernels/`: all eight
//!    architectures and the manifest, zstd-compressed, about 4.8 MB, with an index of
//!    each object's size and SHA-256 and the pinned toolchain they were built with).
//!    It is part of the package, so a git, path or registry dependent on stable Rust,
//!    without the kernel toolchain, gets every architecture. Bundled objects are
//!    decompressed at first use (per architecture, once per process) into page-aligned
//!    memory that lives until the process exits.
//!
//! After changing the kernels, `cargo xtask bundle-kernels` rewrites the bundle from
//! `target/kernels`; CI rebuilds the kernels and fails (`cargo xtask bundle-kernels
//! --check`) when the committed bundle differs from them.
//!
//! With no kernels and no bundle the build prints a warning and everything here is
//! empty: the emulator backend still works.

use std::sync::OnceLock;

/// An embedded file: as built, or zstd-compressed (`len`: its decompressed size).
#[allow(dead_code)] // A build embeds one kind or the other, depending on where it found kernels.
enum Stored {
    Raw(&'static [u8]),
    Zstd { data: &'static [u8], len: usize },
}

/// One page of decompressed code object, so the whole object is page-aligned
/// (loaders may want an aligned ELF image).
#[derive(Clone, Copy, bytemuck::Zeroable, bytemuck::Pod)]
#[repr(C, align(4096))]
struct Page([u8; 4096]);

impl Stored {
    /// The contents, decompressed into a page-aligned buffer that is never freed (each
    /// object is decompressed once: callers cache the result).
    fn contents(&self, what: &str) -> &'static [u8] {
        match *self {
            Stored::Raw(b) => b,
            Stored::Zstd { data, len } => {
                let mut pages: Vec<Page> = bytemuck::zeroed_vec(len.div_ceil(4096));
                let buf = &mut bytemuck::cast_slice_mut::<Page, u8>(&mut pages)[..len];
                let mut dec = ruzstd::decoding::FrameDecoder::new();
                let n = dec
                    .decode_all(data, buf)
                    .unwrap_or_else(|e| panic!("convgrad: the bundled {what} does not decompress: {e}"));
                assert_eq!(n, len, "convgrad: the bundled {what} decompressed to {n} bytes, the index says {len}");
                assert_eq!(
                    dec.get_checksum_from_data(),
                    dec.get_calculated_checksum(),
                    "convgrad: the bundled {what} fails its checksum"
                );
                let pages: &'static [Page] = Box::leak(pages.into_boxed_slice());
                &bytemuck::cast_slice::<Page, u8>(pages)[..len]
            }
        }
    }
}

mod generated {
    // The generated file defines the page-aligned `Aligned` storage itself, and
    // only when it embeds an uncompressed code object (no dead-code warning otherwise).
    include!(concat!(env!("OUT_DIR"), "/code_objects.rs"));
}

static OBJECTS: [OnceLock<&'static [u8]>; generated::COUNT] = [const { OnceLock::new() }; generated::COUNT];

/// The code object built for `arch`: the HSA code object (ELF, page-aligned) for
/// `"gfx90a"`, `"gfx942"`, `"gfx1100"`, the PTX text (UTF-8, no trailing NUL) for
/// `"sm_80"`, `"sm_90"`. `None` if this build embeds none for `arch`. A bundled object
/// is decompressed by the first call for its architecture.
pub fn code_object(arch: &str) -> Option<&'static [u8]> {
    let i = generated::CODE_OBJECTS.iter().position(|(a, _)| *a == arch)?;
    Some(OBJECTS[i].get_or_init(|| generated::CODE_OBJECTS[i].1.contents(arch)))
}

/// The architectures with an embedded code object, sorted by name.
///
/// All eight (`gfx1100`, `gfx1200`, `gfx1201`, `gfx90a`, `gfx942`, `gfx950`, `sm_80`, `sm_90`) when the checked-in
/// bundle is embedded, as in any dependent of a convgrad checkout or package; in the
/// convgrad workspace, those in `target/kernels` once `cargo xtask build-kernels` has
/// run (a partial `--arch` build embeds only those); or those of `CONVGRAD_KERNEL_DIR`.
/// See the module documentation.
pub fn built_archs() -> &'static [&'static str] {
    &generated::BUILT_ARCHS
}

/// The embedded `manifest.json` (kernels, launch sizes, resources per arch; format
/// in `xtask/src/build/manifest.rs`), if kernels are embedded.
pub fn manifest_json() -> Option<&'static str> {
    static MANIFEST: OnceLock<Option<&'static str>> = OnceLock::new();
    *MANIFEST.get_or_init(|| {
        let bytes = generated::MANIFEST.as_ref()?.contents("manifest.json");
        Some(std::str::from_utf8(bytes).expect("convgrad: the embedded manifest.json is not UTF-8"))
    })
}

/// The directory the build script took the kernels from (for messages): a kernel
/// directory, or the bundle's directory (`host/kernels` of the convgrad source).
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
