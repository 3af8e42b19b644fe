#!/usr/bin/env bash
# Float64 checks and compute-sanitizer runs of the channel pack (odd channel
# counts: dy and w copied with K padded to whole vectors ahead of
# backward-data; x and/or dy with C / K padded ahead of backward-weight) on a
# real GPU, by the automatic plans: YOLOv5's 255-channel heads, ShuffleNetV2's
# 58 / 116 branches, a 3x3 layer of 100 channels, strides, an epilogue, the
# NCHW family, split-K modes. Output goes to files under $OUT (or
# ./pack-checks); the console gets the counts only.
#
# Usage: benches/channel_pack_checks.sh XTASK_BINARY
# SAN_TIMEOUT (seconds per sanitizer run, default 120) bounds the sanitizer part; SAN_TOOLS
# (default "memcheck racecheck") picks its tools.
# Exit status: 0 when every check passed and the sanitizers found nothing.
set -u
xt=${1:?usage: $0 XTASK_BINARY}
out=${OUT:-pack-checks}
mkdir -p "$out"
log=$out/pack-checks-verify.txt
san=$out/pack-checks-sanitizer.txt
: > "$log"
: > "$san"

verify() { # args...
  "$xt" verify --backend cuda "$@" >> "$log" 2>&1 || echo "FAILED (exit $?): $*" >> "$log"
}

for t in f16 bf16; do
  for p in "2 1 16 255 128 1 1 80 80 1 1 1 1 0 0 0 0" "2 1 16 255 512 1 1 20 20 1 1 1 1 0 0 0 0" \
           "2 1 128 58 24 1 1 56 56 1 1 1 1 0 0 0 0" "2 1 128 58 58 1 1 28 28 1 1 1 1 0 0 0 0" \
           "2 1 128 116 116 1 1 14 14 1 1 1 1 0 0 0 0" "2 1 32 100 100 3 3 56 56 1 1 1 1 1 1 1 1" \
           "2 1 8 13 40 3 3 33 31 2 2 1 1 1 1 1 1" "2 1 4 255 64 3 3 19 17 1 1 2 2 2 2 2 2"; do
    verify --op bwd-data --dtype $t --problem "$p"
    verify --op bwd-weight --dtype $t --problem "$p"
  done
  verify --op bwd-data --dtype $t --epilogue relu-mask+add --d-layout G_NHW,output --problem "2 1 8 255 128 1 1 20 20 1 1 1 1 0 0 0 0"
  verify --op bwd-data --dtype $t --layout ngchw --problem "2 1 4 58 64 3 3 14 14 1 1 1 1 1 1 1 1"
  verify --op bwd-weight --dtype $t --layout ngchw --problem "2 1 4 58 64 3 3 14 14 1 1 1 1 1 1 1 1"
  verify --op bwd-weight --dtype $t --split-k 5 --deterministic --problem "2 1 8 100 58 3 3 16 16 1 1 1 1 1 1 1 1"
  verify --op bwd-weight --dtype $t --split-k 3 --epilogue bilinear=0.5,-1 --problem "2 1 8 255 116 1 1 20 20 1 1 1 1 0 0 0 0"
done

for tool in ${SAN_TOOLS:-memcheck racecheck}; do
  for args in "--op bwd-data --problem '2 1 4 255 128 1 1 13 11 1 1 1 1 0 0 0 0'" \
              "--op bwd-data --problem '2 1 3 58 24 3 3 13 11 1 1 1 1 1 1 1 1'" \
              "--op bwd-weight --problem '2 1 4 255 116 1 1 13 11 1 1 1 1 0 0 0 0'" \
              "--op bwd-weight --split-k 3 --problem '2 1 3 100 58 3 3 13 11 1 1 1 1 1 1 1 1'"; do
    echo "=== $tool $args" >> "$san"
    eval timeout "${SAN_TIMEOUT:-120}" compute-sanitizer --tool $tool "$xt" verify --backend cuda "$args" >> "$san" 2>&1
    echo "exit $?" >> "$san"
  done
done

pass=$(grep -c "^PASS" "$log")
fail=$(grep -c "FAIL" "$log")
packed=$(grep -c "channel-packed" "$log")
errors=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$san" | grep -vc " 0 \(errors\|hazards\)")
echo "pack checks: $pass PASS lines (two per run), $fail FAIL lines, $packed lines naming a packed plan, in $log; sanitizer summaries with findings: $errors (in $san)"
[[ $fail -eq 0 && $errors -eq 0 && $pass -gt 0 ]]
