#!/bin/bash
# Runs real AMD code objects on the isa executor: 7 problems x 3 types x both ops on gfx942,
# gfx90a and gfx1100, each judged against the float64 reference (conv-check). Exits 1 if any fails.
B=${BIN:-target/release/isa-conv-check}
PROBS=("2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1" "2 1 2 16 16 3 3 16 16 1 1 1 1 1 1 1 1" "2 16 2 1 1 3 3 12 12 1 1 1 1 1 1 1 1" "2 1 2 8 3 7 7 20 20 2 2 1 1 3 3 3 3" "2 2 1 48 40 3 3 10 10 1 1 2 2 2 2 2 2" "2 1 2 64 64 3 3 9 9 2 2 1 1 1 1 1 1" "1 1 2 32 24 3 20 1 1 1 1")
runs=0; failed=0
for a in gfx942 gfx90a gfx1100; do
 for P in "${PROBS[@]}"; do
  for t in f16 bf16 f32; do
   for mode in weight data; do
     out=$(timeout 300 "$B" $a "$P" "" $t 1 x $mode 2>&1)
     rc=$?
     runs=$((runs + 1))
     line=$(echo "$out" | grep -E "PASS|FAIL|panicked" | tail -1 | cut -c1-220)
     if [ $rc -ne 0 ]; then failed=$((failed + 1)); echo "FAILED (exit $rc) $a $mode $t [$P] $line"; else echo "$a $mode $t [$P] $line"; fi
   done
  done
 done
done
echo "isa conv-check sweep: $((runs - failed)) of $runs passed"
[ $failed -eq 0 ]
