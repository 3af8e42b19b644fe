#!/usr/bin/env bash
# Session 39 call 1: re-time backward-data on filters with taps after the producer fix
# (row_dim, separate 1x1/taps loops): rules with peer, TMA ring 3 forced, cp.async 128x128
# forced; then backward-weight by the rules (with the TMA rule of session 38) with peer on ResNet-50.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
export CUDA_CACHE_MAXSIZE=4294967296 CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
/tmp/xt verify --op bwd-data --backend cuda --dtype f16 --problem "2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1" > $OUT/jit.txt 2>&1
echo "JIT exit $? at $((SECONDS-start)) s"
F='resnet50|unet2d|sd_unet|deeplabv3|densenet121|yolov5s'
b() { # name timeout op filter args...
  local n=$1 t=$2 op=$3 f=$4; shift 4
  timeout $t /tmp/xt bench --backend cuda --suite networks --op $op --dtypes f16 --filter "$f" --iters 30 "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c ' f16 ' $OUT/$n.txt) rows at $((SECONDS-start)) s; $(grep -m1 geomean $OUT/$n.txt)"
}
b bwdd-rules 150 bwd-data "$F"
b bwdd-tma3 100 bwd-data "$F" --no-peer --instance bwdd_f16_128x128x64_tma
b bwdd-cpasync 100 bwd-data "$F" --no-peer --instance bwdd_f16_128x128x32_wgmma
b bwdw-rules-resnet50 80 bwd-weight resnet50
echo "total $((SECONDS-start)) s"
#!/usr/bin/env bash
# Session 39 call 2: the widened taps TMA rule (C >= 128, K >= 64, ring by the grid) --
# ring 6 forced on the taps layers, the rules with peer (f16), then training steps
# (batch 64, f16, channels_last, model cast, --profile) with the wheel of this commit.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
pip install --no-deps --no-index -q .device/convgrad_torch-*.whl > $OUT/pip.txt 2>&1; echo "pip exit $?"
export CUDA_CACHE_MAXSIZE=4294967296 CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
/tmp/xt verify --op bwd-data --backend cuda --dtype f16 --problem "2 1 2 64 64 3 3 8 8 1 1 1 1 1 1 1 1" > $OUT/jit.txt 2>&1
echo "JIT exit $? at $((SECONDS-start)) s"
F='resnet50|unet2d|sd_unet|deeplabv3|densenet121|yolov5s'
b() { # name timeout op filter args...
  local n=$1 t=$2 op=$3 f=$4; shift 4
  timeout $t /tmp/xt bench --backend cuda --suite networks --op $op --dtypes f16 --filter "$f" --iters 30 "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c ' f16 ' $OUT/$n.txt) rows at $((SECONDS-start)) s; $(grep -m1 geomean $OUT/$n.txt)"
}
b bwdd-tma6 80 bwd-data 'resnet50 layer|unet2d|sd_unet res|deeplabv3|densenet121 block' --no-peer --instance bwdd_f16_128x128x64_tma_ring6
b bwdd-rules 130 bwd-data "$F"
timeout 250 python benches/train_step.py --models resnet50,convnext_t,resnext50 --batches 64 --dtypes f16 --modes cast --formats cl \
  --profile --steps 8 --rounds 2 --warmup 4 --json $OUT/train.json --budget-s 170 > $OUT/train.txt 2>&1
