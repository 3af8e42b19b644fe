#!/bin/bash
# Issue #42's barrier mutation on the real code objects: the split-K release `s_barrier` of the
# planned main kernel (the last `s_barrier` before the returning counter atomic, `ARRIVE`: every
# wave's partial stores must be complete before wave 0 releases them to the last workgroup) is
# replaced by `s_nop 0`, in the atomic split-K mode and the deterministic one, on gfx90a, gfx942
# and gfx1100. The mutated run must fail (1: an executor error, e.g. the cache model's race, or
# 2: a wrong result); the unmutated run must pass. Usage: barriers.sh [ARCH...]; MUT_PROBLEM,
# MUT_TYPE, MUT_SPLIT as mutate.sh. Exits 1 if a removal passes or a base run fails.
B=${BIN:-target/release/isa-conv-check}
P=${MUT_PROBLEM:-"2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1"}
T=${MUT_TYPE:-f16}; S=${MUT_SPLIT:-2}
export CONVGRAD_ISA_ORDER_SEED=${CONVGRAD_ISA_ORDER_SEED:-1}
archs=("$@"); [ ${#archs[@]} -eq 0 ] && archs=(gfx90a gfx942 gfx1100)
bad=0; caught=0
run() { "$B" $a "$P" "" $T $S $mode weight 2>&1; }
for a in "${archs[@]}"; do
  nop=bf800000
  for mode in atomic det; do
    list=$(LIST_WAITCNT=1 run)
    arrive=$(echo "$list" | grep '^ARRIVE' | head -1 | awk '{print $2}')
    if [ -z "$arrive" ]; then bad=1; echo "$a $mode: no split-K arrival (ARRIVE) in the main kernel"; continue; fi
    rel=""
    while read -r _ at _; do (( at < arrive )) && rel=$at; done < <(echo "$list" | grep '^BARRIER')
    if [ -z "$rel" ]; then bad=1; echo "$a $mode: no s_barrier before the arrival at $arrive"; continue; fi
    out=$(run); rc=$?
    if [ $rc -ne 0 ]; then bad=1; echo "$a $mode: BASE RUN FAILS (exit $rc) $(echo "$out" | grep FAIL | head -1 | cut -c1-300)"; continue; fi
    out=$(MUTATE="${rel#0x}:$nop" run); rc=$?
    if [ $rc -ne 0 ]; then
      caught=$((caught + 1)); echo "$a $mode release s_barrier at $rel (arrival at $arrive) removed: caught (exit $rc) $(echo "$out" | grep -E 'FAIL|error' | head -1 | cut -c1-300)"
    else
      bad=1; echo "$a $mode release s_barrier at $rel (arrival at $arrive) removed: PASSES"
    fi
  done
done
echo "isa barrier mutations: $caught caught; every release barrier removal caught: $([ $bad -eq 0 ] && echo yes || echo NO)"
[ $bad -eq 0 ]
