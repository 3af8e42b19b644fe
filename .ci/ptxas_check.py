#!/usr/bin/env python3
"""NVIDIA's own assembler on convgrad's NVIDIA code objects (issue #44).

The NVIDIA kernels ship as PTX that the driver JIT-compiles at load time, so
nothing on a machine without CUDA says whether they assemble, spill registers
or use the tensor memory accelerator. This check runs ptxas and nvdisasm of
CUDA 13.5 (PyPI wheels `nvidia-cuda-nvcc` and `nvidia-cuda-nvdisasm`,
downloaded once into a cache folder; no GPU needed) on
`target/kernels/sm_{80,90}/convgrad.ptx` and fails when

- ptxas rejects a module (the driver's JIT would too);
- a kernel spills registers and is not in `.ci/ptxas_spills.txt`, or spills
  more load bytes than recorded there (the list is the known spills, each to
  be fixed; a kernel that stops spilling is reported so it can be removed);
- a TMA kernel (`*_tma*`) has no `UTMALDG` (a tensor-memory copy) in its SASS.

Usage: .ci/ptxas_check.py [KERNEL_DIR] (default target/kernels). Prints one
line per kernel (registers, spill bytes) and the verdicts.
"""
import pathlib
import re
import subprocess
import sys
import tempfile
import venv
import zipfile

ROOT = pathlib.Path(__file__).resolve().parent.parent
VERSION = "13.5.37"
TOOLS = ROOT / "target" / "cuda-tools" / VERSION
ARCHS = {"sm_80": "sm_80", "sm_90": "sm_90a"}  # folder -> ptxas -arch (wgmma needs sm_90a)


def tools():
    """ptxas and nvdisasm, downloaded into TOOLS on first use."""
    bin_dir = TOOLS / "nvidia" / "cu13" / "bin"
    ptxas, nvdisasm = bin_dir / "ptxas", bin_dir / "nvdisasm"
    if not (ptxas.is_file() and nvdisasm.is_file()):
        env = TOOLS / "venv"
        venv.create(env, with_pip=True)
        wheels = TOOLS / "wheels"
        subprocess.run([env / "bin" / "python", "-m", "pip", "download", "-q", "--disable-pip-version-check", "--no-deps",
                        f"nvidia-cuda-nvcc=={VERSION}", f"nvidia-cuda-nvdisasm=={VERSION}", "-d", wheels], check=True)
        for w in sorted(wheels.glob("*.whl")):
            zipfile.ZipFile(w).extractall(TOOLS)
        for b in (ptxas, nvdisasm):
            b.chmod(0o755)
    return ptxas, nvdisasm


def parse_ptxas(text):
    """Per function: (registers, spill store bytes, spill load bytes)."""
    out, name = {}, None
    for line in text.splitlines():
        m = re.search(r"Function properties for (\S+)", line)
        if m:
            name = m.group(1)
            out.setdefault(name, [0, 0, 0])
            continue
        m = re.search(r"(\d+) bytes spill stores, (\d+) bytes spill loads", line)
        if m and name:
            out[name][1:] = [int(m.group(1)), int(m.group(2))]
        m = re.search(r"Compiling entry function '([^']+)'", line)
        if m:
            name = m.group(1)
        m = re.search(r"Used (\d+) registers", line)
        if m and name:
            out.setdefault(name, [0, 0, 0])[0] = int(m.group(1))
    return out


def sass_functions(text):
    """SASS per function name from `nvdisasm` output."""
    funcs, name = {}, None
    for line in text.splitlines():
        m = re.match(r"\s*\.text\.(\S+):", line)
        if m:
            name = m.group(1)
            funcs[name] = []
        elif name:
            funcs[name].append(line)
    return {k: "\n".join(v) for k, v in funcs.items()}


def main():
    kdir = pathlib.Path(sys.argv[1]) if len(sys.argv) > 1 else ROOT / "target" / "kernels"
    allowed = {}
    for line in (ROOT / ".ci" / "ptxas_spills.txt").read_text().splitlines():
        line = line.split("#", 1)[0].split()
        if line:
            allowed[(line[0], line[1])] = int(line[2])
    ptxas, nvdisasm = tools()
    problems, seen = [], set()
    for folder, arch in ARCHS.items():
        ptx = kdir / folder / "convgrad.ptx"
        if not ptx.is_file():
            problems.append(f"{ptx}: missing (run cargo xtask build-kernels)")
            continue
        entries = set(re.findall(r"^\.visible \.entry (\w+)\(", ptx.read_text(), re.M))
        with tempfile.TemporaryDirectory() as tmp:
            cubin = pathlib.Path(tmp) / "k.cubin"
            r = subprocess.run([ptxas, f"-arch={arch}", "-v", ptx, "-o", cubin], capture_output=True, text=True)
            if r.returncode != 0:
                problems.append(f"{folder}: ptxas {VERSION} rejected the module:\n{r.stderr[-4000:]}")
                continue
            stats = parse_ptxas(r.stdout + r.stderr)
            sass = sass_functions(subprocess.run([nvdisasm, "-c", cubin], capture_output=True, text=True, check=True).stdout)
        for k in sorted(entries):
            regs, st, ld = stats.get(k, [0, 0, 0])
            print(f"{folder} {k}: {regs} registers, spills {st}/{ld} B (stores/loads)")
            key = (folder, k)
            seen.add(key)
            if (st or ld) and key not in allowed:
                problems.append(f"{folder} {k}: spills {st}/{ld} B and is not in .ci/ptxas_spills.txt")
            elif key in allowed and ld > allowed[key]:
                problems.append(f"{folder} {k}: spill loads {ld} B, more than the {allowed[key]} recorded")
            elif key in allowed and not (st or ld):
                print(f"  note: {folder} {k} no longer spills: remove it from .ci/ptxas_spills.txt")
            if "_tma" in k and "UTMALDG" not in sass.get(k, ""):
                problems.append(f"{folder} {k}: a TMA kernel without UTMALDG in its SASS")
        print(f"{folder}: {len(entries)} kernels assembled by ptxas {VERSION} ({arch})")
    for key in sorted(set(allowed) - seen):
        problems.append(f"{key[0]} {key[1]}: in .ci/ptxas_spills.txt but not built")
    if problems:
        print("ptxas check FAILED:\n  " + "\n  ".join(problems))
        return 1
    print("ptxas check: every NVIDIA kernel assembles; no spills beyond the recorded ones; TMA kernels copy with UTMALDG")
    return 0


if __name__ == "__main__":
    sys.exit(main())
