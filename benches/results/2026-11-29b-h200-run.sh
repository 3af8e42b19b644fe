#!/usr/bin/env bash
# Session 38 call 1: float64 checks + sanitizers of every Hopper TMA mode (taps, strides),
# TF32 checks on hardware; then bwd-weight timings (rules with peer, tma3) if time is left.
set -u
nvidia-smi --query-gpu=name --format=csv,noheader > $OUT/gpu.txt
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
export CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
SAN_TIMEOUT=45 OUT=$OUT timeout 420 bash benches/hopper_tma_checks.sh /tmp/xt; echo "checks exit $? after $((SECONDS-start)) s"
tl=$OUT/tf32-verify.txt
for op in bwd-data bwd-weight; do
  for p in "2 1 8 64 64 3 3 28 28 1 1 1 1 1 1 1 1" "2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1" "2 2 4 40 48 1 1 9 10 2 2 1 1 0 0 0 0"; do
    timeout 60 /tmp/xt verify --op $op --backend cuda --dtype f32-tf32 --problem "$p" >> $tl 2>&1 || echo "FAILED $op $p" >> $tl
  done
done
echo "tf32: $(grep -c PASS $tl) PASS, $(grep -c FAIL $tl) FAIL"
grep -h "FAIL" $OUT/tma-checks-verify.txt $tl | head -20
grep -B1 -A3 "ERROR SUMMARY: [1-9]\|RACECHECK SUMMARY: [1-9]" $OUT/tma-checks-sanitizer.txt | head -30
grep "^exit" $OUT/tma-checks-sanitizer.txt | sort | uniq -c
left=$((570 - (SECONDS-start)))
if (( left > 120 )); then
  OPS=bwd-weight MODES="rules tma3" BENCH_TIMEOUT=$(( (left-20)/2 )) SKIP_CHECKS=1 OUT=$OUT bash benches/hopper_tma_eval.sh /tmp/xt
fi
echo "total $((SECONDS-start)) s"
#!/usr/bin/env bash
# Session 38 call 2: timings without the peer for the TMA rules: bwd-weight ring 6 forced;
# bwd-data by the rules, ring 3 forced, ring 6 forced (networks with dense filters with taps).
set -u
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
F='resnet50|unet2d|sd_unet|deeplabv3|densenet121|yolov5s'
start=$SECONDS
b() { # name timeout op args...
  local n=$1 t=$2 op=$3; shift 3
  timeout $t /tmp/xt bench --backend cuda --suite networks --op $op --dtypes f16 --filter "$F" --iters 30 --no-peer "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c ' f16 ' $OUT/$n.txt) rows at $((SECONDS-start)) s"
}
b bwdw-tma6 130 bwd-weight --instance bwdw_f16_128x128x64_tma_ring6
b bwdd-rules 110 bwd-data
b bwdd-tma3 110 bwd-data --instance bwdd_f16_128x128x64_tma
b bwdd-tma6 110 bwd-data --instance bwdd_f16_128x128x64_tma_ring6
#!/usr/bin/env bash
# Session 38 call 4: A/B of the taps TMA backward-data kernel, 604d6b0's build (timed in 2026-11-29a)
# against main's. The PTX JIT of a fresh machine runs first, untimed-out, once per binary.
set -u
export CUDA_CACHE_MAXSIZE=4294967296
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
gunzip -c .device/bin/xtask_old.gz > /tmp/xt_old && chmod +x /tmp/xt_old
start=$SECONDS
for x in /tmp/xt /tmp/xt_old; do
  $x verify --op bwd-data --backend cuda --dtype f16 --instance bwdd_f16_128x128x64_tma --problem "2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1" > $OUT/jit-$(basename $x).txt 2>&1
  echo "$x JIT+verify at $((SECONDS-start)) s: $(tail -1 $OUT/jit-$(basename $x).txt | cut -c1-60)"
done
F='resnet50 layer2 3x3 128|resnet50 layer3 3x3 256|resnet50 layer4 3x3 512|unet2d enc3|unet2d enc4|unet2d bottleneck|sd_unet res 1280 16x16'
for b in new old; do
  x=/tmp/xt; [[ $b == old ]] && x=/tmp/xt_old
  for I in bwdd_f16_128x128x64_tma bwdd_f16_128x128x64_tma_ring6; do
    n=ab-$b-$I
    timeout 40 $x bench --backend cuda --suite networks --op bwd-data --dtypes f16 --filter "$F" --iters 30 --no-peer --instance $I \
      --json $OUT/$n.json > $OUT/$n.txt 2>&1
    echo "$n exit $? at $((SECONDS-start)) s"; grep " f16 " $OUT/$n.txt | grep -v skipped | awk '{print "   ", $0}' | cut -c1-80
  done
done
