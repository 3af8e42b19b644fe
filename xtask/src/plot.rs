//! SVG charts of `bench` results: `bench --plot FILE.svg` at the end of a
//! run, or `cargo xtask plot --from RESULTS.json --out CHART.svg` from a
//! `bench --json` file (no GPU needed).
//!
//! Two panels: the ratio (peer time / ours, higher is better, a line at 1)
//! of every (layer, dtype) row in the file's order, then the geometric mean
//! per network (`--suite networks`) or per kind of shape (dense,
//! grouped/depthwise). Failed rows are marked in red with their error;
//! skipped ones in grey. A file without peer times (the emulator,
//! `--no-peer`) charts our milliseconds instead. Drawn with plotters' SVG
//! backend only: text is SVG `<text>`, no font files are read.

use anyhow::{Context, Result};
use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use serde_json::Value;
use std::path::Path;

/// Entry point of `cargo xtask plot`.
pub fn from_file(from: &Path, out: &Path) -> Result<()> {
    let text = std::fs::read_to_string(from).with_context(|| format!("reading {}", from.display()))?;
    let v: Value = serde_json::from_str(&text).with_context(|| format!("{}: not a `bench --json` file", from.display()))?;
    write(&v, out)?;
    println!("wrote {}", out.display());
    Ok(())
}

/// One bar of the first panel.
struct Bar {
    label: String,
    value: Option<f64>,
    /// Why there is no value (an error, a skip, no peer).
    note: Option<(String, RGBColor)>,
}

