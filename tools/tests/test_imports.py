"""Every module of the harness and the projects imports (on the CPU, Triton interpreted), product code imports no
test framework, and no two modules import each other, directly or round a loop: imports inside functions and
module names handed to importlib count too (gpufolio.sources reads them the way the source digest does)."""
from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

from gpufolio import sources
from gpufolio.store import repo_root

ROOT = repo_root()
PACKAGES = ((ROOT / "tools" / "gpufolio", "gpufolio"), (ROOT / "projects", sources.PACKAGE))


def modules() -> dict[str, Path]:
    """Import name -> file, for every module outside tests/ (lab scripts included)."""
    found = {}
    for base, package in PACKAGES:
        for path in sorted(base.rglob("*.py")):
            rel = path.relative_to(base)
            if path.name == "conftest.py" or any(p in ("tests", "__pycache__") or p.startswith(".")
                                                 for p in rel.parts[:-1]):
                continue
            parts = rel.with_suffix("").parts
            found[".".join((package,) + (parts[:-1] if parts[-1] == "__init__" else parts))] = path
    return found


def import_graph() -> dict[str, set[str]]:
    mods = modules()
    graph = {}
    for name, path in mods.items():
        names = sources.imported_names(path.read_bytes(), name, path.name == "__init__.py",
                                       packages=("gpufolio", sources.PACKAGE))
        # A submodule's own packages run before it whatever it imports: an edge back to them is no loop.
        graph[name] = {n for n in names if n in mods and n != name and not name.startswith(n + ".")}
    return graph


def cycles(graph: dict[str, set[str]]) -> list[frozenset[str]]:
    """The strongly connected components of more than one module (Tarjan)."""
    index, low, stack, on_stack, out = {}, {}, [], set(), []

    def visit(v: str) -> None:
        index[v] = low[v] = len(index)
        stack.append(v)
        on_stack.add(v)
        for w in sorted(graph[v]):
            if w not in index:
                visit(w)
                low[v] = min(low[v], low[w])
            elif w in on_stack:
                low[v] = min(low[v], index[w])
        if low[v] == index[v]:
            component = set()
            while True:
                w = stack.pop()
                on_stack.discard(w)
                component.add(w)
                if w == v:
                    break
            if len(component) > 1:
                out.append(frozenset(component))

    sys.setrecursionlimit(max(sys.getrecursionlimit(), 10_000))
    for v in sorted(graph):
        if v not in index:
            visit(v)
    return out


def test_cycle_finder_sees_a_loop_through_three_modules():
    assert cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [frozenset("abc")]


def test_no_import_cycles():
    found = cycles(import_graph())
    assert found == [], f"modules that import each other: {[sorted(c) for c in found]}"


IMPORT_ALL = """
import importlib, json, sys
bad = {}
for name in sys.argv[1:]:
    try:
        importlib.import_module(name)
    except BaseException as e:  # noqa: BLE001 - every failure is reported by name
        bad[name] = f"{type(e).__name__}: {e}"[:300]
print(json.dumps({"bad": bad, "pytest": "pytest" in sys.modules}))
"""


def test_every_module_imports_and_none_imports_pytest():
    env = dict(os.environ, TRITON_INTERPRET="1")
    res = subprocess.run([sys.executable, "-c", IMPORT_ALL, *modules()], capture_output=True, text=True, env=env,
                         timeout=600, cwd=ROOT)
    assert res.returncode == 0, res.stderr[-3000:]
    report = json.loads(res.stdout.strip().splitlines()[-1])
    assert report["bad"] == {}
    assert report["pytest"] is False, "a product module imports pytest"
