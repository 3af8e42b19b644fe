//! `bundle-kernels [--check]`: the checked-in kernel bundle `host/kernels/`.
//!
//! The host crate's build script embeds `target/kernels` when it holds code objects,
//! else this bundle, which is part of the published package and of every git or path
//! checkout: dependents get all five architectures without the nightly kernel
//! toolchain. Files:
//!
//! - `<arch>.hsaco.zst` / `<arch>.ptx.zst`: `target/kernels/<arch>/convgrad.{hsaco,ptx}`,
//!   zstd level 19 (the `zstd` program; content size and checksum in the frame);
//! - `manifest.json.zst`: `target/kernels/manifest.json`;
//! - `index.txt`: what they were built with, and per file the uncompressed size and
//!   SHA-256. Lines of space-separated fields (`#` starts a comment):
//!   `format 1`, `toolchain CHANNEL`, `rustc VERSION...`,
//!   `object ARCH NAME SIZE SHA256 FILE` per architecture and
//!   `manifest NAME SIZE SHA256 FILE` (`host/build.rs` reads the last two).
//!
//! `--check` (CI, right after `build-kernels`) compares the fresh `target/kernels` with
//! the index, decompresses every bundled file (with the host crate's decoder) and
//! checks it against the index too; it fails naming each difference. Kernel builds are
//! reproducible (same bytes from any checkout path), so a difference means the kernels
//! changed and `cargo xtask bundle-kernels` was not run.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};

use anyhow::{Context, Result, bail};
use sha2::{Digest, Sha256};

use crate::build::ARCHS;
use crate::util;

/// `host/kernels`.
fn bundle_dir() -> PathBuf {
    util::workspace_root().join("host").join("kernels")
}

/// One file of the bundle, as the index describes it.
#[derive(Clone, Debug, PartialEq, Eq)]
struct Entry {
    /// Name as built (`convgrad.hsaco`, `convgrad.ptx`, `manifest.json`).
    name: String,
    size: u64,
    sha256: String,
    /// The compressed file in the bundle directory.
    file: String,
}

/// The index: the toolchain lines, and the entries keyed by architecture
/// (`manifest` for the manifest).
#[derive(Debug, Default, PartialEq, Eq)]
struct Index {
    toolchain: String,
    rustc: String,
    entries: BTreeMap<String, Entry>,
}

const MANIFEST_KEY: &str = "manifest";

impl Index {
    fn render(&self) -> String {
        let mut s = String::from(
            "# convgrad kernel bundle: written by `cargo xtask bundle-kernels` from target/kernels; do not edit.\n\
             # object ARCH NAME SIZE SHA256 FILE: the code object as built (uncompressed size and SHA-256),\n\
             # FILE its zstd-compressed copy here. host/build.rs embeds these when target/kernels has none.\n\
             format 1\n",
        );
        s += &format!("toolchain {}\nrustc {}\n", self.toolchain, self.rustc);
        for (key, e) in &self.entries {
            if key == MANIFEST_KEY {
                continue;
            }
            s += &format!("object {key} {} {} {} {}\n", e.name, e.size, e.sha256, e.file);
        }
        if let Some(e) = self.entries.get(MANIFEST_KEY) {
            s += &format!("manifest {} {} {} {}\n", e.name, e.size, e.sha256, e.file);
        }
        s
    }

    fn parse(text: &str) -> Result<Index> {
        let mut index = Index::default();
        for (no, line) in text.lines().enumerate() {
            let line = line.split('#').next().unwrap_or("").trim();
            let f: Vec<&str> = line.split_whitespace().collect();
            let entry = |name: &str, size: &str, sha: &str, file: &str| -> Result<Entry> {
                Ok(Entry {
                    name: name.into(),
                    size: size.parse().with_context(|| format!("line {}: size {size:?}", no + 1))?,
                    sha256: sha.into(),
                    file: file.into(),
                })
            };
            match f[..] {
                [] => {}
                ["format", "1"] => {}
                ["toolchain", t] => index.toolchain = t.into(),
                ["rustc", ..] => index.rustc = f[1..].join(" "),
                ["object", arch, name, size, sha, file] => {
                    index.entries.insert(arch.into(), entry(name, size, sha, file)?);
                }
                ["manifest", name, size, sha, file] => {
                    index.entries.insert(MANIFEST_KEY.into(), entry(name, size, sha, file)?);
                }
                _ => bail!("line {}: unexpected {line:?}", no + 1),
            }
        }
        Ok(index)
    }
}

