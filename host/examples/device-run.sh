#!/usr/bin/env bash
# The runtime's GPU run, in two halves.
#
#   host/examples/device-run.sh prepare   # on a build machine (Rust toolchain, no GPU needed)
#   host/examples/device-run.sh run       # on the GPU machine (no Rust needed)
#
# Both halves also cover the framework-facing API: the `framework` example and
# the `framework_api` test binary (caller's stream ordering on CUDA).
#
# `prepare` builds the NVIDIA kernels (PTX for sm_80 and sm_90, unless
# SKIP_KERNELS=1), then release builds of the `devices` example and of the
# `runtime` test binary with those kernels embedded, and copies both into
# .device/bin/ (git-ignored; carry it to the GPU machine). They are plain
# x86_64 Linux executables: libcuda.so.1 is loaded at run time by cudarc.
#
# `run` prints the GPU, runs the example on Auto (CUDA expected) and on the
# emulator, then the runtime tests (smoke kernel on CUDA and on the emulator's
# gfx90a/gfx942/gfx1100/sm_80/sm_90 models). Output goes to stdout and, when
# $OUT is set, to $OUT/device-run.log. Exit status: non-zero if any part failed.
set -uo pipefail
cd "$(dirname "$0")/../.."
BIN=.device/bin

prepare() {
  set -e
  if [[ "${SKIP_KERNELS:-0}" != 1 ]]; then
    cargo xtask build-kernels --arch sm_80,sm_90
  fi
  # Executable paths from cargo's JSON messages (whatever CARGO_TARGET_DIR is).
  exe_of() { grep -o '"executable":"[^"]*"' | grep "$1" | tail -n1 | cut -d'"' -f4; }
  local example tests framework api
  example=$(cargo build --release -p convgrad --example devices --message-format=json | exe_of '/examples/devices')
  framework=$(cargo build --release -p convgrad --example framework --message-format=json | exe_of '/examples/framework')
  tests=$(cargo test --release -p convgrad --test runtime --no-run --message-format=json | exe_of '/runtime-')
  api=$(cargo test --release -p convgrad --test framework_api --no-run --message-format=json | exe_of '/framework_api-')
  [[ -n "$example" && -n "$framework" && -n "$tests" && -n "$api" ]] || { echo "built binaries not found" >&2; exit 1; }
  mkdir -p "$BIN"
  cp "$example" "$BIN/devices"
  cp "$framework" "$BIN/framework"
  cp "$tests" "$BIN/runtime"
  cp "$api" "$BIN/framework_api"
  strip --strip-debug "$BIN"/{devices,framework,runtime,framework_api} 2>/dev/null || true
  ls -l "$BIN"
  echo "ready: carry .device to the GPU machine and run: bash host/examples/device-run.sh run"
}

run() {
  [[ -x "$BIN/devices" && -x "$BIN/runtime" ]] || { echo "missing $BIN/{devices,runtime}: run 'prepare' first" >&2; exit 1; }
  local status=0
  section() { printf '\n===== %s\n' "$*"; }
  section "machine"
  uname -srm
  ldd --version 2>/dev/null | head -n1
  nvidia-smi --query-gpu=name,compute_cap,driver_version,memory.total --format=csv 2>/dev/null || echo "nvidia-smi not available"
  section "devices (Backend::Auto)"
  "$BIN/devices" || status=1
  section "devices (emulator sm_90)"
  "$BIN/devices" --backend emu --emu-arch sm_90 || status=1
  section "runtime tests"
  RUST_BACKTRACE=1 "$BIN/runtime" --nocapture --test-threads 1 || status=1
  section "framework API tests (caller's stream, memory, workspace; CUDA ordering)"
  RUST_BACKTRACE=1 "$BIN/framework_api" --nocapture --test-threads 1 || status=1
  section "framework example (Backend::Auto)"
  "$BIN/framework" || status=1
  section "status: $status"
  return $status
}

case "${1:-}" in
  prepare) prepare ;;
  run)
    if [[ -n "${OUT:-}" ]]; then
      run 2>&1 | tee "$OUT/device-run.log"
      exit "${PIPESTATUS[0]}"
    else
      run
    fi
    ;;
  *) echo "usage: $0 prepare|run" >&2; exit 2 ;;
esac
