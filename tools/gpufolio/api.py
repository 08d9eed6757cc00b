"""The bench interface: what a project declares, and all it declares.

A project's ``bench.py`` exposes ``BENCHES: list[Bench]``. The harness (``gpufolio.runner`` and
``gpufolio.worker``) does everything else: isolation, fresh inputs, poisoning, the correctness gate before
and after timing, timing, stamping and writing records. A project never times or checks by itself.

    Bench            one benchmark name of a project ("sgemm"), its metric, configs and variants
      .variants      Variant(name, role) — candidates and the baselines they are compared with
      .configs(mode) list of params dicts (JSON-able: shapes, dtype, causal, ...) for mode full|quick|dry
      .case(variant, params, device) -> Case     builds what the harness runs for one (variant, params)

    Case             fn(inputs) -> outputs; make_inputs(gen) -> inputs; reference(inputs) -> outputs;
                     tolerance; work (flops / bytes / tokens) from which the metric is derived.

Shapes in ``params`` are the truth the site shows: put every size that matters in there, as a FLAT dict of
str/int/float/bool values (``{"M": 4096, "N": 4096, "K": 4096, "dtype": "float32"}``), so that writeup markers
can name them.
"""
from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any, Literal, Union

Mode = Literal["full", "quick", "dry"]
Role = Literal["candidate", "baseline"]


@dataclass(frozen=True)
class Metric:
    """The headline metric of a bench. ``derive`` says how the harness computes it from Work and time."""

    name: str
    unit: str
    higher_is_better: bool = True
    # One of: "flops" (work.flops / s / 1e12), "bytes" (work.bytes / s / 1e9), "tokens" (work.tokens / s),
    # "time" (median ms).
    derive: Literal["flops", "bytes", "tokens", "time"] = "flops"

    def value(self, work: Work, median_s: float) -> float:
        if self.derive == "time":
            return median_s * 1e3
        amount = {"flops": work.flops, "bytes": work.bytes, "tokens": work.tokens}[self.derive]
        if amount is None:
            raise ValueError(f"metric {self.name} needs work.{self.derive}, which the case did not give")
        scale = {"flops": 1e12, "bytes": 1e9, "tokens": 1.0}[self.derive]
        return amount / median_s / scale


TFLOPS = Metric("tflops", "TFLOP/s", True, "flops")
GBPS = Metric("gbps", "GB/s", True, "bytes")
TOKENS_PER_S = Metric("tok_s", "tok/s", True, "tokens")
TIME_MS = Metric("time", "ms", False, "time")


@dataclass(frozen=True)
class Work:
    """What one call of ``Case.fn`` does, counted by hand next to its formula.

    flops:  floating-point operations (2·M·N·K for a GEMM).
    bytes:  the fewest bytes it must move through device memory (each input read once, each output
            written once) — write the I/O out where you compute it.
    tokens: tokens produced or processed, for throughput metrics.
    """

    flops: float | None = None
    bytes: float | None = None
    tokens: float | None = None


@dataclass(frozen=True)
class Tolerance:
    """Elementwise |out - ref| <= atol + rtol·|ref|, with ref in higher precision."""

    atol: float
    rtol: float


@dataclass(frozen=True)
class FlashRule:
    """FlashAttention's rule: max|out - ref| <= factor · max|lowp - ref| + slack, per output tensor.

    ``lowp`` is PyTorch's own implementation in the candidate's dtype (``Case.lowp_reference``)."""

    factor: float = 2.0
    slack: float = 1e-5


@dataclass(frozen=True)
class Timing:
    """How the harness times ``Case.fn``.

    events: CUDA events around each rep, L2 flushed between reps (kernels).
    wall:   host clock with device synchronisation (end-to-end work: a train step, a generate call).
    """

    method: Literal["events", "wall"] = "events"
    warmup_ms: float = 100.0
    rep_ms: float = 500.0
    min_reps: int = 10
    max_reps: int = 1000
    warmup_min: int = 3
    flush_l2: bool = True
    cuda_graph: bool = False


@dataclass(frozen=True)
class CheckResult:
    """What a custom check (``Case.check``) returns for end-to-end work with no elementwise reference."""

    passed: bool
    reference: str
    detail: Mapping[str, Any] = field(default_factory=dict)


Outputs = Any  # a tensor, a tuple/list of tensors, or whatever ``check`` understands
Inputs = dict


