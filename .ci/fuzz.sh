#!/usr/bin/env bash
# The cargo-fuzz targets of fuzz/ (issue #38), built and run for a fixed time
# without installing cargo-fuzz: the build uses the flags `cargo fuzz build`
# passes (rust-fuzz/cargo-fuzz src/project.rs: sancov module pass, 8-bit
# counters, PC table, compare tracing, stack depth, branch folding off,
# `--cfg fuzzing`, dead code linked, AddressSanitizer, `--release`) plus debug
# assertions and overflow checks (`cargo fuzz build -a`; fuzz/Cargo.toml's
# release profile turns both on). Two departures, for CI's budget: no
# `-Ccodegen-units=1`, and fuzz/Cargo.toml's release profile builds at
# opt-level 1 (0 for the crates the targets do not exercise); a slower fuzzer
# for a few seconds, a build several times shorter.
#
# Cost, cold fuzz target directory, measured on this project's 2-core machine
# with CARGO_BUILD_JOBS=1 while other builds shared it (load average ~5):
# 6.5 CPU-minutes in all (build ~5.5, runs 4 x 16 s), 12 min wall under that
# load. On CI's 2 idle cores: about 3.5 min of build (2 jobs; libFuzzer's C++
# and the host crate are the long poles) + about 1 min of runs = ~4.5 minutes.
# The full `cargo fuzz build` flags (opt-level 3, one codegen unit) had used
# 5.8 CPU-minutes before it was stopped with the largest crates still to build.
# Each target runs FUZZ_SECONDS (default 15 s) from its committed seed corpus (fuzz/corpus/<target>, read only: new inputs go
# to a scratch directory) with fuzz/dict/<target>.dict where present.
#
# Usage: .ci/fuzz.sh [target...]   (default: every target of fuzz/Cargo.toml)
# Env:   FUZZ_SECONDS (per target), FUZZ_SANITIZER (address, the default, or
#        none: a shorter build that still catches panics and overflows),
#        CARGO_TARGET_DIR (the fuzz build goes to its `fuzz/` subdirectory,
#        apart from the ordinary builds' flags).
# A crash, a panic, an overflow or an ASan report fails the script; the input
# that caused it is kept under $CARGO_TARGET_DIR/fuzz/artifacts/<target>/.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$PWD
seconds=${FUZZ_SECONDS:-15}
triple=x86_64-unknown-linux-gnu
target_dir=${CARGO_TARGET_DIR:-$root/target}/fuzz

mapfile -t targets < <(if (($#)); then printf '%s\n' "$@"; else
  sed -n 's/^name = "\([a-z_]*\)"$/\1/p' fuzz/Cargo.toml | grep -v '^convgrad-fuzz$'; fi)

export RUSTFLAGS="-Cpasses=sancov-module -Cllvm-args=-sanitizer-coverage-level=4 \
-Cllvm-args=-sanitizer-coverage-inline-8bit-counters -Cllvm-args=-sanitizer-coverage-pc-table \
-Cllvm-args=-sanitizer-coverage-trace-compares -Cllvm-args=-simplifycfg-branch-fold-threshold=0 \
--cfg fuzzing -Clink-dead-code -Cllvm-args=-sanitizer-coverage-stack-depth \
-Cdebug-assertions -Coverflow-checks"
case ${FUZZ_SANITIZER:-address} in
  address) RUSTFLAGS+=" -Zsanitizer=address" ;;
  none) ;;
  *) echo "FUZZ_SANITIZER=${FUZZ_SANITIZER}: allowed address or none" >&2; exit 2 ;;
esac
# The targets load no embedded kernels: build convgrad without them (smaller, faster links).
export CONVGRAD_KERNEL_DIR=$target_dir/no-kernels
mkdir -p "$CONVGRAD_KERNEL_DIR"
export ASAN_OPTIONS=${ASAN_OPTIONS:+$ASAN_OPTIONS:}detect_odr_violation=0
# Build scripts and proc macros run on the host without these flags: `--target` keeps them apart.
echo "=== fuzz build (${SECONDS}s)"
cargo build --manifest-path fuzz/Cargo.toml --release --target "$triple" \
  --target-dir "$target_dir" --bins --locked

for t in "${targets[@]}"; do
  echo "=== fuzz $t for ${seconds}s (${SECONDS}s)"
  scratch=$target_dir/corpus/$t artifacts=$target_dir/artifacts/$t/
  mkdir -p "$scratch" "$artifacts"
  dict=()
  [[ -f fuzz/dict/$t.dict ]] && dict=(-dict="fuzz/dict/$t.dict")
  # New inputs go to the scratch corpus (first directory); the seeds stay as committed.
  "$target_dir/$triple/release/$t" "$scratch" "fuzz/corpus/$t" "${dict[@]}" \
    -max_total_time="$seconds" -timeout=10 -rss_limit_mb=4096 -print_final_stats=1 \
    -artifact_prefix="$artifacts" 2>&1 | grep -Ev '^#[0-9]|^[[:space:]]*NEW_FUNC' || {
    echo "fuzz target $t failed: reproduce with $target_dir/$triple/release/$t $artifacts<file>" >&2
    exit 1
  }
done
echo "=== fuzz: ${#targets[@]} targets, no crash (${SECONDS}s)"
