//! Small helpers shared by the xtask commands: the workspace and toolchain
//! locations, running tools with clear errors, hashing, and writing files
//! only when their content changes (so that cargo's `rerun-if-changed` in the
//! host build script does not fire on a no-op rebuild).

use anyhow::{Context, Result, bail};
use std::ffi::OsString;
use std::path::{Path, PathBuf};
use std::process::Output;

/// Root of the convgrad workspace (the parent of `xtask/`).
pub fn workspace_root() -> PathBuf {
    let here = Path::new(env!("CARGO_MANIFEST_DIR"));
    here.parent().unwrap_or(here).to_path_buf()
}

/// `target/kernels`: the code objects, the per-arch `kernels.json` and `manifest.json`.
/// Fixed under the workspace (not `$CARGO_TARGET_DIR`) so the host build script finds it.
pub fn kernels_dir() -> PathBuf {
    workspace_root().join("target").join("kernels")
}

/// `target/kernels-build`: cargo target dirs of the kernel builds (one per arch) and
/// the pipeline's intermediate files.
pub fn kernels_build_dir() -> PathBuf {
    workspace_root().join("target").join("kernels-build")
}

/// The pinned toolchain's pieces the pipeline uses.
pub struct Toolchain {
    /// `rustc --print sysroot`.
    pub sysroot: PathBuf,
    /// `<sysroot>/lib/rustlib/<host>/bin`: llvm-link, opt, llc, llvm-objdump, rust-lld...
    pub bin: PathBuf,
    /// The channel named in `rust-toolchain.toml` (for messages).
    pub channel: String,
}

impl Toolchain {
    /// Finds the toolchain rustup selects in the workspace and checks the
    /// components the pipeline needs (`rust-src` for `-Zbuild-std`, `llvm-tools`).
    pub fn locate() -> Result<Toolchain> {
        let root = workspace_root();
        let channel = std::fs::read_to_string(root.join("rust-toolchain.toml"))
            .ok()
            .and_then(|t| {
                t.lines().find_map(|l| {
                    let l = l.trim();
                    let v = l.strip_prefix("channel")?.trim_start().strip_prefix('=')?;
                    Some(v.trim().trim_matches('"').to_string())
                })
            })
            .unwrap_or_else(|| "<the pinned toolchain>".into());
        let rustc = std::env::var_os("RUSTC").unwrap_or_else(|| "rustc".into());
        let out = duct::cmd(&rustc, ["--print", "sysroot"])
            .dir(&root)
            .stdout_capture()
            .stderr_capture()
            .unchecked()
            .run()
            .with_context(|| {
                format!(
                    "running `{} --print sysroot` (is rustup installed?)",
                    rustc.to_string_lossy()
                )
            })?;
        if !out.status.success() {
            bail!(
                "`rustc --print sysroot` failed in {}:\n{}\nInstall the toolchain: rustup toolchain install {channel} \
                 --profile minimal -c rust-src -c llvm-tools -c rustfmt -c clippy",
                root.display(),
                String::from_utf8_lossy(&out.stderr)
            );
        }
        let sysroot = PathBuf::from(String::from_utf8_lossy(&out.stdout).trim());
        let host = host_triple(&rustc)?;
        let bin = sysroot.join("lib/rustlib").join(&host).join("bin");
        let tc = Toolchain {
            sysroot,
            bin,
            channel,
        };
        for t in [
            "llvm-link",
            "opt",
            "llc",
            "llvm-dis",
            "llvm-objdump",
            "llvm-ar",
        ] {
            if !tc.tool(t).exists() {
                bail!(
                    "`{t}` not found in {}: component `llvm-tools` is missing; \
                     run `rustup component add llvm-tools --toolchain {}`",
                    tc.bin.display(),
                    tc.channel
                );
            }
        }
        if !tc.tool("rust-lld").exists() {
            bail!(
                "`rust-lld` not found in {} (it ships with rustc; reinstall the toolchain {})",
                tc.bin.display(),
                tc.channel
            );
        }
        Ok(tc)
    }

    /// Checks for `rust-src` (needed by `-Zbuild-std=core`).
    pub fn require_rust_src(&self) -> Result<()> {
        let tc = self;
        if !tc
            .sysroot
            .join("lib/rustlib/src/rust/library/core/Cargo.toml")
            .exists()
        {
            bail!(
                "component `rust-src` is missing from {} (needed by -Zbuild-std=core): \
                 run `rustup component add rust-src --toolchain {}`",
                tc.sysroot.display(),
                tc.channel
            );
        }
        Ok(())
    }

    /// Path of an LLVM tool from `llvm-tools` (or `rust-lld`).
    pub fn tool(&self, name: &str) -> PathBuf {
        self.bin
            .join(format!("{name}{}", std::env::consts::EXE_SUFFIX))
    }

