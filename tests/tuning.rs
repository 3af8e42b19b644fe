//! The tuning table (`convgrad::ops::tuned`): an entry replaces the hand
//! rules' choice where its instance fits, on its architecture's family only;
//! bad tables are errors naming the file; the file of `CONVGRAD_TUNING` and
//! an installed table override the embedded ones.
//!
//! The table in use is process-wide: every test holds [`LOCK`] and leaves no
//! table installed ([`Scope`]).

use convgrad::ops::bwd_data::{self, BwdDataConfig};
use convgrad::ops::bwd_weight::{self, BwdWeightConfig};
use convgrad::ops::select::{self, Request};
use convgrad::ops::tuned::{self, Entry, Key, Operation, Table};
use convgrad::runtime::{Backend, Device, EmuArch};
use convgrad::types::instance::Family;
use convgrad::types::{ConvLayout, ConvProblem, TensorDesc, TensorRole, TypeConfig};
use convgrad::verify::bwd_weight::{Case, run};
use std::sync::{Mutex, MutexGuard, PoisonError};

static LOCK: Mutex<()> = Mutex::new(());

/// Holds [`LOCK`]; on drop removes the installed table and `CONVGRAD_TUNING`.
struct Scope(#[allow(dead_code)] MutexGuard<'static, ()>);

impl Scope {
    /// No table: the hand rules choose.
    fn hand_rules() -> Scope {
        let s = Scope(LOCK.lock().unwrap_or_else(PoisonError::into_inner));
        install(vec![]);
        s
    }
}

impl Drop for Scope {
    fn drop(&mut self) {
        tuned::set_override(None).unwrap();
        set_env(None);
    }
}

/// Sets or removes `CONVGRAD_TUNING`.
fn set_env(v: Option<&str>) {
    // SAFETY: the tests of this binary hold LOCK while the variable changes,
    // and nothing here reads the environment outside std's lock.
    unsafe {
        match v {
            Some(v) => std::env::set_var(tuned::ENV, v),
            None => std::env::remove_var(tuned::ENV),
        }
    }
}

fn install(entries: Vec<Entry>) {
    tuned::set_override(Some(&Table { device: "test".into(), entries })).unwrap();
}

/// Dense f16 3x3, K = 64, C = 32: the hand rules take a GEMM tile everywhere.
fn dense() -> ConvProblem {
    ConvProblem::from_ck_args(&[2, 1, 2, 64, 32, 3, 3, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1]).unwrap()
}

const LAYOUT: ConvLayout = ConvLayout::NhwgcGkyxcNhwgk;

/// The table key of `op` on `p` (packed NHWGC, f16).
fn key(op: Operation, p: &ConvProblem, family: Family, compute_units: u32) -> Key {
    let (x, dy) = (TensorDesc::packed(p, LAYOUT, TensorRole::Input), TensorDesc::packed(p, LAYOUT, TensorRole::Output));
    let w = TensorDesc::packed(p, LAYOUT, TensorRole::Weight);
    let r = Request { p, types: TypeConfig::F16, family, compute_units, x: &x, dy: &dy, w: &w, forced: None, deterministic: false };
    Key::of(op, &r).expect("packed tensors have a key")
}

/// An entry for `op` on `p` measured on `arch`.
fn entry(op: Operation, p: &ConvProblem, arch: &str, instance: &str) -> Entry {
    let family = Family::of_arch(arch).unwrap();
    key(op, p, family, 132).entry(arch, instance, None)
}

fn weight_instance(p: &ConvProblem, family: Family, compute_units: u32) -> &'static str {
    let cfg = BwdWeightConfig { layout: LAYOUT, types: TypeConfig::F16, ..Default::default() };
    bwd_weight::plan(p, &cfg, family, compute_units).unwrap().main.instance.name
}

fn data_plan(p: &ConvProblem, family: Family) -> Result<bwd_data::BwdDataPlan, bwd_data::OpError> {
    let cfg = BwdDataConfig { layout: LAYOUT, types: TypeConfig::F16, ..Default::default() };
    bwd_data::plan(p, &cfg, family, 132)
}

