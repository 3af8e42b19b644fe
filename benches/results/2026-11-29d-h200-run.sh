#!/usr/bin/env bash
# Session 40 call 1: the channel pack (odd channel counts) -- float64 checks and sanitizers
# by the automatic plans, then --suite channels (odd layers and their multiple-of-8 twins)
# in both ops with the PyTorch peer, f16 then bf16.
set -u
nvidia-smi --query-gpu=name,clocks.max.sm --format=csv,noheader > $OUT/gpu.txt
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
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
b chan-bwdd-f16 100 bwd-data channels f16
b chan-bwdw-f16 100 bwd-weight channels f16
OUT=$OUT SAN_TIMEOUT=40 timeout 330 bash benches/channel_pack_checks.sh /tmp/xt; echo "checks exit $? at $((SECONDS-start)) s"
b chan-bwdd-bf16 60 bwd-data channels bf16
b chan-bwdw-bf16 60 bwd-weight channels bf16
echo "total $((SECONDS-start)) s"

# (call 1's pack-checks logs and jit.txt did not come back: the device tool returns 8 files; call 2 archives them)