fn sha256_hex(bytes: &[u8]) -> String {
    Sha256::digest(bytes).iter().map(|b| format!("{b:02x}")).collect()
}

/// The pinned channel (`rust-toolchain.toml`) and `rustc -V` of the workspace.
fn toolchain() -> Result<(String, String)> {
    let root = util::workspace_root();
    let toml = std::fs::read_to_string(root.join("rust-toolchain.toml")).context("reading rust-toolchain.toml")?;
    let channel = toml
        .lines()
        .find_map(|l| l.trim().strip_prefix("channel")?.trim().strip_prefix('=').map(|v| v.trim().trim_matches('"').to_string()))
        .context("rust-toolchain.toml names no channel")?;
    let out = duct::cmd("rustc", ["-V"])
        .dir(&root)
        .env("RUSTUP_TOOLCHAIN", &channel)
        .stdout_capture()
        .read()
        .context("running `rustc -V`")?;
    Ok((channel, out.trim().to_string()))
}

/// Bundle file names with the uncompressed contents that go into them.
type Contents = Vec<(String, Vec<u8>)>;

/// The index `target/kernels` would get: every architecture and the manifest, with
/// their contents. Fails if an architecture is missing.
fn fresh(kernels: &Path) -> Result<(Index, Contents)> {
    let (toolchain, rustc) = toolchain()?;
    let mut index = Index { toolchain, rustc, entries: BTreeMap::new() };
    let mut contents = Vec::new();
    let mut add = |key: &str, path: PathBuf, file: String| -> Result<()> {
        let bytes = std::fs::read(&path)
            .with_context(|| format!("reading {} (run `cargo xtask build-kernels` for every architecture first)", path.display()))?;
        let name = path.file_name().and_then(|n| n.to_str()).unwrap_or_default().to_string();
        index.entries.insert(key.into(), Entry { name, size: bytes.len() as u64, sha256: sha256_hex(&bytes), file: file.clone() });
        contents.push((file, bytes));
        Ok(())
    };
    for arch in ARCHS {
        let ext = Path::new(arch.object_name()).extension().and_then(|e| e.to_str()).unwrap_or("bin");
        add(arch.name, kernels.join(arch.name).join(arch.object_name()), format!("{}.{ext}.zst", arch.name))?;
    }
    add(MANIFEST_KEY, kernels.join("manifest.json"), "manifest.json.zst".into())?;
    Ok((index, contents))
}

/// Decompresses a bundled file with the decoder the host crate uses.
fn decompress(data: &[u8], len: u64) -> Result<Vec<u8>> {
    let mut out = vec![0u8; usize::try_from(len)?];
    let mut dec = ruzstd::decoding::FrameDecoder::new();
    let n = dec.decode_all(data, &mut out).map_err(|e| anyhow::anyhow!("{e}"))?;
    if n as u64 != len {
        bail!("decompressed to {n} bytes, the index says {len}");
    }
    if dec.get_checksum_from_data() != dec.get_calculated_checksum() {
        bail!("zstd checksum mismatch");
    }
    Ok(out)
}

pub fn run(check: bool) -> Result<()> {
    let kernels = util::kernels_dir();
    let dir = bundle_dir();
    let (want, contents) = fresh(&kernels)?;
    if check {
        return run_check(&dir, &want);
    }
    std::fs::create_dir_all(&dir).with_context(|| format!("creating {}", dir.display()))?;
    let mut total = 0u64;
    for (file, bytes) in &contents {
        let out = duct::cmd("zstd", ["-19", "-q", "-c", "--no-progress"])
            .stdin_bytes(bytes.as_slice())
            .stdout_capture()
            .unchecked()
            .run()
            .context("running `zstd` (install it, e.g. `apt-get install zstd`)")?;
        if !out.status.success() {
            bail!("`zstd -19` failed on {file}: {}", out.status);
        }
        util::write_if_changed(&dir.join(file), &out.stdout)?;
        println!("{file}: {} -> {} bytes", bytes.len(), out.stdout.len());
        total += out.stdout.len() as u64;
    }
    // Files of architectures no longer built.
    let keep: Vec<&str> = contents.iter().map(|(f, _)| f.as_str()).collect();
    for e in std::fs::read_dir(&dir)?.flatten() {
        let name = e.file_name().to_string_lossy().into_owned();
        if name.ends_with(".zst") && !keep.contains(&name.as_str()) {
            std::fs::remove_file(e.path()).with_context(|| format!("removing {}", e.path().display()))?;
            println!("removed {name}");
        }
    }
    util::write_if_changed(&dir.join("index.txt"), want.render().as_bytes())?;
    // The bundle must still decompress to what was built.
    run_check(&dir, &want)?;
    println!("{}: {} files, {total} bytes compressed", dir.display(), contents.len());
    Ok(())
}

