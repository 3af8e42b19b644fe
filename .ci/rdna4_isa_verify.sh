#!/usr/bin/env bash
# RDNA4 (gfx1200, gfx1201) on the isa backend (#40): the real GFX12 code objects
# run by `convgrad-isa` (GFX12 decoder, split wait counters with late results,
# s_barrier_signal/s_barrier_wait, GFX12 WMMA layout). The three operations x
# f16/bf16/f32 (and bwd-weight's bf16-f32) on gfx1200, then every WMMA instance
# of the object forced once on a small problem, then the default problems on
# gfx1201 (same `.text` as gfx1200; its own ELF and descriptors). Prints one line
# a run; exits 1 if any does not PASS.
set -uo pipefail
cd "$(dirname "$0")/.."
fails=0
v() {
  local out
  out=$(cargo xtask verify "$@" --backend isa 2>&1)
  printf '%-100s %s %s\n' "$*" "$(echo "$out" | grep -E '^kernel' | tr -s ' ')" "$(echo "$out" | tail -1)"
  [ "$(echo "$out" | tail -1)" = PASS ] || fails=$((fails + 1))
}
for op in bwd-weight bwd-data bwd-data-multi-d; do
  for t in f16 bf16 f32; do v --op "$op" --emu-arch gfx1200 --dtype "$t"; done
done
v --op bwd-weight --emu-arch gfx1200 --dtype bf16-f32
# Small 2-D problem (CK order: ndim G N K C filter input strides dilations lpads rpads).
small="2 2 2 32 32 3 3 10 10 1 1 1 1 1 1 1 1"
for i in bwdw_f16_64x64x32_wmma12:f16 bwdw_bf16_64x64x32_wmma12:bf16 \
  bwdw_f16_16x64x32_wmma12:f16 bwdw_bf16_16x64x32_wmma12:bf16 bwdw_bf16f32_64x64x32_wmma12:bf16-f32; do
  v --op bwd-weight --emu-arch gfx1200 --problem "$small" --dtype "${i#*:}" --instance "${i%:*}"
done
for i in bwdd_f16_64x64x32_wmma12:f16 bwdd_bf16_64x64x32_wmma12:bf16 \
  bwdd_f16_128x32x32_wmma12:f16 bwdd_bf16_128x32x32_wmma12:bf16 \
  bwdd_f16_128x16x32_wmma12:f16 bwdd_bf16_128x16x32_wmma12:bf16; do
  v --op bwd-data --emu-arch gfx1200 --problem "$small" --dtype "${i#*:}" --instance "${i%:*}"
done
for op in bwd-weight bwd-data; do
  for t in f16 f32; do v --op "$op" --emu-arch gfx1201 --dtype "$t"; done
done
[ "$fails" -eq 0 ] || { echo "$fails runs did not pass" >&2; exit 1; }
echo "all RDNA4 isa runs PASS"
