//! Buffer (MUBUF) instructions: only the cache-maintenance forms our kernels use,
//! which act on the cache model (`cache.rs`: invalidates and gfx942's L2 write-back;
//! the others, e.g. gfx90a's `buffer_wbl2`/`buffer_invl2` for system scope, change
//! nothing it models). Buffer loads and stores (resource descriptors) are not
//! implemented.

use super::cache::Bits;
use super::{Ctx, Flow, Handler};
use crate::decode::Inst;

fn maintain(c: &mut Ctx, i: &Inst) -> Result<Flow, String> {
    let bits = Bits {
        glc: i.mods.glc,
        slc: i.mods.slc,
        dlc: i.mods.dlc,
    };
    let uid = c.wave.uid;
    if let Some(m) = c.mem.cache() {
        m.maintain(uid, i.name, bits);
    }
    Ok(Flow::Next)
}

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("buffer_wbl2", maintain),
    ("buffer_inv", maintain),
    ("buffer_invl2", maintain),
    ("buffer_wbinvl1", maintain),
    ("buffer_wbinvl1_vol", maintain),
    ("buffer_gl0_inv", maintain),
    ("buffer_gl1_inv", maintain),
];
