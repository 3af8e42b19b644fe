#!/usr/bin/env bash
# Session 37: backward-data TMA kernel on filters with taps (3x3 etc., stride 1) on the H200 --
# float64 checks (both rings, tails, dilation, padding, groups, epilogue), the 1x1 TMA kernels
# again (maps now rank 5), compute-sanitizer, then ResNet-50 / U-Net / wav2vec2 layers by the
# hand rules (with the peer), the cp.async warpgroup tile forced and both TMA rings forced.
set -x
nvidia-smi --query-gpu=name --format=csv,noheader
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
export CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
for t in f16 bf16; do
  for I in bwdd_${t}_128x128x64_tma bwdd_${t}_128x128x64_tma_ring6; do
    for p in "2 1 8 64 64 3 3 56 56 1 1 1 1 1 1 1 1" "2 1 16 128 128 3 3 28 28 1 1 1 1 1 1 1 1" "2 1 64 512 512 3 3 7 7 1 1 1 1 1 1 1 1" \
             "2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1" "2 2 2 40 64 3 3 10 12 1 1 2 2 2 2 2 2" "2 1 2 64 96 5 3 8 11 1 1 1 1 2 0 1 2" \
             "2 1 4 64 64 1 1 6 5 1 1 1 1 1 1 1 1" "1 1 2 48 80 7 37 1 1 3 3"; do
      /tmp/xt verify --op bwd-data --backend cuda --dtype $t --instance $I --problem "$p" 2>&1 | tail -1
    done
  done
  /tmp/xt verify --op bwd-data --backend cuda --dtype $t --instance bwdd_${t}_128x128x64_tma --epilogue bilinear=0.5,-1 --problem "2 2 4 128 192 3 3 20 20 1 1 1 1 1 1 1 1" 2>&1 | tail -1
  /tmp/xt verify --op bwd-data --backend cuda --dtype $t --problem "2 1 64 2048 512 1 1 7 7 1 1 1 1 0 0 0 0" 2>&1 | tail -1
  /tmp/xt verify --op bwd-weight --backend cuda --dtype $t --instance bwdw_${t}_128x128x64_tma --split-k 3 --problem "2 1 8 256 512 1 1 28 28 1 1 1 1 0 0 0 0" 2>&1 | tail -1
  /tmp/xt verify --op bwd-data --backend cuda --dtype $t --problem "2 1 32 256 256 3 3 14 14 1 1 1 1 1 1 1 1" 2>&1 | grep -i "instance\|PASS\|FAIL" | tail -2
done
for tool in memcheck racecheck synccheck; do
  timeout 100 compute-sanitizer --tool $tool /tmp/xt verify --op bwd-data --backend cuda --instance bwdd_f16_128x128x64_tma --problem "2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1" 2>&1 | tail -3
  timeout 100 compute-sanitizer --tool $tool /tmp/xt verify --op bwd-data --backend cuda --instance bwdd_f16_128x128x64_tma_ring6 --problem "2 1 2 64 96 5 3 8 11 1 1 1 1 2 0 1 2" 2>&1 | tail -3
done
F='resnet50|unet2d|wav2vec2'
for mode in rules wgmma tma6 tma3; do
  case $mode in
    rules) X="";;
    wgmma) X="--instance bwdd_f16_128x128x32_wgmma --no-peer";;
    tma6) X="--instance bwdd_f16_128x128x64_tma_ring6 --no-peer";;
    tma3) X="--instance bwdd_f16_128x128x64_tma --no-peer";;
  esac
  timeout 200 /tmp/xt bench --backend cuda --suite networks --op bwd-data --dtypes f16 --filter "$F" --iters 30 $X \
    --json $OUT/s37-bwdd-$mode.json > $OUT/s37-bwdd-$mode.txt 2>&1
  grep -v "torch_conv_bwd\|^\s*$" $OUT/s37-bwdd-$mode.txt | tail -36
done
