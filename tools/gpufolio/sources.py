"""What changes a project's numbers: the files its source digest covers, and that digest.

A rule over one state of the repository (the working tree, or a commit read through git), so that a record's
commit can be judged by today's rule (``provenance.StaleCheck``).
"""
from __future__ import annotations

import ast
import hashlib
import os
import re
from fnmatch import fnmatchcase
from pathlib import Path, PurePosixPath

from . import project_facts

# What changes a project's numbers, found from its bench rather than listed by hand:
#   - the Python modules its bench imports, followed through every project (each import statement, those inside
#     functions too, and "gpufolio_projects.x.y" names handed to importlib as strings), with their packages;
#   - the C/C++/CUDA files and launch-config data of every project those modules live in (the extensions compile
#     the one, kernels read the other: inference_engine/gemv_configs.json picks its GEMV launches).
# Never counted: tests, lab scripts (tuning, profiling, probes, sweeps), evidence, results, prose, shell scripts,
# and any module nothing in the bench's imports reaches (a tune.py beside the product, a dead file).
# The digest hashes contents only, not paths: a pure move or rename leaves it as it was.
NATIVE_SUFFIXES = {".cu", ".cuh", ".h", ".hpp", ".cpp", ".c"}
CONFIG_SUFFIXES = {".json", ".toml", ".yaml", ".yml"}
SKIP_DIRS = {"results", "tests", "evidence", "lab", "__pycache__", ".build"}
DEFAULT_ENTRY_POINTS = ("bench.py",)  # a project.py may name more (ENTRY_POINTS, globs under the project)
PACKAGE = "gpufolio_projects"  # the import name of projects/ (pyproject.toml)
_MODULE_NAME = re.compile(rf"^{PACKAGE}(\.[A-Za-z_]\w*)+$")


class Tree:
    """The files under projects/ as one state of the repository: the working tree, or a commit."""

    def __init__(self, paths: list[str], read):
        self.paths = set(paths)  # posix, repository-relative
        self._read = read
        self._cache: dict[str, bytes] = {}

    def read(self, path: str) -> bytes:
        if path not in self._cache:
            self._cache[path] = self._read(path)
        return self._cache[path]


def working_tree(root: Path, repo=None) -> Tree:
    """Tracked files plus untracked ones git does not ignore (what travels to a GPU box); a walk without git."""
    if repo is not None:
        names = repo.git.ls_files("-co", "--exclude-standard", "--", "projects").splitlines()
        paths = [n for n in names if (root / n).is_file()]  # a tracked file deleted in the working tree is gone
    else:
        paths = []
        for dirpath, dirnames, filenames in os.walk(root / "projects"):
            dirnames[:] = [d for d in dirnames if not d.startswith(".") and d != "__pycache__"]
            paths += [(Path(dirpath) / f).relative_to(root).as_posix() for f in filenames]
    return Tree(paths, lambda p: (root / p).read_bytes())


def commit_tree(repo, sha: str) -> Tree:
    try:
        top = repo.commit(sha).tree / "projects"
    except KeyError:  # a commit from before projects/ existed
        return Tree([], lambda p: b"")
    blobs = {b.path: b for b in top.traverse() if b.type == "blob"}
    return Tree(list(blobs), lambda p: blobs[p].data_stream.read())


def _entry_points(project: str, root: Path) -> tuple[str, ...]:
    """The bench modules of ``project`` by today's project.py (a rule applied alike to every state compared)."""
    facts = root / "projects" / project / "project.py"
    if not facts.is_file():
        return DEFAULT_ENTRY_POINTS
    return project_facts.read(facts).entry_points or DEFAULT_ENTRY_POINTS  # a literal, read without running it


def _module_file(tree: Tree, module: str) -> str | None:
    rel = "projects/" + "/".join(module.split(".")[1:])
    for path in (rel + ".py", rel + "/__init__.py"):
        if path in tree.paths:
            return path
    return None


def imported_names(source: bytes, module: str, is_package: bool, packages: tuple[str, ...] = (PACKAGE,)) -> set[str]:
    """Absolute module names under ``packages`` that ``source`` (module ``module``) may import: for
    ``from a import b``, both a and a.b."""
    try:
        nodes = ast.walk(ast.parse(source))
    except SyntaxError:
        return set()
    package = module if is_package else module.rpartition(".")[0]
    names = set()
    for node in nodes:
        if isinstance(node, ast.Import):
            names |= {a.name for a in node.names}
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                parts = package.split(".")
                anchor = ".".join(parts[:len(parts) - node.level + 1])
                base = f"{anchor}.{base}" if base else anchor
            names.add(base)
            names |= {f"{base}.{a.name}" for a in node.names}
        elif isinstance(node, ast.Constant) and isinstance(node.value, str) and _MODULE_NAME.match(node.value):
            names.add(node.value)
    return {n for n in names if n.split(".")[0] in packages}


def _module_closure(tree: Tree, roots: list[str]) -> set[str]:
    """Every file of projects/ that importing the ``roots`` (paths) may execute, packages included."""
    seen: set[str] = set()
    todo = list(roots)
    while todo:
        path = todo.pop()
        if path in seen:
            continue
        seen.add(path)
        parts = PurePosixPath(path).with_suffix("").parts[1:]
        is_package = parts[-1] == "__init__"
        module = ".".join((PACKAGE,) + (parts[:-1] if is_package else parts))
        for name in imported_names(tree.read(path), module, is_package):
            bits = name.split(".")
            for i in range(2, len(bits) + 1):  # a.b.c runs a/__init__ and a/b/__init__ first
                found = _module_file(tree, ".".join(bits[:i]))
                if found:
                    todo.append(found)
    return seen


def _skipped(path: str) -> bool:
    return any(d in SKIP_DIRS or d.startswith(".") for d in PurePosixPath(path).parts[:-1])


def product_paths(project: str, tree: Tree, root: Path) -> list[str]:
    base = f"projects/{project}/"
    roots = sorted({p for pattern in _entry_points(project, root) for p in tree.paths
                    if p.startswith(base) and fnmatchcase(p[len(base):], pattern) and not _skipped(p)})
    modules = {p for p in _module_closure(tree, roots) if not _skipped(p)}
    entered = {project} | {PurePosixPath(p).parts[1] for p in modules if len(PurePosixPath(p).parts) > 2}
    data = {p for p in tree.paths if len(PurePosixPath(p).parts) > 2 and PurePosixPath(p).parts[1] in entered
            and PurePosixPath(p).suffix in NATIVE_SUFFIXES | CONFIG_SUFFIXES and not _skipped(p)}
    return sorted(modules | data)


def digest(project: str, tree: Tree, root: Path) -> str:
    """sha256 over the sorted content hashes of the project's product files: contents only, so a move or a
    rename changes nothing, and stable across machines."""
    hashes = sorted(hashlib.sha256(tree.read(p)).hexdigest() for p in product_paths(project, tree, root))
    return hashlib.sha256("\n".join(hashes).encode()).hexdigest()[:16]
