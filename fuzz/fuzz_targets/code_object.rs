//! The code-object metadata readers on arbitrary bytes: the AMD one (ELF
//! notes through `object`, MessagePack through `rmpv`) and the PTX one (text).
//! Each gives an error or kernels whose ABI check answers; an AMD object that
//! passes is then loaded by the isa backend, the loader `Backend::Isa` runs.
#![no_main]

use convgrad::runtime::meta::{amdgpu, check_amd_abi, check_ptx_abi, ptx};
use convgrad::runtime::{Backend, Device, IsaArch};
use libfuzzer_sys::fuzz_target;
use std::sync::OnceLock;

fn isa_device() -> &'static Device {
    static DEV: OnceLock<Device> = OnceLock::new();
    DEV.get_or_init(|| Device::open(Backend::Isa(IsaArch::Gfx942), 0).expect("the isa backend always opens"))
}

fuzz_target!(|data: &[u8]| {
    if let Ok(co) = amdgpu::parse(data) {
        let _ = co.processor();
        if co.kernels.iter().all(|k| check_amd_abi(k).is_ok()) {
            let _ = isa_device().load_module_image(data);
        }
    }
    if let Ok(text) = std::str::from_utf8(data)
        && let Ok(m) = ptx::parse(text)
    {
        for k in &m.kernels {
            let _ = check_ptx_abi(k);
        }
    }
});
