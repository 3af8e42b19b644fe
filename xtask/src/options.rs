//! Checks of command-line options shared by `verify`, `bench` and `tune`: a
//! value out of range is an error naming the option and what it allows,
//! never a silently changed run.

use anyhow::{Context, Result, bail};
use convgrad::ops::bwd_weight::{MAX_SPLIT_K, SplitK};
use convgrad_types::instance::{self, INSTANCES};

/// `--split-k`: `auto` or a count of k-batches from 1 to [`MAX_SPLIT_K`].
pub fn parse_split_k(s: &str) -> Result<SplitK> {
    if s.trim().eq_ignore_ascii_case("auto") {
        return Ok(SplitK::Auto);
    }
    parse_split_count("--split-k", s).map(SplitK::Fixed)
}

/// A split-K count for `option`: an integer from 1 to [`MAX_SPLIT_K`]
/// (k-batches run along grid z).
pub fn parse_split_count(option: &str, s: &str) -> Result<u32> {
    let allowed = format!("allowed auto or 1 to {MAX_SPLIT_K} (k-batches run along grid z)");
    let n: u64 = s.trim().parse().with_context(|| format!("{option} {s}: not a number; {allowed}"))?;
    if !(1..=MAX_SPLIT_K as u64).contains(&n) {
        bail!("{option} {s}: out of range; {allowed}");
    }
    Ok(n as u32)
}

/// `--instance NAME` for an operation whose kernel kinds are `ops` (named
/// `op_name`): the instance must exist and be of one of those kinds.
pub fn check_instance(name: &str, ops: &[instance::Op], op_name: &str) -> Result<&'static str> {
    let Some(inst) = instance::find(name) else {
        let near: Vec<&str> = INSTANCES.iter().filter(|i| ops.contains(&i.op)).map(|i| i.name).filter(|n| shares_prefix(n, name)).take(8).collect();
        let hint = if near.is_empty() { String::new() } else { format!(" (similar: {})", near.join(", ")) };
        bail!("--instance {name}: no such kernel instance{hint}; `cargo xtask list-instances` lists them");
    };
    if !ops.contains(&inst.op) {
        bail!("--instance {name}: a {:?} kernel, not one of {op_name}'s ({ops:?}); `cargo xtask list-instances` lists them", inst.op);
    }
    Ok(inst.name)
}

/// Whether `a` and `b` start with the same word (up to the second `_`).
fn shares_prefix(a: &str, b: &str) -> bool {
    let head = |s: &str| s.splitn(3, '_').take(2).collect::<Vec<_>>().join("_");
    head(a) == head(b)
}

/// `--filter F` (`a|b`: any of several) against the suite's shape names:
/// every alternative must match at least one shape.
pub fn check_filter<'a>(filter: Option<&str>, suite: &str, names: impl Iterator<Item = &'a str> + Clone) -> Result<()> {
    let Some(f) = filter else { return Ok(()) };
    for alt in f.split('|') {
        if alt.is_empty() || !names.clone().any(|n| n.contains(alt)) {
            let some: Vec<&str> = names.clone().take(6).collect();
            bail!(
                "--filter {f}: '{alt}' matches no shape of suite '{suite}'; a filter is a part of a shape's name \
                 (e.g. {}), alternatives joined by |",
                some.join(", ")
            );
        }
    }
    Ok(())
}

/// A finite number for the option text `what` (e.g. `--epilogue scale=NaN`).
pub fn finite_f32(what: &str, v: &str) -> Result<f32> {
    let x: f32 = v.trim().parse().with_context(|| format!("{what}: '{v}' is not a number"))?;
    if !x.is_finite() {
        bail!("{what}: '{v}' is not finite; allowed a finite number (an f32)");
    }
    Ok(x)
}

/// `bench`/`tune` after the loop: measuring nothing is an error.
pub fn check_measured(measured: usize, tried: usize, why: &str) -> Result<()> {
    if measured == 0 {
        bail!("nothing measured: {tried} shape(s) selected, none ran ({why})");
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn err<T: std::fmt::Debug>(r: Result<T>) -> String {
        format!("{:#}", r.expect_err("must be refused"))
    }

    #[test]
    fn split_k_out_of_range_is_refused_by_name() {
        assert_eq!(parse_split_k("auto").unwrap(), SplitK::Auto);
        assert_eq!(parse_split_k("4").unwrap(), SplitK::Fixed(4));
        assert_eq!(parse_split_k(&MAX_SPLIT_K.to_string()).unwrap(), SplitK::Fixed(MAX_SPLIT_K));
        for bad in ["4294967295", "0", "65536", "-1", "two", "18446744073709551616"] {
            let e = err(parse_split_k(bad));
            assert!(e.starts_with(&format!("--split-k {bad}:")) && e.contains("1 to 65535"), "{e}");
        }
        let e = err(parse_split_count("--splits", "0"));
        assert!(e.starts_with("--splits 0: out of range"), "{e}");
    }

    #[test]
    fn unknown_or_foreign_instance_is_refused_by_name() {
        let w = INSTANCES.iter().find(|i| instance::Op::BWD_WEIGHT.contains(&i.op)).unwrap();
        let d = INSTANCES.iter().find(|i| instance::Op::BWD_DATA.contains(&i.op)).unwrap();
        assert_eq!(check_instance(w.name, instance::Op::BWD_WEIGHT, "bwd-weight").unwrap(), w.name);
        let e = err(check_instance("bwdw_f16_no_such_tile", instance::Op::BWD_WEIGHT, "bwd-weight"));
        assert!(e.starts_with("--instance bwdw_f16_no_such_tile: no such kernel instance") && e.contains("list-instances"), "{e}");
        assert!(e.contains("similar: bwdw_f16_"), "{e}");
        let e = err(check_instance(d.name, instance::Op::BWD_WEIGHT, "bwd-weight"));
        assert!(e.contains(&format!("--instance {}", d.name)) && e.contains("not one of bwd-weight's"), "{e}");
    }

    #[test]
    fn filter_matching_nothing_is_refused() {
        let names = ["resnet50 conv2", "unet dec4"];
        check_filter(None, "bench", names.iter().copied()).unwrap();
        check_filter(Some("conv2|dec4"), "bench", names.iter().copied()).unwrap();
        for bad in ["nothing", "conv2|nothing", "conv2|"] {
            let e = err(check_filter(Some(bad), "bench", names.iter().copied()));
            assert!(e.starts_with(&format!("--filter {bad}:")) && e.contains("matches no shape of suite 'bench'"), "{e}");
        }
    }

    #[test]
    fn non_finite_numbers_are_refused() {
        assert_eq!(finite_f32("--epilogue scale=2", "2").unwrap(), 2.0);
        for bad in ["NaN", "inf", "-inf", "1e39"] {
            let e = err(finite_f32("--epilogue scale=X", bad));
            assert!(e.contains("is not finite"), "{bad}: {e}");
        }
    }

    #[test]
    fn measuring_nothing_is_an_error() {
        check_measured(1, 3, "").unwrap();
        let e = err(check_measured(0, 3, "every shape was skipped by --instance"));
        assert!(e.starts_with("nothing measured: 3 shape(s) selected"), "{e}");
    }
}
