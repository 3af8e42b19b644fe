#!/usr/bin/env bash
# RDNA4 on the emulator: the three operations x f16/bf16/f32 (and bwd-weight's
# bf16-f32) on gfx1200 and gfx1201, then every `*_wmma12` instance forced once
# on gfx1200. Prints one line a run; exits 1 if any does not PASS.
set -uo pipefail
cd "$(dirname "$0")/.."
fails=0
v() {
  local out
  out=$(cargo xtask verify "$@" --backend emu 2>&1)
  printf '%-80s %s %s\n' "$*" "$(echo "$out" | grep -E '^kernel' | tr -s ' ')" "$(echo "$out" | tail -1)"
  [ "$(echo "$out" | tail -1)" = PASS ] || fails=$((fails + 1))
}
for a in gfx1200 gfx1201; do
  for op in bwd-weight bwd-data bwd-data-multi-d; do
    for t in f16 bf16 f32; do v --op "$op" --emu-arch "$a" --dtype "$t"; done
  done
  v --op bwd-weight --emu-arch "$a" --dtype bf16-f32
done
# Instances as name:dtype, from the instance table's RDNA4 matrix kernels.
for i in bwdw_f16_64x64x32_wmma12:f16 bwdw_bf16_64x64x32_wmma12:bf16 bwdw_bf16f32_64x64x32_wmma12:bf16-f32 \
  bwdw_f16_16x64x32_wmma12:f16 bwdw_bf16_16x64x32_wmma12:bf16; do
  v --op bwd-weight --emu-arch gfx1200 --dtype "${i#*:}" --instance "${i%:*}"
done
for i in bwdd_f16_64x64x32_wmma12:f16 bwdd_bf16_64x64x32_wmma12:bf16 bwdd_f16_128x16x32_wmma12:f16 \
  bwdd_bf16_128x16x32_wmma12:bf16 bwdd_f16_128x32x32_wmma12:f16 bwdd_bf16_128x32x32_wmma12:bf16; do
  for op in bwd-data bwd-data-multi-d; do
    v --op "$op" --emu-arch gfx1200 --dtype "${i#*:}" --instance "${i%:*}"
  done
done
[ "$fails" -eq 0 ] || { echo "$fails runs did not pass" >&2; exit 1; }
echo "all RDNA4 emulator runs PASS"
