#!/usr/bin/env bash
# CI for the PyTorch extension on a machine without a GPU and without torch:
# builds the abi3 wheel with maturin and runs the NumPy tests on convgrad's
# emulator. Run from anywhere; needs Python >= 3.11 with venv, the pinned Rust
# toolchain (rust-toolchain.toml at the repository root) and crates.io / PyPI.
# GPU kernels are embedded if `cargo xtask build-kernels` ran before (the host
# crate's build.rs reads <repo>/target/kernels); the emulator needs none.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
cd "$here"
py="${PYTHON:-python3}"
venv="$here/.venv"
[ -x "$venv/bin/python" ] || "$py" -m venv "$venv"
"$venv/bin/python" -m pip install -q --disable-pip-version-check maturin==1.16.0 numpy==2.4.6 pytest==9.2.0
rm -rf target/wheels
"$venv/bin/maturin" build --release --locked --interpreter "$venv/bin/python"
"$venv/bin/python" -m pip install -q --disable-pip-version-check --force-reinstall --no-deps target/wheels/convgrad_torch-*.whl
# From the repository root: python/convgrad_torch (sources without the native
# module) must not shadow the installed package.
cd "$here/.."
"$venv/bin/python" -m pytest -q python/tests/test_cpu.py python/tests/test_find_cache.py
# The package imports without torch.
"$venv/bin/python" -c "import convgrad_torch, sys; assert 'torch' not in sys.modules; print('convgrad_torch', convgrad_torch.built_archs())"
