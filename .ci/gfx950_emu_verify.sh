#!/usr/bin/env bash
# CDNA4 (gfx950) on the emulator: the three operations x f16/bf16/f32 (and
# bwd-weight's bf16-f32) on gfx950, then every gfx950-only instance (the
# double-k MFMAs `*_mfma32k16`, `*_mfma16k32`) forced once. With `isa` as the
# argument, the same runs on the isa backend (the real gfx950 code object from
# target/kernels). Prints one line a run; exits 1 if any does not PASS.
set -uo pipefail
cd "$(dirname "$0")/.."
backend="${1:-emu}"
fails=0
v() {
  local out
  out=$(cargo xtask verify "$@" --backend "$backend" 2>&1)
  printf '%-80s %s %s\n' "$*" "$(echo "$out" | grep -E '^kernel' | tr -s ' ')" "$(echo "$out" | tail -1)"
  [ "$(echo "$out" | tail -1)" = PASS ] || fails=$((fails + 1))
}
for op in bwd-weight bwd-data bwd-data-multi-d; do
  for t in f16 bf16 f32; do v --op "$op" --emu-arch gfx950 --dtype "$t"; done
done
v --op bwd-weight --emu-arch gfx950 --dtype bf16-f32
# Instances as name:dtype, from the instance table's CDNA4 kernels.
for i in bwdw_f16_128x128x32_mfma32k16:f16 bwdw_bf16_128x128x32_mfma32k16:bf16 \
  bwdw_f16_64x64x32_mfma16k32:f16 bwdw_bf16_64x64x32_mfma16k32:bf16; do
  v --op bwd-weight --emu-arch gfx950 --dtype "${i#*:}" --instance "${i%:*}"
done
for i in bwdd_f16_128x128x32_mfma32k16:f16 bwdd_bf16_128x128x32_mfma32k16:bf16 \
  bwdd_f16_64x64x32_mfma16k32:f16 bwdd_bf16_64x64x32_mfma16k32:bf16; do
  for op in bwd-data bwd-data-multi-d; do
    v --op "$op" --emu-arch gfx950 --dtype "${i#*:}" --instance "${i%:*}"
  done
done
[ "$fails" -eq 0 ] || { echo "$fails runs did not pass" >&2; exit 1; }
echo "all gfx950 $backend runs PASS"
