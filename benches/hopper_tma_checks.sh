#!/usr/bin/env bash
# Float64 checks and compute-sanitizer runs of every Hopper TMA kernel mode on
# a real GPU (the device machine): backward-data and backward-weight, 1x1
# plain GEMMs and filters with taps (padding, dilation, tails, groups, both
# rings, split-K, an epilogue), backward-weight with strides (element strides), the narrow
# tiles (128x64 backward-data, 64x128 backward-weight). Every line of output goes to files under
# $OUT (or ./tma-checks); the console gets the PASS/FAIL counts only, so a
# long run cannot push the verdicts out of a truncated console.
#
# Usage: benches/hopper_tma_checks.sh XTASK_BINARY
# SAN_TIMEOUT (seconds per sanitizer run, default 120) bounds the sanitizer part.
# Exit status: 0 when every check passed and the sanitizers found nothing.
set -u
xt=${1:?usage: $0 XTASK_BINARY}
out=${OUT:-tma-checks}
mkdir -p "$out"
log=$out/tma-checks-verify.txt
san=$out/tma-checks-sanitizer.txt
: > "$log"
: > "$san"

verify() { # op dtype extra-args... -- problem
  "$xt" verify --backend cuda "$@" >> "$log" 2>&1 || echo "FAILED (exit $?): $*" >> "$log"
}

for t in f16 bf16; do
  for ring in "" _ring6; do
    I=bwdd_${t}_128x128x64_tma$ring
    for p in "2 1 8 64 64 3 3 56 56 1 1 1 1 1 1 1 1" "2 1 16 128 128 3 3 28 28 1 1 1 1 1 1 1 1" \
             "2 1 64 512 512 3 3 7 7 1 1 1 1 1 1 1 1" "2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1" \
             "2 2 2 40 64 3 3 10 12 1 1 2 2 2 2 2 2" "2 1 2 64 96 5 3 8 11 1 1 1 1 2 0 1 2" \
             "2 1 4 64 64 1 1 6 5 1 1 1 1 1 1 1 1" "1 1 2 48 80 7 37 1 1 3 3" \
             "2 1 64 2048 512 1 1 7 7 1 1 1 1 0 0 0 0" "2 1 3 96 160 1 1 9 10 1 1 1 1 0 0 0 0"; do
      verify --op bwd-data --dtype $t --instance $I --problem "$p"
    done
    verify --op bwd-data --dtype $t --instance $I --epilogue bilinear=0.5,-1 --problem "2 2 4 128 192 3 3 20 20 1 1 1 1 1 1 1 1"
    W=bwdw_${t}_128x128x64_tma$ring
    for p in "2 1 8 64 64 3 3 56 56 1 1 1 1 1 1 1 1" "2 1 16 128 128 3 3 28 28 1 1 1 1 1 1 1 1" \
             "2 1 64 512 512 3 3 7 7 1 1 1 1 1 1 1 1" "2 1 3 72 128 3 3 13 11 1 1 1 1 1 1 1 1" \
             "2 2 3 72 64 3 3 7 7 1 1 2 2 2 2 2 2" "2 1 2 64 64 5 3 8 11 1 1 1 1 2 0 1 2" \
             "2 1 4 64 64 1 1 6 5 1 1 1 1 1 1 1 1" "1 1 2 80 64 7 37 1 1 3 3" \
             "2 1 64 2048 512 1 1 7 7 1 1 1 1 0 0 0 0" "2 1 3 96 160 1 1 19 17 1 1 1 1 0 0 0 0" \
             "2 1 64 128 128 3 3 56 56 2 2 1 1 1 1 1 1" "2 1 2 64 64 3 3 9 70 2 2 1 1 1 1 1 1" \
             "2 1 3 96 64 1 1 13 12 2 2 1 1 0 0 0 0" "2 1 2 64 64 3 3 17 16 3 2 2 2 2 1 2 1"; do
      verify --op bwd-weight --dtype $t --instance $W --problem "$p"
    done
    verify --op bwd-weight --dtype $t --instance $W --split-k 5 --deterministic --problem "2 1 8 128 192 3 3 16 16 1 1 1 1 1 1 1 1"
    verify --op bwd-weight --dtype $t --instance $W --split-k 3 --epilogue bilinear=0.5,-1 --problem "2 2 4 64 128 3 3 12 12 1 1 1 1 1 1 1 1"
  done
