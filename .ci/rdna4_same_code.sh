#!/usr/bin/env bash
# gfx1200 (RX 9060) and gfx1201 (RX 9070) are the same GFX12 ISA: their code
# objects from `cargo xtask build-kernels --arch gfx1200,gfx1201` must hold the
# same machine code. Compares the `.text` sections byte for byte (the ELF
# headers and notes name the processor and so differ). Exits 1 if they differ.
set -euo pipefail
cd "$(dirname "$0")/.."
bin="$(rustc --print sysroot)/lib/rustlib/x86_64-unknown-linux-gnu/bin"
dir="${1:-target/kernels}"
tmp="$(mktemp -d)"
trap 'rm -rf "$tmp"' EXIT
for a in gfx1200 gfx1201; do
  obj="$dir/$a/convgrad.hsaco"
  [ -f "$obj" ] || { echo "missing $obj (run cargo xtask build-kernels --arch gfx1200,gfx1201)" >&2; exit 2; }
  "$bin/llvm-objcopy" --dump-section ".text=$tmp/$a.text" "$obj" "$tmp/$a.copy"
done
if cmp -s "$tmp/gfx1200.text" "$tmp/gfx1201.text"; then
  echo "gfx1200 and gfx1201 .text identical ($(stat -c %s "$tmp/gfx1200.text") bytes)"
else
  echo "gfx1200 and gfx1201 .text differ:" >&2
  diff <("$bin/llvm-objdump" -d --mcpu=gfx1200 "$dir/gfx1200/convgrad.hsaco" | tail -n +4) \
       <("$bin/llvm-objdump" -d --mcpu=gfx1201 "$dir/gfx1201/convgrad.hsaco" | tail -n +4) | head -40 >&2
  exit 1
fi
