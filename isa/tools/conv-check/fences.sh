#!/bin/bash
# Issue #42's cache-fence mutations on the real code objects: every cache-maintenance
# instruction of the split-K main kernel (`buffer_wbl2`, `buffer_inv`, `buffer_gl0/gl1_inv`,
# `buffer_wbinvl1_vol`; the release fence, the counter atomic's release/acquire, the last
# workgroup's acquire, the barriers' workgroup acquires) is removed (both words -> s_nop), one
# at a time, in the atomic split-K mode and in the deterministic one (partials stored, the last
# workgroup sums them). A removal is `caught` when the run fails (1: the cache model's error,
# 2: wrong result from a stale read); one that passes is listed as redundant (another fence on
# the same path does its work: the acq_rel fence and the acq_rel atomic both invalidate, every
# wave's fence and wave 0's atomic both write back) or not executed. Then each kind is removed
# as a whole (every invalidate; those after the counter atomic, the acquire side; on gfx942 in the
# deterministic mode every L2 write-back, and those before the counter atomic, the release side,
# leaving the last workgroup's own write-back after it): those must be caught, and the unmutated runs must pass. Usage: fences.sh [ARCH...]; MUT_PROBLEM,
# MUT_TYPE, MUT_SPLIT as mutate.sh. Exits 1 if a whole-kind removal passes or a base run fails.
B=${BIN:-target/release/isa-conv-check}
P=${MUT_PROBLEM:-"2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1"}
T=${MUT_TYPE:-f16}; S=${MUT_SPLIT:-2}
export CONVGRAD_ISA_ORDER_SEED=${CONVGRAD_ISA_ORDER_SEED:-1}
archs=("$@"); [ ${#archs[@]} -eq 0 ] && archs=(gfx90a gfx942 gfx1100)
bad=0; caught=0; redundant=0; idle=0
run() { "$B" $a "$P" "" $T $S $mode weight 2>&1; }
nops() { local m=""; for f in "$@"; do set -- $f; m+="$1:$nop,$(printf '%x' $((0x$1 + 4))):$nop,"; done; echo "$m"; }
check_all() {
  local name=$1; shift
  out=$(MUTATE=$(nops "$@") run); rc=$?
  if [ $rc -ne 0 ]; then echo "$a $mode $name removed ($# instructions): caught (exit $rc) $(echo "$out" | grep FAIL | head -1 | cut -c1-260)"
  else bad=1; echo "$a $mode $name removed ($# instructions): PASSES"; fi
}
for a in "${archs[@]}"; do
  if [ "$a" = gfx1100 ]; then trap=bf900002; nop=bf800000; else trap=bf920002; nop=bf800000; fi
  for mode in atomic det; do
    list=$(LIST_WAITCNT=1 run)
    mapfile -t fences < <(echo "$list" | grep '^FENCE' | awk '{sub(/^0x/, "", $2); print $2, $4, $5}')
    arrive=$(echo "$list" | grep '^ARRIVE' | head -1 | awk '{print $2}')
    out=$(run); rc=$?
    if [ $rc -ne 0 ]; then bad=1; echo "$a $mode: BASE RUN FAILS (exit $rc) $(echo "$out" | grep FAIL | head -1 | cut -c1-300)"; continue; fi
    for f in "${fences[@]}"; do
      set -- $f; at=$1
      out=$(MUTATE=$(nops "$f") run); rc=$?
      if [ $rc -ne 0 ]; then
        caught=$((caught + 1)); echo "$a $mode 0x$at ${*:2} removed: caught (exit $rc) $(echo "$out" | grep FAIL | head -1 | cut -c1-260)"
        continue
      fi
      if MUTATE="$at:$trap,$(printf '%x' $((0x$at + 4))):$nop" run | grep -q s_trap; then
        redundant=$((redundant + 1)); echo "$a $mode 0x$at ${*:2} removed: passes (redundant on this path)"
      else
        idle=$((idle + 1)); echo "$a $mode 0x$at ${*:2} removed: passes (not executed)"
      fi
    done
    inv=(); wb=(); acq=(); rel=()
    for f in "${fences[@]}"; do
      after=$(( 0x${f%% *} > arrive ))
      case "$f" in
        *wbl2*) wb+=("$f"); [ $after -eq 0 ] && rel+=("$f");;
        *inv*) inv+=("$f"); [ $after -eq 1 ] && acq+=("$f");;
      esac
    done
    check_all "every invalidate" "${inv[@]}"
    check_all "the acquire's invalidates (after the counter atomic at $arrive)" "${acq[@]}"
    if [ "$a" = gfx942 ] && [ "$mode" = det ]; then
      check_all "every L2 write-back" "${wb[@]}"
      check_all "the release's L2 write-backs (before the counter atomic at $arrive)" "${rel[@]}"
    fi
  done
done
echo "isa fence mutations: $caught single removals caught, $redundant redundant, $idle not executed; every whole-kind removal caught: $([ $bad -eq 0 ] && echo yes || echo NO)"
[ $bad -eq 0 ]
