#!/bin/bash
# Issue #42's wait-state mutation on the real code objects (src/exec/hazard.rs). For the
# planned main kernel of each run (problem `2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1`, split-K 2,
# f16 and bf16, weight and data; gfx90a and gfx942), every executed `s_nop` a wait-state rule
# needed in the unmutated run (`NOPNEEDED`: cut to `s_nop 0` it leaves too few wait states
# between an MFMA result / VALU write and its reader) is cut to `s_nop 0`, and the run must
# stop with the hazard error. Also prints, per rule, the closest dependency seen (`SLACK rule
# states-beyond-required address`); where a dependency has none to spare (`SWAP rule 0 ...`),
# its dependent instruction swapped with the one before it (one wait state fewer) must
# be caught too. Usage: hazards.sh [ARCH...]; HAZ_PROBLEM / HAZ_TYPES /
# HAZ_SPLIT override. Exits 1 if a needed s_nop can be cut unnoticed (or the unmutated run fails).
B=${BIN:-target/release/isa-conv-check}
P=${HAZ_PROBLEM:-"2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1"}
S=${HAZ_SPLIT:-2}
types=(${HAZ_TYPES:-f16 bf16})
archs=("$@"); [ ${#archs[@]} -eq 0 ] && archs=(gfx90a gfx942)
total=0; caught=0; missed=0; bad=0; sn=0; sc=0; stotal=0; scaught=0; smissed=0
for a in "${archs[@]}"; do
  n=0; c=0
  for t in "${types[@]}"; do
    for m in weight data; do
      list=$(LIST_NOPS=1 CONVGRAD_ISA_ORDER_SEED=sequential "$B" $a "$P" "" $t $S x $m 2>&1); rc=$?
      if [ $rc -ne 0 ]; then
        bad=$((bad + 1)); echo "$a $t $m: the unmutated run fails (exit $rc): $(echo "$list" | grep -E 'FAIL|hazard' | head -1 | cut -c1-300)"
        continue
      fi
      kernel=$(echo "$list" | grep -E '^bw' | head -1 | cut -d' ' -f1)
      executed=$(echo "$list" | grep -c '^NOP ')
      slack=$(echo "$list" | grep '^SLACK' | cut -d' ' -f2,3 | tr '\n' ',' | sed 's/,$//')
      mapfile -t nops < <(echo "$list" | grep '^NOPNEEDED' | cut -d' ' -f2,3)
      echo "$a $t $m $kernel: ${#nops[@]} needed s_nops; closest dependency per rule (wait states beyond the required): ${slack:-none}"
      for x in "${nops[@]}"; do
        addr=${x%% *}; rule=${x#* }
        n=$((n + 1))
        out=$(MUTATE=$addr:bf800000 "$B" $a "$P" "" $t $S x $m 2>&1); rc=$?
        if [ $rc -eq 1 ] && echo "$out" | grep -q "wait-state hazard"; then
          c=$((c + 1)); echo "  $addr ($rule) -> s_nop 0: caught: $(echo "$out" | grep -o 'wait-state hazard.*' | head -1 | cut -c1-200)"
        else
          missed=$((missed + 1)); echo "  $addr ($rule) -> s_nop 0: NOT caught (exit $rc)"
        fi
      done
      # Dependencies with no wait state to spare: the dependent instruction moved up
      # one (swapped with the instruction before it) has one wait state too few.
      mapfile -t swaps < <(echo "$list" | grep '^SWAP [^ ]* 0 ' | cut -d' ' -f2,4-)
      for x in "${swaps[@]}"; do
        rule=${x%% *}; rest=${x#* }; mut=${rest%% *}; what=${rest#* }
        sn=$((sn + 1))
        out=$(MUTATE=$mut "$B" $a "$P" "" $t $S x $m 2>&1); rc=$?
        if [ $rc -eq 1 ] && echo "$out" | grep -q "wait-state hazard"; then
          sc=$((sc + 1)); echo "  ($rule, no slack) $what: caught: $(echo "$out" | grep -o 'wait-state hazard.*' | head -1 | cut -c1-160)"
        else
          smissed=$((smissed + 1)); echo "  ($rule, no slack) $what: NOT caught as a hazard (exit $rc) $(echo "$out" | grep -E 'FAIL|kernel ' | head -1 | cut -c1-200)"
        fi
      done
    done
  done
  echo "$a: caught $c of $n needed s_nops cut to s_nop 0; caught $sc of $sn zero-slack dependencies moved up one instruction"
  total=$((total + n)); caught=$((caught + c)); stotal=$((stotal + sn)); scaught=$((scaught + sc)); sn=0; sc=0
done
echo "isa wait-state mutations: caught $caught of $total needed s_nops cut to s_nop 0, $scaught of $stotal zero-slack dependencies moved up one ($bad unmutated runs failed)"
[ $missed -eq 0 ] && [ $bad -eq 0 ] && [ $smissed -eq 0 ]