#[test]
fn entry_overrides_the_hand_rules() {
    let _s = Scope::hand_rules();
    let p = dense();
    let hand = weight_instance(&p, Family::Hopper, 132);
    let hand_data = data_plan(&p, Family::Hopper).unwrap().main.instance.name;
    assert!(hand != "bwdw_direct_f16" && hand_data != "bwdd_direct_f16", "{hand} {hand_data}");
    install(vec![
        entry(Operation::BwdWeight, &p, "sm_90", "bwdw_direct_f16"),
        entry(Operation::BwdData, &p, "sm_90", "bwdd_direct_f16"),
    ]);
    assert_eq!(weight_instance(&p, Family::Hopper, 132), "bwdw_direct_f16");
    assert_eq!(data_plan(&p, Family::Hopper).unwrap().main.instance.name, "bwdd_direct_f16");
    // A forced instance still wins over the table.
    let forced = BwdWeightConfig { layout: LAYOUT, instance: Some(hand.into()), ..Default::default() };
    assert_eq!(bwd_weight::plan(&p, &forced, Family::Hopper, 132).unwrap().main.instance.name, hand);
    // The table's kernel computes the right thing (emulated H100).
    let dev = Device::open(Backend::Emulator(EmuArch::Sm90), 0).unwrap();
    let module = dev.load_module().unwrap();
    let cfg = BwdWeightConfig { layout: LAYOUT, ..Default::default() };
    let case = Case { problem: p, config: cfg, seed: 7, init: convgrad::check::Init::Float, timed_runs: 0, dump: false };
    let out = run(&dev, &module, &case).unwrap();
    assert_eq!(out.instance, "bwdw_direct_f16");
    assert!(out.passed(), "{:?}", out.report);
}

#[test]
fn choice_says_table_and_split() {
    let _s = Scope::hand_rules();
    let p = dense();
    let (x, dy) = (TensorDesc::packed(&p, LAYOUT, TensorRole::Input), TensorDesc::packed(&p, LAYOUT, TensorRole::Output));
    let w = TensorDesc::packed(&p, LAYOUT, TensorRole::Weight);
    let r = Request { p: &p, types: TypeConfig::F16, family: Family::Hopper, compute_units: 132, x: &x, dy: &dy, w: &w, forced: None, deterministic: false };
    let hand = select::bwd_weight(&r).unwrap();
    assert!(!hand.from_table && hand.split.is_none());
    let mut e = entry(Operation::BwdWeight, &p, "sm_90", "bwdw_f16_64x64x32_mma16x8");
    e.split = Some(4);
    install(vec![e]);
    let c = select::bwd_weight(&r).unwrap();
    assert_eq!((c.instance.name, c.split, c.from_table), ("bwdw_f16_64x64x32_mma16x8", Some(4), true));
    // Deterministic split-K is another key.
    assert!(!select::bwd_weight(&Request { deterministic: true, ..r }).unwrap().from_table);
    assert_eq!(tuned::last_key(), Some(Key { deterministic: true, ..key(Operation::BwdWeight, &p, Family::Hopper, 132) }));
}

#[test]
fn entry_that_does_not_fit_is_ignored() {
    let _s = Scope::hand_rules();
    let p = dense();
    let hand = weight_instance(&p, Family::Hopper, 132);
    // Tap shifts need K <= 16: this problem does not fit them.
    install(vec![entry(Operation::BwdWeight, &p, "sm_90", "bwdw_halo_f16_224x64x16_mma16x8")]);
    assert_eq!(weight_instance(&p, Family::Hopper, 132), hand);
    // A bf16 kernel in an f16 entry, an AMD kernel in an sm_90 entry, a
    // backward-data kernel in a backward-weight entry: errors naming the
    // entry (#38: no longer silently ignored).
    for (inst, what) in [
        ("bwdw_bf16_64x64x32_mma16x8", "runs bf16"),
        ("bwdw_f16_64x64x32_mfma16", "has no Hopper build"),
        ("bwdd_direct_f16", "not a bwd-weight one"),
    ] {
        let t = Table { device: String::new(), entries: vec![entry(Operation::BwdWeight, &p, "sm_90", inst)] };
        let e = tuned::set_override(Some(&t)).unwrap_err().to_string();
        assert!(e.contains("entry 0") && e.contains(what), "{inst}: {e}");
    }
}

