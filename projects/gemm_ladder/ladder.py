"""The convention both ladders follow (SGEMM in sgemm/, BF16 in bf16/): one Rung type, one name scheme, one
tolerance rule, one launch path. Importable without torch.

A rung is named ``NN_technique`` ("07_bank_conflicts", "05_warp_specialized"): its source file's stem, its
variant name in records, and, by its number, its binding in the extension (``rungNN``). Every binding takes
(A, B, C), writes C and returns "" or the reason it did not launch: a C++ exception thrown from an extension
crashed the Python process on the GPU box where a returned string cannot (sgemm/bindings.cpp says more).
"""
from __future__ import annotations

import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpufolio.api import TFLOPS, Bench
from gpufolio.check import dot_tolerance

NAME_RE = re.compile(r"\d\d_[a-z0-9_]+")


@dataclass(frozen=True)
class Rung:
    name: str  # "NN_technique": file stem, variant name in records
    label: str  # what the site shows

    def __post_init__(self) -> None:
        if not NAME_RE.fullmatch(self.name):
            raise ValueError(f"rung name {self.name!r} must be NN_technique")

    @property
    def number(self) -> int:
        return int(self.name[:2])

    @property
    def technique(self) -> str:
        return self.name[3:]

    @property
    def file(self) -> str:
        return f"{self.name}.cu"

    @property
    def binding(self) -> str:
        """The rung's function in its ladder's extension."""
        return f"rung{self.number:02d}"


def by_name(rungs: Iterable[Rung], name: str, ladder: str) -> Rung:
    rungs = tuple(rungs)
    for rung in rungs:
        if rung.name == name:
            return rung
    raise KeyError(f"no {ladder} rung {name!r}; rungs are {[r.name for r in rungs]}")


def launch(ext, rung: Rung, A, B, C) -> None:
    """C = rung(A, B) through the extension ``ext``; RuntimeError with the binding's reason if it refused or the
    launch failed. No Python checks here: the benches call this inside the timed loop (ops.gemm checks first)."""
    why = getattr(ext, rung.binding)(A, B, C)
    if why:
        raise RuntimeError(why)


def timed_call(ext, rung: Rung):
    """What a bench times for a rung: ``launch`` into the case's own C (inputs A, B, C), returning C."""
    def fn(inputs: dict):
        launch(ext, rung, inputs["A"], inputs["B"], inputs["C"])
        return inputs["C"]

    return fn


CUBLAS = "cublas"  # both ladders' baseline variant: torch.matmul, which calls cuBLAS


def bench(name: str, **declared) -> Bench:
    """A ladder's Bench: TFLOP/s against cuBLAS across M, in the gemm_ladder project; CUDA kernels only, so no
    dry run. ``declared`` is what differs between the ladders (variants, configs, case, description, headline)."""
    return Bench(project="gemm_ladder", name=name, metric=TFLOPS, headline_baseline=CUBLAS, x_param="M",
                 dry_run_supported=False, **declared)


# The K-scaled GEMM tolerance lives with the harness's table (its derivation is there).
tolerance_for_k = dot_tolerance
