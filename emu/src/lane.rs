//! Operations of the running lane (fiber). Called from `device/src/arch/emu.rs`.
//! Outside a launch they panic with a clear message.

use crate::matrix::MatrixOp;

/// Thread index in the workgroup.
pub fn thread_id() -> u32 {
    todo!()
}
/// Workgroup index.
pub fn block_id() -> [u32; 3] {
    todo!()
}
/// Workgroup barrier: suspends until every live lane of the workgroup arrives.
pub fn barrier() {
    todo!()
}
/// Checked global load of one `T` at `p`.
pub fn global_load<T: Copy>(p: *const T) -> T {
    let _ = p;
    todo!()
}
/// Checked global store.
pub fn global_store<T: Copy>(p: *mut T, v: T) {
    let _ = (p, v);
    todo!()
}
/// Atomic f32 add (atomic with respect to other workgroups running in parallel).
pub fn atomic_add_f32(p: *mut f32, v: f32) {
    let _ = (p, v);
    todo!()
}
/// Checked LDS load at byte offset `off`.
pub fn lds_load<T: Copy>(off: usize) -> T {
    let _ = off;
    todo!()
}
/// Checked LDS store.
pub fn lds_store<T: Copy>(off: usize, v: T) {
    let _ = (off, v);
    todo!()
}
/// Wave-collective matrix instruction: every lane of the wave calls it with its
/// operand registers; `a`, `b` hold 16-bit elements in the LLVM vector element
/// order, `c` and `d` f32 accumulators. Returns when the whole wave has issued it.
pub fn mma(op: MatrixOp, a: &[u16], b: &[u16], c: &[f32], d: &mut [f32]) {
    let _ = (op, a, b, c, d);
    todo!()
}
/// Aborts the kernel with a violation naming this lane.
pub fn trap() -> ! {
    todo!()
}
