#!/usr/bin/env bash
# The evaluation of the Hopper TMA kernels on filters with taps that the hand
# rules need before they take them (tuning log 2026-11-29a): the float64
# checks and sanitizers (hopper_tma_checks.sh), then per op the networks
# suite's stride-1 layers by the hand rules (with the PyTorch peer), with the
# TMA tile forced at both ring depths and with the cp.async 128x128 tile
# forced. Everything goes to files under $OUT; the console gets one summary
# line per step.
#
# Usage (device machine, repository root): benches/hopper_tma_eval.sh XTASK_BINARY [FILTER]
# FILTER defaults to the networks with dense stride-1 filters with taps.
# OPS (default "bwd-data bwd-weight"), MODES (default "rules tma3 tma6 narrow cpasync"),
# BENCH_TIMEOUT (seconds per bench run, default 400) and SKIP_CHECKS=1 split a long
# evaluation over several device calls.
set -u
xt=${1:?usage: $0 XTASK_BINARY [FILTER]}
filter=${2:-resnet50|unet2d|sd_unet|deeplabv3|densenet121|yolov5s}
out=${OUT:-tma-eval}
mkdir -p "$out"
export CONVGRAD_TORCH_BENCH=${CONVGRAD_TORCH_BENCH:-$PWD/benches/torch_conv_bwd.py}
# A fresh machine JIT-compiles the whole PTX module (about 70 s on an H200) at the first load:
# one untimed run fills the driver's cache, or every timed-out bench below would redo it
# (tuning-log 2026-11-29b). The cache must hold the module's code.
export CUDA_CACHE_MAXSIZE=${CUDA_CACHE_MAXSIZE:-4294967296}
"$xt" verify --op bwd-data --backend cuda --dtype f16 --problem "2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1" > "$out/jit-warmup.txt" 2>&1
echo "JIT warm-up: exit $?"
[[ ${SKIP_CHECKS:-0} == 1 ]] || OUT=$out bash "$(dirname "$0")/hopper_tma_checks.sh" "$xt"

for op in ${OPS:-bwd-data bwd-weight}; do
  p=bwdd; [[ $op == bwd-weight ]] && p=bwdw
  for mode in ${MODES:-rules tma3 tma6 narrow cpasync}; do
    case $mode in
      rules) extra=();;
      tma3) extra=(--instance "${p}_f16_128x128x64_tma" --no-peer);;
      tma6) extra=(--instance "${p}_f16_128x128x64_tma_ring6" --no-peer);;
      narrow) n=128x64x64; [[ $op == bwd-weight ]] && n=64x128x64
              extra=(--instance "${p}_f16_${n}_tma" --no-peer);;
      cpasync) extra=(--instance "${p}_f16_128x128x32_wgmma" --no-peer);;
    esac
    f=$out/tma-eval-$op-$mode
    timeout "${BENCH_TIMEOUT:-400}" "$xt" bench --backend cuda --suite networks --op "$op" --dtypes f16 --filter "$filter" --iters 30 \
      "${extra[@]}" --json "$f.json" > "$f.txt" 2>&1
    echo "$op $mode: exit $?, $(grep -c ' ms\| f16 ' "$f.txt") rows, $(grep -m1 'geomean' "$f.txt")"
  done
done