/// The hand rules' tiles for short reductions (N * output pixels <= 4096):
/// of the least padded tiles, the first whose workgroups fill 60% of a round
/// unsplit, else the one with the most; longer reductions keep the largest,
/// split-K filling the round. The H100 timings behind it (`xtask tune`):
/// docs/tuning-log.md, 2026-11-26f; on CDNA the same rule, unmeasured.
#[test]
fn hand_rules_short_reductions() {
    let _s = Scope::hand_rules();
    let prob = |v: &[usize]| ConvProblem::from_ck_args(v).unwrap();
    for (name, v, hopper, cdna) in [
        // On Hopper the TMA tile (3-stage ring) takes 2-D filters with taps where K >= 128 (tuning-log 2026-11-29b),
        // its 64x128 form where those tiles fill the SMs unsplit and the 128x128 ones fall short of two rounds (2026-11-29c).
        ("ResNet-50 layer4 3x3 512, 7x7 x 64", &[2, 1, 64, 512, 512, 3, 3, 7, 7, 1, 1, 1, 1, 1, 1, 1, 1][..], "64x128x64_tma", "64x64"),
        ("3-D U-Net 128->256 at 8^3 x 2", &[3, 1, 2, 256, 128, 3, 3, 3, 8, 8, 8, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1, 1], "64x64", "64x64"),
        // On Hopper the TMA tile takes 1x1 layers (tuning-log 2026-11-28h), its split filling the round.
        ("ResNet-50 layer4 1x1 512->2048", &[2, 1, 64, 2048, 512, 1, 1, 7, 7, 1, 1, 1, 1, 0, 0, 0, 0], "128x128x64_tma_ring6", "64x64"),
        // 288 tiles of 128x128: a round of the H100's, not of a 304-CU MI300X's.
        ("U-Net 512->1024 at 16x16 x 16", &[2, 1, 16, 1024, 512, 3, 3, 16, 16, 1, 1, 1, 1, 1, 1, 1, 1], "128x128x64_tma", "64x64"),
        ("ResNet-50 layer3 3x3 256, 14x14 x 64", &[2, 1, 64, 256, 256, 3, 3, 14, 14, 1, 1, 1, 1, 1, 1, 1, 1], "128x128x64_tma", "128x128"),
    ] {
        for (family, cus, want) in [(Family::Hopper, 132, hopper), (Family::Cdna, 304, cdna)] {
            let got = weight_instance(&prob(v), family, cus);
            // A TMA tile by its whole suffix (ring 3 is no prefix match of `_tma_ring6`).
            let ok = if want.contains("tma") { got.ends_with(&format!("_{want}")) } else { got.contains(&format!("_{want}x32_")) };
            assert!(ok, "{family:?} {name}: chose {got}, want {want}");
        }
    }
}

#[test]
fn lookup_keys_on_arch() {
    let _s = Scope::hand_rules();
    let p = dense();
    let (hopper, cdna) = (weight_instance(&p, Family::Hopper, 132), weight_instance(&p, Family::Cdna, 304));
    // The direct kernel runs on both families; the entry applies to sm_90 only.
    install(vec![entry(Operation::BwdWeight, &p, "sm_90", "bwdw_direct_f16")]);
    assert_eq!(weight_instance(&p, Family::Cdna, 304), cdna);
    assert_eq!(weight_instance(&p, Family::Hopper, 132), "bwdw_direct_f16");
    install(vec![entry(Operation::BwdWeight, &p, "gfx942", "bwdw_direct_f16")]);
    assert_eq!(weight_instance(&p, Family::Hopper, 132), hopper);
    assert_eq!(weight_instance(&p, Family::Cdna, 304), "bwdw_direct_f16");
    // gfx90a and gfx942 share a family: the entry measured with the device's compute units wins.
    let mut mi300 = entry(Operation::BwdWeight, &p, "gfx942", "bwdw_f16_16x64x32_mfma16");
    mi300.compute_units = Some(304);
    let mut mi250 = entry(Operation::BwdWeight, &p, "gfx90a", "bwdw_direct_f16");
    mi250.compute_units = Some(110);
    install(vec![mi250, mi300]);
    assert_eq!(weight_instance(&p, Family::Cdna, 304), "bwdw_f16_16x64x32_mfma16");
    assert_eq!(weight_instance(&p, Family::Cdna, 110), "bwdw_direct_f16");
}

