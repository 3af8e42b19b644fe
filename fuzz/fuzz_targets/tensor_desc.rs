//! `TensorDesc` construction and `validate_for` against a problem: arbitrary
//! strides (and, for `checked_span`, arbitrary lengths) give an error or a
//! span; an accepted written tensor has no two elements at one offset, and
//! every offset lies inside the span.
#![no_main]

use convgrad_fuzz::{Numbers, ROLES};
use convgrad_types::layout::AXES;
use convgrad_types::{ConvLayout, ConvProblem, TensorDesc};
use libfuzzer_sys::fuzz_target;

/// Largest tensor whose offsets are enumerated.
const ENUMERATE: u64 = 1 << 12;

fuzz_target!(|data: &[u8]| {
    let mut num = Numbers::new(data);
    let Some(args) = num.problem_args() else { return };
    let role = num.pick(&ROLES);
    let layout = num.pick(&ConvLayout::ALL);
    let written = num.byte().is_some_and(|b| b & 1 == 1);
    let mut strides = [0usize; AXES];
    for s in &mut strides {
        *s = num.next_usize().unwrap_or(1);
    }
    // Arbitrary lengths too: the span arithmetic alone.
    let raw = TensorDesc { lengths: [args[1], args[2], args[3], args[4], args[5], args[6]], strides };
    assert_eq!(raw.checked_span("raw").unwrap_or(u64::MAX), raw.span());
    let _ = raw.elems();
    let Ok(p) = ConvProblem::from_ck_args(&args) else { return };
    let packed = TensorDesc::packed(&p, layout, role);
    if let Ok(span) = packed.validate_for(&p, role, "packed", true) {
        // A packed tensor fills its span exactly.
        assert_eq!(span, packed.elems());
    }
    let desc = TensorDesc::strided(&p, role, strides);
    if let Ok(span) = desc.validate_for(&p, role, "strided", written) {
        assert_eq!(span, desc.span());
        check_offsets(&desc, span, written);
    }
});

/// Enumerates a small tensor's offsets: each inside `span`, all distinct when `written`.
fn check_offsets(d: &TensorDesc, span: u64, written: bool) {
    if d.elems() > ENUMERATE {
        return;
    }
    let mut seen = std::collections::HashSet::new();
    let mut index = [0usize; AXES];
    for _ in 0..d.elems() {
        let off: u64 = index.iter().zip(&d.strides).map(|(&i, &s)| i as u64 * s as u64).sum();
        assert!(off < span, "offset {off} outside span {span} of {d:?}");
        assert!(!written || seen.insert(off), "two elements at offset {off} in written {d:?}");
        for a in (0..AXES).rev() {
            index[a] += 1;
            if index[a] < d.lengths[a] {
                break;
            }
            index[a] = 0;
        }
    }
}