/// The network (or kind) a row belongs to, for the geomeans: its `net`
/// field, else the network whose layer names it (files written before the
/// field), else its kind.
fn group(row: &Value, nets: &[(String, &'static str)]) -> Option<String> {
    if let Some(n) = row["net"].as_str() {
        return Some(n.to_string());
    }
    let shape = row["shape"].as_str().unwrap_or("");
    if let Some((_, net)) = nets.iter().find(|(name, _)| name == shape) {
        return Some(net.to_string());
    }
    match row["kind"].as_str() {
        Some("Dense") => Some("dense".into()),
        Some("Grouped") => Some("grouped/depthwise".into()),
        _ => None, // the fused-epilogue pair: outside the geomeans, as in bench
    }
}

fn geomean(v: &[f64]) -> f64 {
    (v.iter().map(|x| x.ln()).sum::<f64>() / v.len() as f64).exp()
}

/// Writes the chart of the `bench --json` object `v` to `out`.
pub fn write(v: &Value, out: &Path) -> Result<()> {
    let rows = v["rows"].as_array().context("no \"rows\" array: not a `bench --json` file")?;
    // Ratios where any row has one; otherwise our times.
    let ratio = rows.iter().any(|r| r["ratio"].is_f64());
    let key = if ratio { "ratio" } else { "ours_ms" };
    let nets: Vec<(String, &'static str)> =
        crate::networks::layers().into_iter().map(|l| (format!("{} {}", l.net, l.name), l.net)).collect();
    let mut bars = vec![];
    // (group, values) in order of first appearance.
    let mut groups: Vec<(String, Vec<f64>)> = vec![];
    for r in rows {
        let label = format!("{} {}", r["shape"].as_str().unwrap_or("?"), r["dtype"].as_str().unwrap_or(""));
        let value = r[key].as_f64().filter(|x| x.is_finite() && *x > 0.0);
        let note = if let Some(e) = r["error"].as_str() {
            Some((format!("FAILED: {}", first_line(e)), RED))
        } else if let Some(s) = r["skipped"].as_str() {
            Some((format!("skipped: {}", first_line(s)), RGBColor(120, 120, 120)))
        } else if value.is_none() {
            Some(("no peer time".to_string(), RGBColor(120, 120, 120)))
        } else {
            None
        };
        if let (Some(x), Some(g)) = (value, group(r, &nets)) {
            match groups.iter_mut().find(|(n, _)| *n == g) {
                Some((_, xs)) => xs.push(x),
                None => groups.push((g, vec![x])),
            }
        }
        bars.push(Bar { label, value, note });
    }
    let means: Vec<Bar> = groups
        .iter()
        .map(|(g, xs)| Bar { label: format!("{g} ({} rows)", xs.len()), value: Some(geomean(xs)), note: None })
        .collect();

    let op = v["op"].as_str().unwrap_or("?");
    let device = v["device"].as_str().unwrap_or("?");
    let peer = v["peer"].as_str().unwrap_or("none");
    let (axis, title) = if ratio {
        ("peer time / ours (higher is better)", format!("{op} on {device}: {peer} time / ours, per layer"))
    } else {
        ("ours, ms", format!("{op} on {device}: our time per layer (ms; no peer)"))
    };
    let longest = bars.iter().chain(&means).map(|b| b.label.chars().count()).max().unwrap_or(10);
    let label_w = (longest as u32 * 7 + 20).clamp(120, 520);
    let (row_h, w) = (16u32, 1200u32);
    let top_h = 90 + row_h * bars.len().max(1) as u32;
    let bottom_h = if means.is_empty() { 0 } else { 90 + 22 * means.len() as u32 };
    if let Some(dir) = out.parent().filter(|d| !d.as_os_str().is_empty()) {
        std::fs::create_dir_all(dir)?;
    }
    let root = SVGBackend::new(out, (w, top_h + bottom_h)).into_drawing_area();
    root.fill(&WHITE).map_err(err)?;
    let (top, bottom) = root.split_vertically(top_h);
    panel(&top, &title, axis, &bars, label_w, ratio)?;
    if !means.is_empty() {
        let what = if groups.iter().any(|(g, _)| nets.iter().any(|(_, n)| n == g)) { "network" } else { "kind of shape" };
        let t = format!("geometric mean per {what}");
        panel(&bottom, &t, axis, &means, label_w, ratio)?;
    }
    root.present().map_err(err).with_context(|| format!("writing {}", out.display()))?;
    Ok(())
}

fn first_line(s: &str) -> String {
    let l = s.lines().next().unwrap_or("");
    if l.chars().count() > 90 { format!("{}...", l.chars().take(90).collect::<String>()) } else { l.to_string() }
}

fn err<E: std::error::Error + Send + Sync + 'static>(e: DrawingAreaErrorKind<E>) -> anyhow::Error {
    anyhow::anyhow!("drawing the chart: {e}")
}

/// One panel of horizontal bars, the first at the top.
fn panel(area: &DrawingArea<SVGBackend<'_>, Shift>, title: &str, axis: &str, bars: &[Bar], label_w: u32, ratio: bool) -> Result<()> {
    let n = bars.len().max(1);
    let max = bars.iter().filter_map(|b| b.value).fold(if ratio { 1.0 } else { 0.0 }, f64::max);
    let xmax = (max * 1.15).max(1e-9);
    let mut chart = ChartBuilder::on(area)
        .caption(title, ("sans-serif", 16))
        .margin(10)
        .x_label_area_size(40)
        .y_label_area_size(label_w)
        .build_cartesian_2d(0f64..xmax, (0..n).into_segmented())
        .map_err(err)?;
    // Row i is drawn in segment n-1-i: the first row on top.
    let at = |i: usize| n - 1 - i;
    let label = |y: &SegmentValue<usize>| match y {
        SegmentValue::CenterOf(s) if *s < bars.len() => bars[n - 1 - s].label.clone(),
        _ => String::new(),
    };
    chart
        .configure_mesh()
        .disable_y_mesh()
        .y_labels(n)
        .y_label_formatter(&label)
        .y_label_style(("sans-serif", 12))
        .x_desc(axis)
        .draw()
        .map_err(err)?;
    let color = |v: f64| match (ratio, v >= 1.0) {
        (false, _) => RGBColor(70, 110, 170),
        (true, true) => RGBColor(60, 150, 80),
        (true, false) => RGBColor(220, 120, 60),
    };
    chart
        .draw_series(bars.iter().enumerate().filter_map(|(i, b)| {
            let v = b.value?;
            let mut r = Rectangle::new([(0.0, SegmentValue::Exact(at(i))), (v, SegmentValue::Exact(at(i) + 1))], color(v).filled());
            r.set_margin(2, 2, 0, 0);
            Some(r)
        }))
        .map_err(err)?;
    let left = Pos::new(HPos::Left, VPos::Center);
    chart
        .draw_series(bars.iter().enumerate().map(|(i, b)| {
            let (text, c, x) = match (&b.note, b.value) {
                (Some((t, c)), _) => (t.clone(), *c, 0.0),
                (None, Some(v)) if ratio => (format!(" {v:.3}x"), BLACK, v),
                (None, Some(v)) => (format!(" {v:.4} ms"), BLACK, v),
                (None, None) => (String::new(), BLACK, 0.0),
            };
            Text::new(text, (x, SegmentValue::CenterOf(at(i))), ("sans-serif", 11).into_font().color(&c).pos(left))
        }))
        .map_err(err)?;
    if ratio {
        chart
            .draw_series(std::iter::once(PathElement::new(
                vec![(1.0, SegmentValue::Exact(0)), (1.0, SegmentValue::Exact(n))],
                BLACK.stroke_width(1),
            )))
            .map_err(err)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    /// A small `bench --json` file (a networks row, a kind-only row, a
    /// failed one) charts as an SVG with the layer names and the geomeans.
    #[test]
    fn plots_a_small_json() {
        let dir = std::env::temp_dir().join(format!("convgrad-plot-test-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let json = serde_json::json!({
            "op": "bwd-data", "device": "Test GPU", "peer": "PyTorch test",
            "rows": [
                { "shape": "resnet50 layer1 3x3 64", "dtype": "f16", "ours_ms": 0.1, "peer_ms": 0.05, "ratio": 0.5, "kind": "Dense", "fused": false, "kernel": "k" },
                { "shape": "my layer <a&b>", "dtype": "bf16", "ours_ms": 0.1, "peer_ms": 0.2, "ratio": 2.0, "kind": "Grouped", "fused": false, "kernel": "k" },
                { "shape": "broken layer", "dtype": "f16", "ours_ms": null, "peer_ms": 0.2, "ratio": null, "error": "plan: no kernel fits", "kind": "Dense", "fused": false },
            ],
        });
        let from = dir.join("r.json");
        std::fs::write(&from, json.to_string()).unwrap();
        let out = dir.join("sub/chart.svg");
        super::from_file(&from, &out).unwrap();
        let svg = std::fs::read_to_string(&out).unwrap();
        assert!(svg.contains("<svg") && svg.trim_end().ends_with("</svg>"), "{svg}");
        for text in ["resnet50 layer1 3x3 64 f16", "my layer &lt;a&amp;b&gt; bf16", "FAILED: plan: no kernel fits", "resnet50 (1 rows)", "grouped/depthwise (1 rows)", "0.500x"] {
            assert!(svg.contains(text), "{text} missing from\n{svg}");
        }
        // Not a bench file: an error, no chart.
        std::fs::write(&from, "{}").unwrap();
        let e = super::from_file(&from, &dir.join("no.svg")).unwrap_err();
        assert!(format!("{e:#}").contains("not a `bench --json` file"), "{e:#}");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
