//! `ConvProblem::from_ck_args` on arbitrary numbers, then every size, span and
//! flop query of an accepted problem and `supports` of both operations: each
//! returns an error or a value, never panics or overflows.
#![no_main]

use convgrad_fuzz::{Numbers, ask_supports};
use convgrad_types::ConvProblem;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    let mut num = Numbers::new(data);
    let Some(args) = num.problem_args() else { return };
    let Ok(p) = ConvProblem::from_ck_args(&args) else { return };
    // An accepted problem prints and reads back as itself.
    assert_eq!(p.ck_args().collect::<Vec<_>>(), args);
    assert_eq!(ConvProblem::from_ck_args(&args), Ok(p));
    let _ = p.to_string();
    // Checked queries agree with the saturating ones.
    let pairs = [
        (p.checked_filter_taps(), p.filter_taps()),
        (p.checked_input_pixels(), p.input_pixels()),
        (p.checked_output_pixels(), p.output_pixels()),
        (p.checked_input_elems(), p.input_elems()),
        (p.checked_weight_elems(), p.weight_elems()),
        (p.checked_output_elems(), p.output_elems()),
        (p.checked_flops(), p.flops()),
    ];
    for (checked, saturating) in pairs {
        assert_eq!(checked.unwrap_or(u64::MAX), saturating);
    }
    let _ = (p.bwd_weight_bytes(2, 4), p.bwd_data_bytes(4, 4));
    let _ = (p.output(), p.checked_output());
    ask_supports(&p, &mut num);
});
