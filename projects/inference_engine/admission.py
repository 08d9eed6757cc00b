"""Admission checks for a request's prompt, before anything of it is queued.

The engine takes token ids. A prompt is a non-empty list (or tuple) of ints in ``[0, vocab_size)``; a batch is a
list of such prompts. Lengths (against ``max_model_len`` and the KV pool) are the scheduler's to check
(``Scheduler.check_lengths``): it owns both numbers.
"""
from __future__ import annotations

import numbers
from typing import Any

from .errors import RequestTypeError, RequestValueError


def _is_tensor(x: Any) -> bool:
    return type(x).__module__.startswith(("torch", "numpy"))  # no torch import: the check is by name


def check_prompt(prompt: Any, vocab_size: int, param: str = "prompt") -> list[int]:
    """The prompt as a list of Python ints, or a RequestError naming ``param``."""
    if isinstance(prompt, str):
        raise RequestTypeError(param, "got a str; the engine takes token ids (a list of ints): tokenize first")
    if _is_tensor(prompt):
        raise RequestTypeError(param, f"got a {type(prompt).__name__}; pass a list of ints (x.tolist())")
    if not isinstance(prompt, (list, tuple)):
        raise RequestTypeError(param, f"must be a list of token ids, got {type(prompt).__name__}")
    if not prompt:
        raise RequestValueError(param, "is empty; a prompt needs at least one token")
    if not all(type(t) is int for t in prompt):  # the common case is one pass; this one names the culprit
        for i, t in enumerate(prompt):
            if isinstance(t, bool) or not isinstance(t, numbers.Integral):
                raise RequestTypeError(param, f"token {i} must be an int, got {type(t).__name__} {t!r}")
        prompt = [int(t) for t in prompt]  # numpy ints
    lo, hi = min(prompt), max(prompt)
    if lo < 0 or hi >= vocab_size:
        i, t = next((i, t) for i, t in enumerate(prompt) if not 0 <= t < vocab_size)
        raise RequestValueError(param, f"token {i} is {t}, outside the vocabulary [0, {vocab_size})")
    return list(prompt)


def check_batch(prompts: Any) -> list:
    """A batch must be a list of prompts; refuse the shapes that are one prompt, or no list at all."""
    if isinstance(prompts, str) or _is_tensor(prompts):
        raise RequestTypeError("prompts", f"got a {type(prompts).__name__}; pass a list of prompts, each a list "
                                          "of token ids")
    if not isinstance(prompts, (list, tuple)):
        raise RequestTypeError("prompts", f"must be a list of prompts, got {type(prompts).__name__}")
    if prompts and all(isinstance(t, numbers.Integral) for t in prompts):
        raise RequestTypeError("prompts", "got a flat list of ints, which is one prompt; pass a list of prompts, "
                                          f"e.g. [{list(prompts[:3])}]")
    return list(prompts)
