#!/usr/bin/env bash
# Session 40 call 3: backward-data's odd-C stores as plain per-element stores (no D tensors):
# --suite channels with the peer (f16); the narrow 128x64 TMA tile forced on ShuffleNet's rows
# (C = 58 does not fit the 128x128 one), no peer.
set -u
gunzip -c .device/bin/xtask.gz > /tmp/xt && chmod +x /tmp/xt
export CUDA_CACHE_MAXSIZE=4294967296 CONVGRAD_TORCH_BENCH=$PWD/benches/torch_conv_bwd.py
start=$SECONDS
b() { # name timeout op suite dtype args...
  local n=$1 t=$2 op=$3 s=$4 d=$5; shift 5
  timeout $t /tmp/xt bench --backend cuda --suite $s --op $op --dtypes $d --iters 30 "$@" \
    --json $OUT/$n.json > $OUT/$n.txt 2>&1
  echo "$n exit $? $(grep -c " $d " $OUT/$n.txt) rows at $((SECONDS-start)) s; $(grep -m1 geomean $OUT/$n.txt)"
}
b chan-bwdd-f16 150 bwd-data channels f16
b chan-bwdd-tma64-f16 40 bwd-data channels f16 --no-peer --instance bwdd_f16_128x64x64_tma --filter shufflenet
grep -E "shufflenet|issue44" $OUT/chan-bwdd-f16.txt | cut -c1-150; grep -E "shufflenet" $OUT/chan-bwdd-tma64-f16.txt | cut -c1-150
