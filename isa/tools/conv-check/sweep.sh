#!/bin/bash
B=${BIN:-target/debug/isa-conv-check}
PROBS=("2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1" "2 1 2 16 16 3 3 16 16 1 1 1 1 1 1 1 1" "2 16 2 1 1 3 3 12 12 1 1 1 1 1 1 1 1" "2 1 2 8 3 7 7 20 20 2 2 1 1 3 3 3 3" "2 2 1 48 40 3 3 10 10 1 1 2 2 2 2 2 2" "2 1 2 64 64 3 3 9 9 2 2 1 1 1 1 1 1" "1 1 2 32 24 3 20 1 1 1 1")
for a in gfx942 gfx90a gfx1100; do
 for P in "${PROBS[@]}"; do
  for t in f16 bf16 f32; do
   for mode in weight data; do
     out=$(timeout 300 $B $a "$P" "" $t 1 x $mode 2>&1 | grep -E "wrong|FAIL|panicked" | head -1 | cut -c1-200)
     echo "$a $mode $t [$P] $out"
   done
  done
 done
done
