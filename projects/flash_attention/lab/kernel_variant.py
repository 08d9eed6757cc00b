"""A kernel module with some of its JIT helpers swapped, so a change can be checked and timed in the lab before
it is made in ``kernels/``: an edit there changes the project's source digest and makes every record measured on
the kernel stale, whether or not the change is kept.

``rebound(module, name=replacement, ...)`` copies the module's namespace, puts the replacements in it, and
re-creates every function the module defines (JIT and plain Python alike) over the copy. The copy's kernel calls
the replacements, compiles under its own cache key, and is launched by the copy's own launcher; the module itself
is untouched. Tables (dicts and other values) are shared, not copied, so a probe's overrides of a module table
reach the variant as well.
"""
from __future__ import annotations

import inspect
import types


def _clone(fn: types.FunctionType, scope: dict) -> types.FunctionType:
    """``fn`` with ``scope`` as its globals: same code, defaults, closure and name. The source stays where it
    was, which is what a JIT function's ``inspect.getsource`` and cache key read."""
    new = types.FunctionType(fn.__code__, scope, fn.__name__, fn.__defaults__, fn.__closure__)
    new.__kwdefaults__ = fn.__kwdefaults__
    new.__qualname__, new.__doc__, new.__module__ = fn.__qualname__, fn.__doc__, fn.__module__
    new.__annotations__ = dict(fn.__annotations__)
    return new


def _rejitted(jit_fn, scope: dict):
    """A JIT function (triton's or Gluon's) made again, with its own options, over ``scope``."""
    return type(jit_fn)(_clone(jit_fn.fn, scope), version=jit_fn.version, do_not_specialize=jit_fn.do_not_specialize,
                        do_not_specialize_on_alignment=jit_fn.do_not_specialize_on_alignment, debug=jit_fn.debug,
                        noinline=jit_fn.noinline, repr=jit_fn._repr, launch_metadata=jit_fn.launch_metadata)


def rebound(module: types.ModuleType, **replacements) -> types.SimpleNamespace:
    """``module``'s namespace with ``replacements`` (name → JIT function) in place of its helpers of those names,
    and its own functions re-created to call them. Each replacement must take as many parameters as the helper it
    replaces (the kernels call their helpers positionally); a name the module does not define as a JIT function
    is refused."""
    from triton.runtime.jit import JITFunction

    for name, new in replacements.items():
        old = getattr(module, name, None)
        if not isinstance(old, JITFunction):
            raise ValueError(f"{module.__name__} has no JIT function {name!r} to replace")
        if not isinstance(new, JITFunction):
            raise TypeError(f"the replacement for {name!r} must be a JIT function, not {type(new).__name__}")
        if len(old.signature.parameters) != len(new.signature.parameters):
            raise ValueError(f"the replacement for {name!r} takes ({', '.join(new.signature.parameters)}), "
                             f"not ({', '.join(old.signature.parameters)})")
    scope = {**vars(module), **replacements}
    for name, obj in vars(module).items():
        if name in replacements:
            continue
        if isinstance(obj, JITFunction) and obj.fn.__module__ == module.__name__:
            scope[name] = _rejitted(obj, scope)
        elif inspect.isfunction(obj) and obj.__module__ == module.__name__:
            scope[name] = _clone(obj, scope)
    return types.SimpleNamespace(**scope)