done

# The narrow tiles (session 39): 128x64 backward-data, 64x128 backward-weight.
for t in f16 bf16; do
  D=bwdd_${t}_128x64x64_tma
  for p in "2 1 8 64 64 3 3 56 56 1 1 1 1 1 1 1 1" "2 1 16 128 64 3 3 32 32 1 1 1 1 1 1 1 1" \
           "2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1" "2 2 4 40 64 1 1 9 10 1 1 1 1 0 0 0 0" \
           "2 1 64 256 64 1 1 56 56 1 1 1 1 0 0 0 0" "2 1 2 128 64 1 2 6 8 1 2 1 1 0 0 0 0"; do
    verify --op bwd-data --dtype $t --instance $D --problem "$p"
  done
  W=bwdw_${t}_64x128x64_tma
  for p in "2 1 64 64 64 3 3 56 56 1 1 1 1 1 1 1 1" "2 1 64 512 512 3 3 7 7 1 1 1 1 1 1 1 1" \
           "2 1 64 512 512 3 3 14 14 2 2 1 1 1 1 1 1" "2 1 64 768 384 2 2 14 14 2 2 1 1 0 0 0 0" \
           "2 1 3 72 128 3 3 13 11 1 1 1 1 1 1 1 1" "2 1 64 2048 512 1 1 7 7 1 1 1 1 0 0 0 0"; do
    verify --op bwd-weight --dtype $t --instance $W --problem "$p"
  done
  verify --op bwd-weight --dtype $t --instance $W --split-k 5 --deterministic --problem "2 1 8 128 192 3 3 16 16 1 1 1 1 1 1 1 1"
  verify --op bwd-weight --dtype $t --instance $W --split-k 5 --epilogue bilinear=0.5,-1 --problem "2 2 8 72 128 1 1 20 20 1 1 1 1 0 0 0 0"
done

for tool in memcheck racecheck synccheck; do
  for args in "--op bwd-data --instance bwdd_f16_128x128x64_tma --problem '2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1'" \
              "--op bwd-data --instance bwdd_f16_128x128x64_tma_ring6 --problem '2 1 2 64 96 5 3 8 11 1 1 1 1 2 0 1 2'" \
              "--op bwd-weight --instance bwdw_f16_128x128x64_tma --split-k 3 --problem '2 1 3 72 128 3 3 13 11 1 1 1 1 1 1 1 1'" \
              "--op bwd-weight --instance bwdw_f16_128x128x64_tma_ring6 --problem '2 1 2 64 64 5 3 8 11 1 1 1 1 2 0 1 2'" \
              "--op bwd-weight --instance bwdw_f16_128x128x64_tma --problem '2 1 2 64 64 3 3 9 70 2 2 1 1 1 1 1 1'" \
              "--op bwd-data --instance bwdd_f16_128x64x64_tma --problem '2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1'" \
              "--op bwd-weight --instance bwdw_f16_64x128x64_tma --split-k 3 --problem '2 1 3 72 128 3 3 13 11 1 1 1 1 1 1 1 1'"; do
    echo "=== $tool $args" >> "$san"
    eval timeout "${SAN_TIMEOUT:-120}" compute-sanitizer --tool $tool "$xt" verify --backend cuda "$args" >> "$san" 2>&1
    echo "exit $?" >> "$san"
  done
done

pass=$(grep -c "PASS" "$log")
fail=$(grep -c "FAIL" "$log")
errors=$(grep -E "ERROR SUMMARY|RACECHECK SUMMARY" "$san" | grep -vc " 0 \(errors\|hazards\)")
echo "tma checks: $pass PASS, $fail FAIL lines in $log; sanitizer summaries with findings: $errors (in $san)"
[[ $fail -eq 0 && $errors -eq 0 && $pass -gt 0 ]]
