#!/usr/bin/env bash
# Session 40 call 2: after the vector-read pack (aligned 16-byte reads shifted into place) and
# backward-data's odd-C path (w padded, W_PADDED): --suite channels in both ops with the peer
# (f16), the pack's float64 checks and memcheck, then ShuffleNetV2 training steps (batch 128, f16,
# channels_last, cast) with the wheel of this commit.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
python -m pip install --no-deps --no-index -q .device/convgrad_torch-*.whl > $OUT/pip.txt 2>&1; echo "pip exit $?"
export CUDA_CACHE_MAXSIZE=4294967296 CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
/tmp/xt verify --op bwd-data --backend cuda --dtype f16 --problem "2 1 16 255 128 1 1 80 80 1 1 1 1 0 0 0 0" > $OUT/jit.txt 2>&1
echo "JIT exit $? at $((SECONDS-start)) s: $(grep -c '^PASS' $OUT/jit.txt) PASS"
b() { # name timeout op suite dtype args...
  local n=$1 t=$2 op=$3 s=$4 d=$5; shift 5
  timeout $t /tmp/xt bench --backend cuda --suite $s --op $op --dtypes $d --iters 30 "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c " $d " $OUT/$n.txt) rows at $((SECONDS-start)) s; $(grep -m1 geomean $OUT/$n.txt)"
}
b chan-bwdd-f16 80 bwd-data channels f16
b chan-bwdw-f16 80 bwd-weight channels f16
OUT=$OUT SAN_TIMEOUT=25 SAN_TOOLS=memcheck timeout 150 bash benches/channel_pack_checks.sh /tmp/xt; echo "checks exit $? at $((SECONDS-start)) s"
timeout 110 python benches/train_step.py --models shufflenet_v2 --batches 128 --dtypes f16 --modes cast --formats cl \
  --profile --steps 8 --rounds 2 --warmup 4 --json $OUT/train.json --budget-s 80 > $OUT/train.txt 2>&1
echo "train exit $? at $((SECONDS-start)) s"; grep -v "^\s*$" $OUT/train.txt | grep -v Warn | tail -6 | cut -c1-230
# Everything back as one archive (the device tool returns a limited number of files).
(cd $OUT && tar czf /tmp/all.tgz . && rm -rf ./* && mv /tmp/all.tgz .)
