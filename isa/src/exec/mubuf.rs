//! Buffer (MUBUF) instructions: only the cache-maintenance forms our kernels use,
//! which do nothing under the executor's sequentially consistent memory. Buffer
//! loads and stores (resource descriptors) are not implemented.

use super::{Flow, Handler};

pub(super) const HANDLERS: &[(&str, Handler)] = &[
    ("buffer_wbl2", |_, _| Ok(Flow::Next)),
    ("buffer_inv", |_, _| Ok(Flow::Next)),
    ("buffer_invl2", |_, _| Ok(Flow::Next)),
    ("buffer_wbinvl1", |_, _| Ok(Flow::Next)),
    ("buffer_wbinvl1_vol", |_, _| Ok(Flow::Next)),
    ("buffer_gl0_inv", |_, _| Ok(Flow::Next)),
    ("buffer_gl1_inv", |_, _| Ok(Flow::Next)),
];
