"""The BF16 ladder's registry, bench declaration and shape rules agree with the sources (CPU only)."""
from __future__ import annotations

import re
import subprocess
import sys

import pytest
from gpufolio.api import Unsupported
from gpufolio_projects.gemm_ladder import ladder
from gpufolio_projects.gemm_ladder.bf16 import bench, registry

KERNELS = registry.KERNEL_DIR


def test_rungs_are_numbered_one_to_n_with_one_file_each():
    numbers = [r.number for r in registry.RUNGS]
    assert numbers == list(range(1, len(numbers) + 1))
    assert len(registry.RUNGS) >= 6
    for r in registry.RUNGS:
        assert (KERNELS / r.file).is_file(), r.file
    on_disk = sorted(p.name for p in KERNELS.glob("[0-9][0-9]_*.cu"))
    assert on_disk == sorted(r.file for r in registry.RUNGS), "a rung file is missing from the registry"


def test_every_rung_defines_and_binds_its_launcher():
    bindings = (KERNELS / registry.BINDINGS).read_text()
    for r in registry.RUNGS:
        src = (KERNELS / r.file).read_text()
        n = f"{r.number:02d}"
        assert f"BF16_LAUNCHER(bf16_rung{n}_launch)" in src, r.file
        assert f"DECLARE({n})" in bindings and f"BIND({n})" in bindings, n
        assert r.binding == f"rung{n}"
    # nothing bound that the registry does not know
    bound = set(re.findall(r"^\s*BIND\((\d\d)\)", bindings, re.M))
    assert bound == {f"{r.number:02d}" for r in registry.RUNGS}


def test_sources_are_relative_to_gemm_ladder_and_exist():
    root = registry.HERE.parent
    for s in registry.sources():
        assert (root / s).is_file(), s


def test_wgmma_rungs_use_wgmma_and_mma_sync_rungs_do_not():
    for r in registry.RUNGS:
        text = (KERNELS / r.file).read_text()
        if '#include "persistent.cuh"' in text:  # rungs 06 on instantiate the shared persistent kernel
            text += (KERNELS / "persistent.cuh").read_text()
        assert ("wgmma_m64n" in text) == r.uses_wgmma, r.name
        if not r.needs_sm90a:
            assert "mma.sync" in (KERNELS / "mma_sync_tile.cuh").read_text()


def test_bench_variants_follow_the_registry():
    names = [v.name for v in bench.BF16_BENCH.variants]
    assert names[0] == "cublas" and bench.BF16_BENCH.variant("cublas").role == "baseline"
    assert names[1:] == [r.name for r in registry.RUNGS]
    assert bench.BF16_BENCH.dry_run_supported is False
    assert bench.BF16_BENCH.headline_params == {"M": 8192, "N": 8192, "K": 8192}
    assert bench.BENCHES == [bench.BF16_BENCH]


def test_configs_cover_squares_and_llm_shapes_and_are_flat():
    full = bench.configs("full")
    shapes = {(c["M"], c["N"], c["K"]) for c in full}
    assert {(s, s, s) for s in (512, 1024, 2048, 4096, 8192)} <= shapes
    assert {(8192, 28672, 4096), (8192, 4096, 14336), (16, 4096, 4096)} <= shapes
    assert bench.configs("dry") == []
    assert (8192, 8192, 8192) in {(c["M"], c["N"], c["K"]) for c in bench.configs("quick")}
    for c in full + bench.configs("quick"):
        assert all(isinstance(v, (int, str)) for v in c.values())
        registry.check_shape(c["M"], c["N"], c["K"])  # every timed config is one the rungs accept


@pytest.mark.parametrize("shape", [(1, 8, 8), (1000, 1000, 1000), (16, 4096, 4096), (4097, 8, 72), (127, 264, 8)])
def test_check_shape_accepts(shape):
    registry.check_shape(*shape)


@pytest.mark.parametrize("shape,why", [((0, 8, 8), "positive"), ((8, 8, 12), "K % 8"), ((8, 12, 8), "N % 8"),
                                       ((8, 8, -8), "positive"), ((2**20, 8, 2**12), "2^31")])
def test_check_shape_refuses_with_unsupported(shape, why):
    with pytest.raises(Unsupported, match=re.escape(why)):
        registry.check_shape(*shape)


def test_case_refuses_bad_shapes_before_touching_torch_or_cuda():
    with pytest.raises(Unsupported):
        bench.case("05_warp_specialized", {"M": 64, "N": 64, "K": 100, "dtype": "bfloat16"}, "cpu")
    with pytest.raises(Unsupported):
        bench.case("cublas", {"M": 64, "N": 64, "K": 64, "dtype": "float16"}, "cpu")


def test_tolerance_scales_with_sqrt_k_and_catches_one_lost_k_slice():
    t1, t2 = ladder.tolerance_for_k(1024, "bfloat16"), ladder.tolerance_for_k(4096, "bfloat16")
    assert t2.atol == pytest.approx(2 * t1.atol) and t1.rtol == t2.rtol == 2.0**-8
    for K in (512, 4096, 8192, 14336):
        # a lost 16-wide K slice moves an output by ~sqrt(16) = 4 (inputs ~ N(0,1)): must exceed the budget
        assert ladder.tolerance_for_k(K, "bfloat16").atol < 4 / 4


def test_device_reason_without_a_gpu_says_why():
    torch = pytest.importorskip("torch")
    if torch.cuda.is_available():
        pytest.skip("has a GPU")
    for r in registry.RUNGS:
        assert registry.device_reason(r) == "no CUDA GPU"


def test_bench_and_registry_import_without_torch():
    code = ("import sys; sys.modules['torch'] = None\n"
            "from gpufolio_projects.gemm_ladder.bf16 import bench, registry\n"
            "assert len(bench.BENCHES) == 1\n")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_registry_cli_lists_rung_names_for_the_lab_stages():
    out = subprocess.run([sys.executable, "-m", "gpufolio_projects.gemm_ladder.bf16.registry", "wgmma_ids"],
                         check=True, capture_output=True, text=True).stdout.split()
    assert out == [r.name for r in registry.RUNGS if r.uses_wgmma]