echo "train exit $? at $((SECONDS-start)) s"; grep -v "^\s*$" $OUT/train.txt | tail -12 | cut -c1-200
# call 2b (the wheel installed with python -m pip): python -m pip install --no-deps --no-index -q .device/convgrad_torch-*.whl; python benches/train_step.py --models resnet50,convnext_t,resnext50 --batches 64 --dtypes f16 --modes cast --formats cl --profile --steps 8 --rounds 2 --warmup 4 --budget-s 200
#!/usr/bin/env bash
# Session 39 call 3: after the fix of TMA plans on folded problems -- ConvNeXt's and ViT's
# stride == filter layers by the rules (peer) and with the cp.async tile forced; then training
# steps (batch 64, f16, channels_last, model cast, --profile) of five models.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
python -m pip install --no-deps --no-index -q .device/convgrad_torch-*.whl > $OUT/pip.txt 2>&1; echo "pip exit $?"
export CUDA_CACHE_MAXSIZE=4294967296 CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
/tmp/xt verify --op bwd-weight --backend cuda --dtype f16 --problem "2 1 8 192 96 2 2 56 56 2 2 1 1 0 0 0 0" > $OUT/jit.txt 2>&1
echo "JIT+verify convnext down exit $? at $((SECONDS-start)) s: $(grep -m1 -i 'pass\|fail' $OUT/jit.txt | cut -c1-100)"
b() { # name timeout op filter args...
  local n=$1 t=$2 op=$3 f=$4; shift 4
  timeout $t /tmp/xt bench --backend cuda --suite networks --op $op --dtypes f16 --filter "$f" --iters 30 "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c ' f16 ' $OUT/$n.txt) rows at $((SECONDS-start)) s; $(grep -m1 geomean $OUT/$n.txt)"
}
b bwdw-fold-rules 60 bwd-weight 'convnext_t down|convnext_t stem|vit_b16'
b bwdw-fold-wgmma 40 bwd-weight 'convnext_t down|convnext_t stem|vit_b16' --no-peer --instance bwdw_f16_128x128x32_wgmma
timeout 330 python benches/train_step.py --models resnet50,convnext_t,resnext50,mobilenet_v2,efficientnet_b0 --batches 64 --dtypes f16 --modes cast --formats cl \
  --profile --steps 8 --rounds 2 --warmup 4 --json $OUT/train.json --budget-s 260 > $OUT/train.txt 2>&1
echo "train exit $? at $((SECONDS-start)) s"; grep -v "^\s*$" $OUT/train.txt | grep -v Warn | tail -9 | cut -c1-230
#!/usr/bin/env bash
# Session 39 call 4: ncu (boost clocks, warm L2) of backward-weight's split-K TMA tile on the
# short-reduction layers at 0.4x cuDNN (ConvNeXt down 384->768 2x2 s2, ResNet-50 layer4 1x1
# 512->2048) and of cuDNN's wgrad kernel on the 1x1 one; then bf16 backward-data by the rules.
set -u
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
export CUDA_CACHE_MAXSIZE=4294967296 CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
/tmp/xt verify --op bwd-data --backend cuda --dtype bf16 --problem "2 1 2 64 128 3 3 8 8 1 1 1 1 1 1 1 1" > $OUT/jit.txt 2>&1
echo "JIT exit $? at $((SECONDS-start)) s"
S='--section SpeedOfLight --section WarpStateStats --section SchedulerStats --section Occupancy --section MemoryWorkloadAnalysis --section LaunchStats'
n=0
for f in "convnext_t down 384->768" "resnet50 layer4 1x1 512->2048"; do
  n=$((n+1))
  timeout 100 ncu --clock-control none --cache-control none -k regex:bwdw_ --launch-skip 3 --launch-count 1 $S \
    /tmp/xt bench --backend cuda --suite networks --op bwd-weight --dtypes f16 --filter "$f" --iters 5 --no-peer > $OUT/ncu-ours-$n.txt 2>&1
  echo "ncu ours $f exit $? at $((SECONDS-start)) s"; grep -E "Duration|Throughput|Registers|Achieved Occ|Block Size|Grid Size|Stall|Warp Cycles|Shared Memory Config|L2 Hit|One or More" $OUT/ncu-ours-$n.txt | head -24
done
timeout 100 ncu --clock-control none --cache-control none -k regex:'wgrad|xmma|nvjet|sm90|cutlass' --launch-skip 8 --launch-count 1 $S \
  python3 benches/cudnn_wgrad_one.py 64 512 2048 7 1 1 > $OUT/ncu-cudnn-1x1.txt 2>&1
