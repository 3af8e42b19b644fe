#!/usr/bin/env bash
# CI for the PyTorch extension on a machine without a GPU and without torch
# (#39): builds the abi3 wheel as a manylinux_2_28 artifact in python/dist/,
# installs it in a fresh venv (not the build venv) and runs the NumPy tests on
# convgrad's emulator from a scratch directory, so that the source folder
# python/convgrad_torch cannot shadow the installed package. Run from anywhere;
# needs Python >= 3.9 with venv, the pinned Rust toolchain (rust-toolchain.toml
# at the repository root) and crates.io / PyPI.
#
# Kernels: the host crate's build.rs embeds <repo>/target/kernels (after
# `cargo xtask build-kernels`) or else the checked-in bundle host/kernels/, so
# the wheel always carries all seven architectures; this script checks that.
set -euo pipefail
here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
root="$(cd "$here/.." && pwd)"
py="${PYTHON:-python3}"
pipq=(-m pip install -q --disable-pip-version-check)
t0=$SECONDS

# Build venv: maturin, and zig as the linker. zig links against glibc 2.28's
# symbol versions, so the wheel installs on glibc >= 2.28 (RHEL 8, Ubuntu 20.04,
# Debian 11) although this machine's glibc is newer; without it the tag follows
# the build machine (manylinux_2_34 on Debian 12).
bvenv="$here/.venv"
[ -x "$bvenv/bin/python" ] || "$py" -m venv "$bvenv"
"$bvenv/bin/python" "${pipq[@]}" maturin==1.16.0 ziglang==0.17.1
echo "python/ci.sh: build venv ready ($((SECONDS - t0))s)"

cd "$here"
rm -rf dist
# maturin finds zig as `python3 -m ziglang` on PATH: the build venv's python.
PATH="$bvenv/bin:$PATH" "$bvenv/bin/maturin" build --release --locked \
  --compatibility manylinux_2_28 --zig --interpreter "$bvenv/bin/python" --out dist
shopt -s nullglob
whls=("$here"/dist/convgrad_torch-*.whl)
[ ${#whls[@]} -eq 1 ] || { echo "python/ci.sh: expected one wheel in python/dist/, found ${#whls[@]}" >&2; exit 1; }
whl="${whls[0]}"
# maturin's own audit refuses symbols newer than the policy; the name shows the result.
case "$whl" in
  *-cp39-abi3-manylinux_2_28_x86_64.whl) ;;
  *) echo "python/ci.sh: $whl is not tagged cp39-abi3-manylinux_2_28_x86_64" >&2; exit 1 ;;
esac
echo "python/ci.sh: artifact $whl ($(stat -c %s "$whl") bytes, sha256 $(sha256sum "$whl" | cut -d' ' -f1)) after $((SECONDS - t0))s"

# Fresh venv with only the wheel, numpy and pytest; run from a scratch
# directory (neither the root nor python/ is on sys.path there).
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
tvenv="$scratch/venv"
"$py" -m venv "$tvenv"
"$tvenv/bin/python" "${pipq[@]}" numpy==2.4.6 pytest==9.2.0 "$whl"
cd "$scratch"
"$tvenv/bin/python" - "$tvenv" <<'EOF'
import os, sys
import convgrad_torch
venv = os.path.realpath(sys.argv[1])
where = os.path.realpath(convgrad_torch.__file__)
if not where.startswith(venv + os.sep):
    sys.exit(f"convgrad_torch imported from {where}, not from the installed wheel in {venv}")
# The package imports without torch.
if "torch" in sys.modules:
    sys.exit("import convgrad_torch imported torch")
archs = convgrad_torch.built_archs()
want = ["gfx1100", "gfx1200", "gfx1201", "gfx90a", "gfx942", "gfx950", "sm_80", "sm_90"]
if sorted(archs) != want:
    sys.exit(f"the wheel embeds {archs}, expected {want} (target/kernels holds fewer? "
             "run `cargo xtask build-kernels` or remove target/kernels to use the bundle host/kernels)")
print("convgrad_torch", where, archs)
EOF
"$tvenv/bin/python" -m pytest -q -p no:cacheprovider \
  "$root/python/tests/test_cpu.py" "$root/python/tests/test_find_cache.py"
echo "python/ci.sh: done in $((SECONDS - t0))s; wheel kept at $whl"