    /// Runs a tool from the toolchain's bin dir; fails with its stderr.
    pub fn run<I, S>(&self, name: &str, args: I) -> Result<Output>
    where
        I: IntoIterator<Item = S>,
        S: Into<OsString>,
    {
        run(self.tool(name), args)
    }
}

fn host_triple(rustc: &OsString) -> Result<String> {
    let out = duct::cmd(rustc, ["-vV"])
        .dir(workspace_root())
        .read()
        .context("running `rustc -vV`")?;
    out.lines()
        .find_map(|l| l.strip_prefix("host: "))
        .map(str::to_string)
        .context("`rustc -vV` printed no host line")
}

/// Runs `program args...`, capturing its output; an error carries the command
/// line and the tool's stderr.
pub fn run<P, I, S>(program: P, args: I) -> Result<Output>
where
    P: AsRef<Path>,
    I: IntoIterator<Item = S>,
    S: Into<OsString>,
{
    let program = program.as_ref();
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let line = || {
        let mut s = program
            .file_name()
            .unwrap_or(program.as_os_str())
            .to_string_lossy()
            .into_owned();
        for a in &args {
            s.push(' ');
            s.push_str(&a.to_string_lossy());
        }
        s
    };
    let out = duct::cmd(program, &args)
        .stdout_capture()
        .stderr_capture()
        .unchecked()
        .run()
        .with_context(|| format!("could not start `{}`", line()))?;
    if !out.status.success() {
        bail!(
            "`{}` failed ({}):\n{}",
            line(),
            out.status,
            String::from_utf8_lossy(&out.stderr).trim_end()
        );
    }
    Ok(out)
}

/// 64-bit FNV-1a, incremental. Used for the pipeline's input stamps (not security).
#[derive(Clone, Copy)]
pub struct Fnv64(u64);

impl Default for Fnv64 {
    fn default() -> Self {
        Fnv64(0xcbf2_9ce4_8422_2325)
    }
}

impl Fnv64 {
    /// Feeds bytes, preceded by their length (so fields cannot run into each other).
    pub fn field(&mut self, bytes: &[u8]) -> &mut Self {
        self.raw(&(bytes.len() as u64).to_le_bytes());
        self.raw(bytes);
        self
    }
    fn raw(&mut self, bytes: &[u8]) {
        for &b in bytes {
            self.0 ^= u64::from(b);
            self.0 = self.0.wrapping_mul(0x0000_0100_0000_01b3);
        }
    }
    /// The hash as 16 hex digits.
    pub fn hex(&self) -> String {
        format!("{:016x}", self.0)
    }
}

/// FNV-1a of a byte string, as hex.
pub fn hash_hex(bytes: &[u8]) -> String {
    Fnv64::default().field(bytes).hex()
}

/// Writes `bytes` to `path` unless the file already holds exactly them (keeps the
/// mtime stable). Writes through a temporary file and a rename. Returns whether it wrote.
pub fn write_if_changed(path: &Path, bytes: &[u8]) -> Result<bool> {
    if std::fs::read(path).is_ok_and(|old| old == bytes) {
        return Ok(false);
    }
    if let Some(dir) = path.parent() {
        std::fs::create_dir_all(dir).with_context(|| format!("creating {}", dir.display()))?;
    }
    let tmp = path.with_extension("tmp~");
    std::fs::write(&tmp, bytes).with_context(|| format!("writing {}", tmp.display()))?;
    std::fs::rename(&tmp, path)
        .with_context(|| format!("renaming {} to {}", tmp.display(), path.display()))?;
    Ok(true)
}

/// Reads a file with the path in the error.
pub fn read(path: &Path) -> Result<Vec<u8>> {
    std::fs::read(path).with_context(|| format!("reading {}", path.display()))
}

/// Formats rows as a left-aligned text table (first row = header).
pub fn table(rows: &[Vec<String>]) -> String {
    let cols = rows.iter().map(Vec::len).max().unwrap_or(0);
    let mut w = vec![0usize; cols];
    for r in rows {
        for (i, c) in r.iter().enumerate() {
            w[i] = w[i].max(c.chars().count());
        }
    }
    let mut s = String::new();
    for (ri, r) in rows.iter().enumerate() {
        let line: Vec<String> = r
            .iter()
            .enumerate()
            .map(|(i, c)| format!("{c:<width$}", width = w[i]))
            .collect();
        s.push_str(line.join("  ").trim_end());
        s.push('\n');
        if ri == 0 {
            let rule: Vec<String> = w.iter().map(|&n| "-".repeat(n)).collect();
            s.push_str(&rule.join("  "));
            s.push('\n');
        }
    }
    s
}