echo "ncu cudnn exit $? at $((SECONDS-start)) s"; grep -E "^  [a-z_0-9]+.*\(|Duration|Throughput|Registers|Achieved Occ|Block Size|Grid Size|L2 Hit" $OUT/ncu-cudnn-1x1.txt | head -16
timeout 150 /tmp/xt bench --backend cuda --suite networks --op bwd-data --dtypes bf16 --filter 'resnet50|unet2d|sd_unet|deeplabv3|densenet121|yolov5s' --iters 30 \
  --json $OUT/bwdd-rules-bf16.json > $OUT/bwdd-rules-bf16.txt 2>&1
echo "bf16 rules exit $? at $((SECONDS-start)) s; $(grep -m1 geomean $OUT/bwdd-rules-bf16.txt)"
#!/usr/bin/env bash
# Session 39 call 5: the narrow TMA tiles (bwdw_*_64x128x64_tma, bwdd_*_128x64x64_tma):
# float64 checks on the H200, then forced timings on the layers they are meant for.
set -u
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
export CUDA_CACHE_MAXSIZE=4294967296
start=$SECONDS
/tmp/xt verify --op bwd-weight --backend cuda --dtype f16 --instance bwdw_f16_64x128x64_tma --problem "2 1 64 2048 512 1 1 7 7 1 1 1 1 0 0 0 0" > $OUT/verify.txt 2>&1
echo "JIT+verify exit $? at $((SECONDS-start)) s"
v() { timeout 40 /tmp/xt verify --backend cuda "$@" >> $OUT/verify.txt 2>&1 || echo "FAILED $*" >> $OUT/verify.txt; }
for t in f16 bf16; do
  W=bwdw_${t}_64x128x64_tma; D=bwdd_${t}_128x64x64_tma
  v --op bwd-weight --dtype $t --instance $W --problem "2 1 64 768 384 2 2 14 14 2 2 1 1 0 0 0 0"
  v --op bwd-weight --dtype $t --instance $W --split-k 3 --deterministic --problem "2 1 4 136 200 3 3 13 11 1 1 1 1 1 1 1 1"
  v --op bwd-weight --dtype $t --instance $W --split-k 5 --epilogue bilinear=0.5,-1 --problem "2 2 8 72 128 1 1 20 20 1 1 1 1 0 0 0 0"
  v --op bwd-data --dtype $t --instance $D --problem "2 1 8 64 64 3 3 56 56 1 1 1 1 1 1 1 1"
  v --op bwd-data --dtype $t --instance $D --problem "2 1 3 72 136 3 3 13 11 1 1 1 1 1 1 1 1"
  v --op bwd-data --dtype $t --instance $D --problem "2 2 4 40 64 1 1 9 10 1 1 1 1 0 0 0 0"
done
echo "verify: $(grep -c PASS $OUT/verify.txt) PASS, $(grep -c 'FAIL' $OUT/verify.txt) FAIL at $((SECONDS-start)) s"; grep FAIL $OUT/verify.txt | head
b() { # name timeout op filter args...
  local n=$1 t=$2 op=$3 f=$4; shift 4
  timeout $t /tmp/xt bench --backend cuda --suite networks --op $op --dtypes f16 --filter "$f" --iters 30 --no-peer "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c ' f16 ' $OUT/$n.txt) rows at $((SECONDS-start)) s"
}
b bwdw-tma64 100 bwd-weight 'resnet50|convnext_t down|mobilenet_v2 1x1|efficientnet_b0 1x1' --instance bwdw_f16_64x128x64_tma
b bwdw-rules 60 bwd-weight 'resnet50|convnext_t down'
b bwdd-tma64 60 bwd-data 'resnet50 layer1|unet2d enc1|unet2d enc2|unet2d dec1|densenet121 block1 3x3' --instance bwdd_f16_128x64x64_tma
echo "total $((SECONDS-start)) s"
