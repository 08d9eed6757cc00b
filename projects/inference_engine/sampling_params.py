"""What a request asks of the sampler and when it stops; every field checked for type and range on creation."""
from __future__ import annotations

import dataclasses
import math
import numbers
from dataclasses import dataclass
from typing import Any, Optional

from .errors import RequestTypeError, RequestValueError

MAX_SEED = 2**63 - 1  # seeds live in an int64 device buffer


def _describe(v: Any) -> str:
    return f"{type(v).__name__} {v!r}"


def _number(name: str, v: Any) -> float:
    # bool is an int subclass, and "0.7" is what a JSON client sends by mistake: both are refused by name
    if isinstance(v, bool) or not isinstance(v, numbers.Real):
        raise RequestTypeError(name, f"must be a number, got {_describe(v)}")
    if not math.isfinite(v):
        raise RequestValueError(name, f"must be finite, got {v}")
    return float(v)


def _integer(name: str, v: Any) -> int:
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise RequestTypeError(name, f"must be an int, got {_describe(v)}")
    return int(v)


@dataclass(frozen=True)
class SamplingParams:
    temperature: float = 1.0  # 0: greedy
    top_k: Optional[int] = None  # None: the whole vocabulary
    top_p: float = 1.0
    max_tokens: int = 64  # generation also stops at max_model_len
    ignore_eos: bool = False  # benchmarks force exact output lengths
    # Counter-based sampling: the noise for a token depends only on (seed, its position, the token id), so a
    # seeded request draws the same tokens whatever batch it shares. None: the engine draws a seed per request.
    seed: Optional[int] = None

    def __post_init__(self) -> None:
        set_ = lambda name, v: object.__setattr__(self, name, v)  # noqa: E731 — frozen: normalise in place
        set_("temperature", _number("temperature", self.temperature))
        if self.temperature < 0:
            raise RequestValueError("temperature", f"must be >= 0, got {self.temperature}")
        if self.top_k is not None:
            set_("top_k", _integer("top_k", self.top_k))
            if self.top_k < 1:
                raise RequestValueError("top_k", f"must be None or >= 1, got {self.top_k}")
        set_("top_p", _number("top_p", self.top_p))
        if not 0.0 < self.top_p <= 1.0:
            raise RequestValueError("top_p", f"must be in (0, 1], got {self.top_p}")
        set_("max_tokens", _integer("max_tokens", self.max_tokens))
        if self.max_tokens < 1:
            raise RequestValueError("max_tokens", f"must be >= 1, got {self.max_tokens}")
        if not isinstance(self.ignore_eos, bool):
            raise RequestTypeError("ignore_eos", f"must be a bool, got {_describe(self.ignore_eos)}")
        if self.seed is not None:
            set_("seed", _integer("seed", self.seed))
            if not 0 <= self.seed <= MAX_SEED:
                raise RequestValueError("seed", f"must be in [0, 2**63), got {self.seed}")

    @property
    def greedy(self) -> bool:
        return self.temperature == 0.0

    @classmethod
    def coerce(cls, params: Any) -> "SamplingParams":
        """A SamplingParams from itself, a dict of its fields, or None (the defaults)."""
        if params is None:
            return cls()
        if isinstance(params, cls):
            return params
        if isinstance(params, dict):
            fields = {f.name for f in dataclasses.fields(cls)}
            unknown = sorted(str(k) for k in params if k not in fields)
            if unknown:
                raise RequestValueError(unknown[0], f"not a sampling parameter (known: {', '.join(sorted(fields))})")
            return cls(**params)
        raise RequestTypeError("params", f"expected SamplingParams, a dict of its fields or None, got "
                                         f"{type(params).__name__}")
