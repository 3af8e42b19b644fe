#!/usr/bin/env bash
# On the GPU machine (CUDA PyTorch, pytest): installs the prebuilt abi3 wheel
# from .device/wheels/ into /tmp/site and runs the CUDA tests, then the
# training example. The log goes to $OUT/pytest.log when $OUT is set.
#   bash python/device_test.sh            (from the repository root)
set -euo pipefail
cd "$(dirname "${BASH_SOURCE[0]}")/.."
whl="$(ls -t .device/wheels/convgrad_torch-*.whl | head -n 1)"
rm -rf /tmp/site
python3 -m pip install -q --disable-pip-version-check --no-deps --target /tmp/site "$whl"
log="${OUT:+$OUT/pytest.log}"
log="${log:-/tmp/convgrad_torch_pytest.log}"
export PYTHONPATH=/tmp/site${PYTHONPATH:+:$PYTHONPATH}
{
  echo "wheel: $whl"
  nvidia-smi -L || true
  python3 -c "import torch, convgrad_torch as c; print('torch', torch.__version__, 'cuda', torch.version.cuda, torch.cuda.get_device_name(), '| convgrad archs', c.built_archs())"
  python3 -m pytest -x -q -rs python/tests/test_cuda.py
  python3 python/examples/train_loop.py --steps 5
  python3 python/examples/train_loop.py --steps 3 --dtype float16 --channels-last
} 2>&1 | tee "$log"
