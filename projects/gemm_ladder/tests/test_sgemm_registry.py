"""The SGEMM registry agrees with the CUDA sources, the bindings and the bench (CPU only, no torch needed)."""
from __future__ import annotations

import re
import subprocess
import sys
from pathlib import Path

import pytest
from gpufolio.api import Unsupported
from gpufolio_projects.gemm_ladder.sgemm import bench, registry

SGEMM = registry.HERE
PROJECT = SGEMM.parent


def test_rungs_numbered_without_gaps_and_named_by_file():
    numbers = [r.number for r in registry.RUNGS]
    assert numbers == list(range(1, len(numbers) + 1)), "rungs are numbered without gaps"
    for rung in registry.RUNGS:
        assert (SGEMM / rung.file).is_file(), rung.file
        assert rung.label.startswith(f"{rung.number:02d} ")


def test_every_cu_file_is_a_rung_or_shared():
    rung_files = {Path(r.file).name for r in registry.RUNGS}
    on_disk = {p.name for p in SGEMM.glob("[0-9][0-9]_*.cu")}
    assert on_disk == rung_files


def test_each_launcher_is_defined_in_its_file_and_declared():
    header = (SGEMM / "launchers.h").read_text()
    for rung in registry.RUNGS:
        src = (SGEMM / rung.file).read_text()
        assert f"SGEMM_LAUNCHER({rung.launcher})" in src, f"{rung.file} does not define {rung.launcher}"
        assert f"SGEMM_LAUNCHER({rung.launcher});" in header


def test_bindings_match_registry():
    text = (SGEMM / "bindings.cpp").read_text()
    bound = re.findall(r"^\s*RUNG\((\d\d), (\w+), Shapes::(\w+)\);", text, flags=re.M)
    shapes = {"any": "kAny", "nk4": "kNK4"}
    assert bound == [(f"{r.number:02d}", r.launcher, shapes[r.shapes]) for r in registry.RUNGS]
    assert [f"rung{n}" for n, _, _ in bound] == [r.binding for r in registry.RUNGS]


def test_sources_are_listed_once_and_exist():
    srcs = registry.sources()
    assert len(set(srcs)) == len(srcs)
    for s in srcs:
        assert (PROJECT / s).is_file(), s


def test_bench_variants_are_the_rungs_plus_cublas():
    names = [v.name for v in bench.SGEMM_BENCH.variants]
    assert names == [r.name for r in registry.RUNGS] + ["cublas"]
    assert bench.SGEMM_BENCH.headline_baseline == "cublas"


def test_by_name_unknown_raises():
    with pytest.raises(KeyError):
        registry.by_name("99_nothing")


def test_modules_import_without_torch():
    code = (
        "import sys; sys.modules['torch'] = None\n"
        "import gpufolio_projects.gemm_ladder.bench as b\n"
        "import gpufolio_projects.gemm_ladder.sgemm.registry as r\n"
        "assert b.BENCHES[0].name == 'sgemm' and r.RUNGS\n"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


def test_refusals_are_unsupported_not_crashes():
    rung = registry.by_name("06_vectorize")
    with pytest.raises(Unsupported, match="multiples of 4"):
        rung.check_shape(4097, 4095, 33)
    with pytest.raises(Unsupported):
        rung.check_shape(0, 16, 16)
    registry.by_name("01_naive").check_shape(4097, 4095, 33)  # "any" rungs take ragged shapes