fn run_check(dir: &Path, want: &Index) -> Result<()> {
    let index_path = dir.join("index.txt");
    let have = Index::parse(&util::read(&index_path).and_then(|b| Ok(String::from_utf8(b)?))?)
        .with_context(|| format!("parsing {}", index_path.display()))?;
    let mut problems = Vec::new();
    for (key, w) in &want.entries {
        let what = if key == MANIFEST_KEY { "manifest.json".to_string() } else { format!("{key} ({})", w.name) };
        match have.entries.get(key) {
            None => problems.push(format!("{what}: not in the bundle")),
            Some(h) if (h.size, &h.sha256) != (w.size, &w.sha256) => problems.push(format!(
                "{what}: the fresh build ({} bytes, sha256 {}) differs from the bundle ({} bytes, sha256 {})",
                w.size, w.sha256, h.size, h.sha256
            )),
            Some(h) => {
                let path = dir.join(&h.file);
                let ok = util::read(&path)
                    .and_then(|z| decompress(&z, h.size))
                    .map(|raw| sha256_hex(&raw) == h.sha256);
                match ok {
                    Ok(true) => {}
                    Ok(false) => problems.push(format!("{what}: {} does not decompress to the indexed sha256", path.display())),
                    Err(e) => problems.push(format!("{what}: {}: {e:#}", path.display())),
                }
            }
        }
    }
    for key in have.entries.keys().filter(|k| !want.entries.contains_key(*k)) {
        problems.push(format!("{key}: in the bundle but not built"));
    }
    if (&have.toolchain, &have.rustc) != (&want.toolchain, &want.rustc) {
        problems.push(format!(
            "toolchain: the bundle was built with {} ({}), this build uses {} ({})",
            have.toolchain, have.rustc, want.toolchain, want.rustc
        ));
    }
    if !problems.is_empty() {
        bail!(
            "the kernel bundle {} does not match target/kernels:\n  {}\nRun `cargo xtask bundle-kernels` and commit host/kernels.",
            dir.display(),
            problems.join("\n  ")
        );
    }
    println!("kernel bundle {} matches target/kernels ({} files)", dir.display(), want.entries.len());
    Ok(())
}

/// Runs a kernel build; if `target/kernels` did not exist before it, refreshes the
/// bundle index's modification time. The host build script watches only paths that
/// exist, so without this the first kernel build of a checkout would go unnoticed and
/// the bundle would stay embedded.
pub fn noticing_new_kernel_dir(build: impl FnOnce() -> Result<()>) -> Result<()> {
    let existed = util::kernels_dir().is_dir();
    build()?;
    let index = bundle_dir().join("index.txt");
    if !existed && index.is_file() {
        std::fs::File::options()
            .append(true)
            .open(&index)
            .and_then(|f| f.set_modified(std::time::SystemTime::now()))
            .with_context(|| format!("touching {}", index.display()))?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn index_round_trips() {
        let mut entries = BTreeMap::new();
        let e = |name: &str, file: &str| Entry { name: name.into(), size: 12, sha256: "ab".repeat(32), file: file.into() };
        entries.insert("gfx942".to_string(), e("convgrad.hsaco", "gfx942.hsaco.zst"));
        entries.insert("sm_90".to_string(), e("convgrad.ptx", "sm_90.ptx.zst"));
        entries.insert(MANIFEST_KEY.to_string(), e("manifest.json", "manifest.json.zst"));
        let index = Index { toolchain: "nightly-2026-05-20".into(), rustc: "rustc 1.97.0-nightly (e50aa6fba 2026-05-19)".into(), entries };
        assert_eq!(Index::parse(&index.render()).unwrap(), index);
    }
}
