"""The convention both ladders follow (SGEMM in sgemm/, BF16 in bf16/): one Rung type, one name scheme, one
tolerance rule, one launch path. Importable without torch.

A rung is named ``NN_technique`` ("07_bank_conflicts", "05_warp_specialized"): its source file's stem, its
variant name in records, and, by its number, its binding in the extension (``rungNN``). Every binding takes
(A, B, C), writes C and returns "" or the reason it did not launch: a C++ exception thrown from an extension
crashed the Python process on the GPU box where a returned string cannot (sgemm/bindings.cpp says more).
"""
from __future__ import annotations

import math
import re
from collections.abc import Iterable
from dataclasses import dataclass

from gpufolio.api import Tolerance

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


# Unit roundoff (round to nearest) of each ladder's dtype.
U32 = 2.0**-24
U_BF16 = 2.0**-8  # bf16 keeps 8 significant bits: rounding moves a value by at most 2^-9 relative


def tolerance_for_k(K: int, dtype: str) -> Tolerance:
    """|C - ref| <= atol + rtol |ref| for C = A @ B with K-long dot products, inputs ~ N(0, 1), accumulated in
    fp32, against a reference one precision up (fp64 for float32, fp32 with TF32 off for bfloat16).

    float32: each output is a sum of K products; every fp32 FMA rounds the running sum S_i by at most U32 |S_i|,
    and with random signs these errors add like a random walk: std(err) ~ U32 sqrt(sum_i S_i^2). For
    unit-variance products |S_i| ~ sqrt(i), so sum_i S_i^2 ~ K^2 / 2 and std(err) ~ U32 K / sqrt(2) for a plain
    sequential loop (rung 01, the worst order; blocked sums are smaller).
    - atol = 8 U32 K: > 11 std of that worst order, enough for the maximum over 67M outputs (8192^2: a Gaussian
      maximum sits near 5.7 std). K = 4096: 2.0e-3 against |C| ~ 64.
    - rtol = 8 U32 sqrt(K): the same bound for larger-than-typical outputs (|C| = t sqrt(K) grows the partial
      sums by t).
    A structural bug (one 8-wide K slice dropped or doubled) moves an output by ~sqrt(8) = 2.8, over 1000x atol.

    bfloat16: the output's own rounding dominates.
    - rtol = 2^-8: rounding to bf16 moves a value by at most 2^-9 relative; 2^-8 leaves a factor 2 for the
      reference's own rounding.
    - atol = 2^-8 sqrt(K): entries of C are sums of K unit-variance products, so |C| ~ sqrt(K); this is the
      bf16 rounding of a typical output. It also covers the kernel's and the reference's different fp32
      summation orders, whose difference grows like U32 K (~1e-3 at K = 14336), far below atol. A structural
      bug (one 16-wide K slice lost or doubled) moves an output by ~sqrt(16) = 4 standard units, ten times
      atol even at K = 14336 (atol 0.47).
    """
    if dtype == "float32":
        return Tolerance(atol=8 * U32 * K, rtol=8 * U32 * math.sqrt(K))
    if dtype == "bfloat16":
        return Tolerance(atol=U_BF16 * math.sqrt(K), rtol=U_BF16)
    raise ValueError(f"no GEMM ladder tolerance for dtype {dtype!r} (float32, bfloat16)")
