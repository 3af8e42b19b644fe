//! Splitting the reference's work over threads without write races.

use std::sync::Mutex;

/// Environment variable that overrides the reference's thread count.
pub const THREADS_ENV: &str = "CONVGRAD_REF_THREADS";

/// Threads the reference uses: `$CONVGRAD_REF_THREADS` when set to a positive
/// number, else [`std::thread::available_parallelism`].
pub fn threads() -> usize {
    if let Some(n) = std::env::var(THREADS_ENV)
        .ok()
        .and_then(|s| s.trim().parse::<usize>().ok())
        && n > 0
    {
        return n;
    }
    std::thread::available_parallelism()
        .map(|n| n.get())
        .unwrap_or(1)
}

/// Below this many multiply-adds in total a pass runs on the calling thread.
const SERIAL_MACS: f64 = 1.0e6;

/// Runs `f(first_row, rows)` over `out`, seen as rows of `row_len` elements,
/// handing contiguous runs of rows to [`threads`] workers from a shared queue
/// (dynamic scheduling). Every element of `out` belongs to exactly one run,
/// so workers never write the same element. `macs_per_row` only decides
/// whether threads are worth starting and how finely to split.
pub(crate) fn par_rows(
    out: &mut [f64],
    row_len: usize,
    macs_per_row: f64,
    f: impl Fn(usize, &mut [f64]) + Sync,
) {
    if out.is_empty() || row_len == 0 {
        return;
    }
    debug_assert_eq!(out.len() % row_len, 0);
    let rows = out.len() / row_len;
    let threads = threads().min(rows);
    if threads <= 1 || macs_per_row * rows as f64 <= SERIAL_MACS {
        f(0, out);
        return;
    }
    // About 8 runs per thread balances uneven rows (border rows have fewer taps).
    let rows_per_task = rows.div_ceil(8 * threads).max(1);
    let queue = Mutex::new(out.chunks_mut(rows_per_task * row_len).enumerate());
    let f = &f;
    let queue = &queue;
    std::thread::scope(|s| {
        for _ in 0..threads {
            s.spawn(move || {
                loop {
                    let next = queue.lock().unwrap_or_else(|e| e.into_inner()).next();
                    let Some((i, chunk)) = next else { break };
                    f(i * rows_per_task, chunk);
                }
            });
        }
    });
}
