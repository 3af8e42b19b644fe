//! Which mnemonics of the shipped code objects the executor implements: every
//! one, on every AMD architecture, or the test fails naming the gaps (issue
//! #26). Run with `--nocapture` to see the counts.

mod common;

use convgrad_isa::Arch;
use convgrad_isa::decode::decode_all;
use convgrad_isa::exec::implemented;
use std::collections::BTreeMap;

#[test]
fn every_shipped_mnemonic_is_implemented() {
    let mut gaps = Vec::new();
    for arch in Arch::ALL {
        let co = common::load(arch);
        // base mnemonic -> (static count, kernels using it)
        let mut used: BTreeMap<&'static str, usize> = BTreeMap::new();
        for k in &co.kernels {
            for i in decode_all(arch, &k.code, k.entry).unwrap() {
                *used.entry(i.name).or_default() += 1;
                if let Some(y) = i.vopd_y {
                    *used.entry(y.name).or_default() += 1;
                }
            }
        }
        let missing: Vec<_> = used.iter().filter(|(n, _)| !implemented(n)).collect();
        let n_insts: usize = used.values().sum();
        let n_missing: usize = missing.iter().map(|(_, c)| **c).sum();
        println!(
            "{arch}: {} of {} mnemonics implemented ({} of {n_insts} static instructions); missing: {}",
            used.len() - missing.len(),
            used.len(),
            n_insts - n_missing,
            if missing.is_empty() {
                "none".to_string()
            } else {
                missing
                    .iter()
                    .map(|(n, c)| format!("{n} ({c})"))
                    .collect::<Vec<_>>()
                    .join(", ")
            }
        );
        if !missing.is_empty() {
            gaps.push(format!("{arch}: {}", missing.iter().map(|(n, _)| **n).collect::<Vec<_>>().join(", ")));
        }
    }
    assert!(gaps.is_empty(), "unimplemented mnemonics: {gaps:?}");
}