/// A scratch file holding `text`.
fn scratch(name: &str, text: &str) -> std::path::PathBuf {
    let dir = std::env::temp_dir().join(format!("convgrad-tuning-test-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    let f = dir.join(name);
    std::fs::write(&f, text).unwrap();
    f
}

#[test]
fn malformed_tables_are_clear_errors() {
    let _s = Scope::hand_rules();
    let p = dense();
    let good = entry(Operation::BwdWeight, &p, "sm_90", "bwdw_direct_f16");
    let with = |f: &dyn Fn(&mut Entry)| {
        let mut e = good.clone();
        f(&mut e);
        Table { device: String::new(), entries: vec![e] }.to_json()
    };
    let cases: [(&str, String, &str); 6] = [
        ("syntax.json", "{\"entries\": [".into(), "not a tuning table"),
        ("field.json", "{\"entries\": [], \"extra\": 1}".into(), "unknown field `extra`"),
        ("instance.json", with(&|e| e.instance = "bwdw_nope".into()), "entry 0 (bwd-weight sm_90 f16"),
        ("problem.json", with(&|e| e.problem = "2 1 x".into()), "problem `2 1 x`"),
        ("arch.json", with(&|e| e.arch = "sm_75".into()), "unknown arch `sm_75`"),
        ("split.json", with(&|e| e.split = Some(0)), "split 0"),
    ];
    for (name, text, what) in cases {
        let f = scratch(name, &text);
        let e = Table::load(&f).unwrap_err().to_string();
        assert!(e.contains(&f.display().to_string()) && e.contains(what), "{name}: {e}");
    }
    let missing = std::env::temp_dir().join("convgrad-no-such-table.json");
    assert!(Table::load(&missing).unwrap_err().to_string().contains("cannot read it"));
    // Through the environment: planning fails naming the file, no panic.
    tuned::set_override(None).unwrap();
    let f = scratch("env-bad.json", "[1, 2]");
    set_env(Some(f.to_str().unwrap()));
    let e = bwd_weight::plan(&p, &BwdWeightConfig::default(), Family::Hopper, 132).unwrap_err().to_string();
    assert!(e.contains(&f.display().to_string()) && e.contains("not a tuning table"), "{e}");
    // An installed table with a bad entry is refused.
    let bad = Table { device: String::new(), entries: vec![Entry { instance: "bwdw_nope".into(), ..good }] };
    assert!(tuned::set_override(Some(&bad)).unwrap_err().to_string().contains("no instance `bwdw_nope`"));
}

#[test]
fn file_and_api_override() {
    let _s = Scope::hand_rules();
    let p = dense();
    let hand = weight_instance(&p, Family::Hopper, 132);
    let table = |inst: &str| Table { device: "test".into(), entries: vec![entry(Operation::BwdWeight, &p, "sm_90", inst)] };
    // The file of CONVGRAD_TUNING replaces the embedded tables.
    let f = scratch("direct.json", &table("bwdw_direct_f16").to_json());
    assert_eq!(Table::load(&f).unwrap(), table("bwdw_direct_f16"));
    tuned::set_override(None).unwrap();
    set_env(Some(f.to_str().unwrap()));
    assert_eq!(weight_instance(&p, Family::Hopper, 132), "bwdw_direct_f16");
    // Another file is read when the variable changes.
    let g = scratch("narrow.json", &table("bwdw_f16_16x64x32_mma16x8").to_json());
    set_env(Some(g.to_str().unwrap()));
    assert_eq!(weight_instance(&p, Family::Hopper, 132), "bwdw_f16_16x64x32_mma16x8");
    // An installed table wins over the file.
    tuned::set_override(Some(&table("bwdw_f16_64x64x32_mma16x8"))).unwrap();
    assert_eq!(weight_instance(&p, Family::Hopper, 132), "bwdw_f16_64x64x32_mma16x8");
    // `none`: no table at all.
    tuned::set_override(None).unwrap();
    set_env(Some("none"));
    assert_eq!(weight_instance(&p, Family::Hopper, 132), hand);
}

/// A problem the plans fold (stride == filter along x, ConvNeXt's stem in
/// small) is looked up under its folded problem, and an entry for that key
/// is used: the table reaches patchify layers too.
#[test]
fn folded_problems_have_a_key() {
    let _s = Scope::hand_rules();
    // 2 images of 16x16x3, 96 filters of 4x4, stride 4: folds to C' = 12, X = 1.
    let p = ConvProblem::from_ck_args(&[2, 1, 2, 96, 3, 4, 4, 16, 16, 4, 4, 1, 1, 0, 0, 0, 0]).unwrap();
    let hand = data_plan(&p, Family::Hopper).unwrap();
    assert!(hand.describe().contains("folded"), "{}", hand.describe());
    let folded = tuned::last_key().expect("the folded problem has a key");
    assert_eq!((folded.problem.c, folded.problem.filter[2]), (12, 1), "{folded:?}");
    let other = ["bwdd_direct_f16", "bwdd_f16_128x32x32_mma16x8"].into_iter().find(|&i| i != hand.main.instance.name).unwrap();
    install(vec![folded.entry("sm_90", other, None)]);
    let tuned = data_plan(&p, Family::Hopper).unwrap();
    assert_eq!(tuned.main.instance.name, other, "{}", tuned.describe());
    assert!(tuned.describe().contains("tuning table"), "{}", tuned.describe());
}
