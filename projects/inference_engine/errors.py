"""What the engine raises about a request, each naming the field at fault.

``RequestError.param`` is the field ("prompt", "max_tokens", ...): the HTTP server puts it in the OpenAI error
body's ``param``. Bad types are ``TypeError``s and bad values ``ValueError``s, so plain ``except ValueError``
code keeps working.
"""
from __future__ import annotations

from typing import Optional


class RequestError(Exception):
    """A request refused at admission; nothing of it was queued."""

    def __init__(self, param: str, message: str):
        super().__init__(f"{param}: {message}")
        self.param = param


class RequestTypeError(RequestError, TypeError):
    pass


class RequestValueError(RequestError, ValueError):
    pass


class StepError(RuntimeError):
    """The step a sequence ran in raised; the sequence was aborted and its blocks freed (``__cause__``: why)."""


class RequestsFailed(ValueError):
    """Some requests of one ``generate``/``stream`` call were rejected or failed; every other one completed.

    ``errors``: prompt index -> its RequestError or StepError. ``outputs``: the completion of each request
    (``None`` where it has an error); ``generate`` fills it, ``stream`` has yielded the tokens already."""

    def __init__(self, errors: dict[int, Exception], outputs: Optional[list] = None):
        shown = "; ".join(f"#{i} {e}" for i, e in list(errors.items())[:3])
        more = f" (and {len(errors) - 3} more)" if len(errors) > 3 else ""
        super().__init__(f"{len(errors)} request(s) failed: {shown}{more}")
        self.errors = errors
        self.outputs = outputs
