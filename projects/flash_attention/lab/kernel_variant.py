"""A kernel module with a few edits to its source, imported beside it, so a change can be compiled, checked and
timed in the lab before it is made in ``kernels/``: an edit there changes the project's source digest and makes
every record measured on the kernel stale, whether or not the change is kept.

``with_edits(module, name, edits)`` applies ``edits`` (pairs of old and new text, each old text found exactly
once) to the module's source, writes the result to a temporary file and imports it as a sibling of the module
(same package, so its relative imports resolve), under a name of its own. Its JIT functions read their source
from that file, so the variant compiles under its own cache key; the module itself is untouched. A variant
whose old text is no longer in the kernel is refused, naming the edit: the kernel changed under it.
"""
from __future__ import annotations

import atexit
import importlib.util
import re
import shutil
import sys
import tempfile
import types
from pathlib import Path

_DIR: Path | None = None


def _variant_dir() -> Path:
    """One temporary folder per process for the variants' source files (JIT functions and tracebacks read them
    back), removed at exit."""
    global _DIR
    if _DIR is None:
        _DIR = Path(tempfile.mkdtemp(prefix="gpufolio-kernel-variants-"))
        atexit.register(shutil.rmtree, _DIR, True)
    return _DIR


def edited_source(source: str, name: str, edits: list[tuple[str, str]]) -> str:
    """``source`` with each (old, new) of ``edits`` applied in turn; every old text must occur exactly once."""
    for i, (old, new) in enumerate(edits):
        found = source.count(old)
        if found != 1:
            first = old.strip().splitlines()[0] if old.strip() else repr(old)
            raise ValueError(f"variant {name!r}, edit {i + 1}: its old text ({first!r} ...) occurs {found} times in "
                             "the kernel, not once; the kernel changed under the variant")
        source = source.replace(old, new)
    return source


def with_edits(module: types.ModuleType, name: str, edits: list[tuple[str, str]]) -> types.ModuleType:
    """``module`` with ``edits`` applied to its source, imported as ``<module>__<name as an identifier>``."""
    source = edited_source(Path(module.__file__).read_text(), name, edits)
    stem = f"{module.__name__.rpartition('.')[2]}__{re.sub(r'[^0-9a-zA-Z]+', '_', name).strip('_').lower()}"
    path = _variant_dir() / f"{stem}.py"
    path.write_text(source)
    full_name = f"{module.__package__}.{stem}"
    spec = importlib.util.spec_from_file_location(full_name, path)
    variant = importlib.util.module_from_spec(spec)
    sys.modules[full_name] = variant  # as an import would: decorators and dataclasses look the module up
    try:
        spec.loader.exec_module(variant)
    except BaseException:
        del sys.modules[full_name]
        raise
    return variant
