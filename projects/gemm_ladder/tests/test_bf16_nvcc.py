"""Each BF16 rung compiles for sm_90a without spills, and its SASS uses the tensor-core path it claims:
HGMMA (wgmma) for rungs 03+, HMMA (mma.sync) for 01-02. Skipped without nvcc / cuobjdump."""
from __future__ import annotations

import re
import shutil
import subprocess
from pathlib import Path

import pytest
from gpufolio_projects.gemm_ladder.bf16 import registry
from gpufolio_projects.gemm_ladder.lab import bf16_probe

NVCC = shutil.which("nvcc")


def find_cuobjdump() -> str | None:
    """cuobjdump from PATH, else the copy Triton's wheel ships."""
    found = shutil.which("cuobjdump")
    if found:
        return found
    try:
        import triton
    except Exception:
        return None
    p = Path(triton.__file__).parent / "backends" / "nvidia" / "bin" / "cuobjdump"
    return str(p) if p.is_file() else None


@pytest.fixture(scope="module")
def objects(tmp_path_factory):
    """rung id -> (object path, ptxas report); compiled once per session."""
    if not NVCC:
        pytest.skip("nvcc not installed")
    out = tmp_path_factory.mktemp("bf16_obj")
    built = {}
    for r in registry.RUNGS:
        obj = out / f"{r.name}.o"
        proc = subprocess.run(
            [NVCC, "-c", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-Xptxas", "-v",
             str(registry.KERNEL_DIR / r.file), "-o", str(obj)],
            capture_output=True, text=True, timeout=600)
        assert proc.returncode == 0, proc.stderr[-3000:]
        built[r.name] = (obj, proc.stderr)
    return built


@pytest.mark.slow
@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_compiles_for_sm90a_without_spills(rung, objects):
    report = objects[rung.name][1]
    assert "sm_90a" in report
    assert not re.search(r"[1-9]\d* bytes spill", report), report
    assert "C7508" not in report and "serialized" not in report, report  # setmaxnreg ignored / wgmma serialised


@pytest.mark.slow
@pytest.mark.parametrize("rung", registry.RUNGS, ids=lambda r: r.name)
def test_sass_uses_the_claimed_tensor_core_instruction(rung, objects):
    tool = find_cuobjdump()
    if not tool:
        pytest.skip("no cuobjdump (install triton or the CUDA toolkit's binutils)")
    sass = subprocess.run([tool, "-sass", str(objects[rung.name][0])], capture_output=True, text=True,
                          check=True).stdout
    hgmma, hmma = len(re.findall(r"\bHGMMA\.", sass)), len(re.findall(r"\bHMMA\.", sass))
    if rung.uses_wgmma:
        assert hgmma >= 4 and hmma == 0, (hgmma, hmma)
        assert "UTMALDG" in sass  # loads through the TMA engine
    else:
        assert hmma >= 64 and hgmma == 0, (hgmma, hmma)
    if rung.number >= 5:
        assert "USETMAXREG" in sass
    if "/*TMA_STORE=*/true" in (registry.KERNEL_DIR / rung.file).read_text():  # the smem/TMA-store epilogue
        assert "UTMASTG" in sass


@pytest.mark.slow
@pytest.mark.parametrize("probe", [s for s in bf16_probe.SOURCES if s.endswith(".cu")])
def test_probe_variants_compile_without_spills(probe, tmp_path):
    """The probe sweep's kernels (not rungs, built into the lab's own extension) compile without spills."""
    if not NVCC:
        pytest.skip("nvcc not installed")
    proc = subprocess.run(
        [NVCC, "-c", "-gencode=arch=compute_90a,code=sm_90a", "-O3", "-std=c++17", "-Xptxas", "-v",
         str(registry.HERE.parent / probe), "-o", str(tmp_path / "probe.o")],
        capture_output=True, text=True, timeout=600)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert not re.search(r"[1-9]\d* bytes spill", proc.stderr) and "serialized" not in proc.stderr