@dataclass
class Case:
    """Everything the harness needs for one (variant, params).

    fn:             the call under test; reads ``inputs`` and returns its outputs (tensor or tuple).
                    It may write into input entries named in ``outputs_in_inputs``: the harness fills
                    those with NaN before every checked call, so an unwritten element fails. Every other
                    input must be bit-identical after the call, unless named in ``mutable_inputs``.
    make_inputs:    fresh random inputs (never zeros) from the generator the harness passes; called
                    for every check, for the timed loop, and before every timed repetition, whose
                    values are copied into the timed tensors in place (same storage, new values), so a
                    call that replays a stored result is caught on the repetition the harness checks.
                    An entry whose shapes, dtypes or non-tensor values changed is replaced whole
                    instead (a CUDA-graph case refuses that: its captured storage must stay).
    mutable_inputs: inputs the call legitimately updates as state (a library that overwrites its
                    inputs with gradients, a cache): neither poisoned nor required to be unchanged.
                    Say in the bench why each one is there.
    reference:      higher-precision outputs for the same inputs (fp64/fp32). Used with ``tolerance``.
    tolerance:      Tolerance, a dict {output index: Tolerance}, FlashRule, or None when ``check`` is given.
    lowp_reference: PyTorch's own same-dtype result (needed by FlashRule).
    check:          custom check(inputs, outputs) -> CheckResult, for work with no elementwise reference.
    work:           Work for the metric.
    extra_metrics:  called after timing with the median seconds; returns
                    {name: (value, unit, higher_is_better)} such as MFU or peak memory.
    """

    fn: Callable[[Inputs], Outputs]
    make_inputs: Callable[[Any], Inputs]
    work: Work
    reference: Callable[[Inputs], Outputs] | None = None
    tolerance: Union[Tolerance, Mapping[int, Tolerance], FlashRule, None] = None
    lowp_reference: Callable[[Inputs], Outputs] | None = None
    check: Callable[[Inputs, Outputs], CheckResult] | None = None
    outputs_in_inputs: Sequence[str] = ()
    mutable_inputs: Sequence[str] = ()
    timing: Timing = field(default_factory=Timing)
    extra_metrics: Callable[[float], Mapping[str, tuple]] | None = None
    reference_name: str = "fp64"

    def __post_init__(self) -> None:
        if self.check is None and (self.reference is None or self.tolerance is None):
            raise ValueError("a Case needs either check=..., or reference=... with tolerance=...")
        if isinstance(self.tolerance, FlashRule) and self.lowp_reference is None:
            raise ValueError("FlashRule needs lowp_reference (PyTorch's own same-dtype result)")
        both = set(self.outputs_in_inputs) & set(self.mutable_inputs)
        if both:
            raise ValueError(f"inputs {sorted(both)} are named both as outputs and as mutable state")


class Unsupported(Exception):
    """Raised by ``Bench.case`` (or a launcher) for a shape/dtype/device a variant refuses before launch.

    Recorded with status ``skipped`` and the message; never an error, never a number."""


def import_missing(module: str, package: str | None = None) -> str | None:
    """``Variant.available`` for a variant that needs ``module`` (a peer library, the patched code of a repro):
    None if it imports, else why not. Any import failure counts as missing (a library can fail loading its own
    native parts): the variant is skipped with the reason, never an error."""
    try:
        __import__(module)
    except Exception as e:  # noqa: BLE001 - ImportError, or the library failing to load its native parts
        return f"{package or module} not importable ({type(e).__name__}: {e})"[:200]
    return None


def peer_missing(module: str, package: str, min_sm_major: int = 9) -> str | None:
    """``Variant.available`` for a peer library whose kernels need a recent GPU (the CuTe DSL ones:
    FlashAttention-4, QuACK): None if ``module`` imports (``import_missing``) and the GPU is at least
    sm_<min_sm_major>0, else why not."""
    missing = import_missing(module, package)
    if missing:
        return missing
    import torch

    if not torch.cuda.is_available() or torch.cuda.get_device_capability()[0] < min_sm_major:
        return f"{package}'s kernels need an sm_{min_sm_major}0+ GPU"
    return None


@dataclass(frozen=True)
class Variant:
    """A candidate or a baseline. ``available`` returns None, or the reason it cannot run here
    (a missing package, no sm_90a) — checked in the worker, recorded as ``skipped``."""

    name: str
    role: Role = "candidate"
    label: str = ""
    available: Callable[[], str | None] | None = None


@dataclass
class Bench:
    """One benchmark of a project. ``case`` builds the work for one (variant, params)."""

    project: str
    name: str
    metric: Metric
    variants: Sequence[Variant]
    configs: Callable[[Mode], list[dict]]
    case: Callable[[str, dict, Any], Case]
    description: str = ""
    # The config the home page and the project's headline quote (a subset of a config's params), the baseline
    # the headline ratio is taken against (default: the first baseline variant), and the param that the
    # charts put on the x axis.
    headline_params: Mapping[str, Any] = field(default_factory=dict)
    headline_baseline: str | None = None
    x_param: str | None = None
    # Whether the harness should run this bench under ``--dry-run`` (CPU, tiny sizes).
    dry_run_supported: bool = True

    def __post_init__(self) -> None:
        names = [v.name for v in self.variants]
        if len(set(names)) != len(names):
            raise ValueError(f"{self.project}/{self.name}: duplicate variant names {names}")
        baselines = [v.name for v in self.variants if v.role == "baseline"]
        if not baselines:
            raise ValueError(f"{self.project}/{self.name}: a bench needs at least one baseline variant")
        if self.headline_baseline is None:
            self.headline_baseline = baselines[0]
        elif self.headline_baseline not in baselines:
            raise ValueError(f"{self.project}/{self.name}: headline_baseline {self.headline_baseline!r} is not a baseline")

    def variant(self, name: str) -> Variant:
        for v in self.variants:
            if v.name == name:
                return v
        raise KeyError(f"{self.project}/{self.name} has no variant {name!r}; it has {[v.name for v in self.variants]}")
