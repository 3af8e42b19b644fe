#!/bin/bash
# Issue #42's first mutation on the real code objects: each s_waitcnt of the planned main
# kernel that executes (found by replacing it with s_trap) is replaced by s_nop. Where the
# wait is needed in the unmutated run (it lands a load result the wave reads before its
# next wait: `Counters::waits_needed`), the mutated run must fail (executor error, exit 1,
# or a wrong result, exit 2); the others (a repeated wait, a wait for another path's loads,
# a release fence whose effect needs the cache model) are listed with their exit code. Usage: mutate.sh [ARCH...]; problem
# `2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1`, f16, split-K 2 (MUT_PROBLEM / MUT_TYPE / MUT_SPLIT /
# MUT_MODE override). Exits 1 if a needed wait can be removed unnoticed.
B=${BIN:-target/release/isa-conv-check}
P=${MUT_PROBLEM:-"2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1"}
T=${MUT_TYPE:-f16}; S=${MUT_SPLIT:-2}; M=${MUT_MODE:-weight}
archs=("$@"); [ ${#archs[@]} -eq 0 ] && archs=(gfx90a gfx942 gfx1100)
total=0; caught=0; missed=0; idle=0
for a in "${archs[@]}"; do
  case "$a" in gfx1100 | gfx1200 | gfx1201) trap=bf900002 ;; *) trap=bf920002 ;; esac
  list=$(LIST_WAITCNT=1 CONVGRAD_ISA_ORDER_SEED=sequential "$B" $a "$P" "" $T $S x $M 2>/dev/null)
  mapfile -t waits < <(echo "$list" | grep '^WAITCNT' | cut -d' ' -f2)
  lands=" $(echo "$list" | grep '^LANDS' | cut -d' ' -f2 | tr '\n' ' ') "
  n=0; c=0; z=0
  for w in "${waits[@]}"; do
    out=$(CONVGRAD_ISA_ORDER_SEED=sequential MUTATE=$w:$trap "$B" $a "$P" "" $T $S x $M 2>&1)
    echo "$out" | grep -q "s_trap" || continue   # not executed
    n=$((n + 1))
    out=$(MUTATE=$w:bf800000 "$B" $a "$P" "" $T $S x $M 2>&1); rc=$?
    if [[ "$lands" != *" $w "* ]]; then
      z=$((z + 1)); echo "$a $w -> s_nop: not needed on this run (exit $rc)"
    elif [ $rc -ne 0 ]; then
      c=$((c + 1)); echo "$a $w -> s_nop: caught (exit $rc) $(echo "$out" | grep FAIL | head -1 | cut -c1-200)"
    else
      missed=$((missed + 1)); echo "$a $w -> s_nop: PASSES although the wait is needed"
    fi
  done
  echo "$a: $n executed s_waitcnt: $c of $((n - z)) needed ones caught, $z not needed"
  total=$((total + n)); caught=$((caught + c)); idle=$((idle + z))
done
echo "isa waitcnt mutations: $caught of $((total - idle)) needed waits caught ($idle of $total executed waits not needed)"
[ $missed -eq 0 ] && [ $caught -gt 0 ]
