"""nvcc compiles the rungs for sm_90a without torch, and the tuned rungs neither spill nor use a stack."""
from __future__ import annotations

import re
import shutil
import subprocess

import pytest
from gpufolio_projects.gemm_ladder.sgemm import registry

PROJECT = registry.HERE.parent
# The naive rung and the top ones (kept to a couple of files: ~5 s each on a 2-core machine).
CHECKED = ("01_naive", "10_warptiling", "11_cp_async_pipeline")


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
@pytest.mark.parametrize("name", CHECKED)
def test_nvcc_compiles_for_sm90a_without_spills(name, tmp_path):
    rung = registry.by_name(name)
    out = subprocess.run(
        ["nvcc", "-c", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-Xptxas", "-v",
         str(registry.HERE / rung.file), "-o", str(tmp_path / "rung.o")],
        capture_output=True, text=True, timeout=120,
    )
    assert out.returncode == 0, out.stderr
    spills = re.findall(r"(\d+) bytes spill stores", out.stderr)
    assert spills and all(s == "0" for s in spills), out.stderr


@pytest.mark.slow
@pytest.mark.skipif(shutil.which("nvcc") is None, reason="nvcc not on PATH")
def test_split_k_host_arithmetic_matches_registry(tmp_path):
    """Build rung 12's host-side split choice into a tiny program (no GPU needed) and compare with Python."""
    shapes = [(4096, 4096, 4096), (128, 4096, 4096), (1, 4096, 4096), (200, 520, 1000), (257, 132, 20),
              (16, 128, 1 << 20), (2048, 4096, 4096), (512, 512, 8192)]
    main = tmp_path / "main.cu"
    main.write_text(
        '#include <cstdio>\n#include "launchers.h"\nint main() {\n'
        + "".join(f'  std::printf("%d\\n", sgemm_12_splits({m}, {n}, {k}, 132));\n' for m, n, k in shapes)
        + "}\n"
    )
    exe = tmp_path / "splits"
    out = subprocess.run(["nvcc", "-O1", "-std=c++17", "-gencode=arch=compute_90a,code=sm_90a",
                          f"-I{PROJECT / 'sgemm'}", str(main), str(PROJECT / "sgemm/12_split_k.cu"),
                          str(PROJECT / "sgemm/10_warptiling.cu"), "-o", str(exe)],
                         capture_output=True, text=True, timeout=180)
    assert out.returncode == 0, out.stderr
    got = [int(x) for x in subprocess.run([str(exe)], capture_output=True, text=True, check=True).stdout.split()]
    assert got == [registry.split_k_splits(*s) for s in shapes]
