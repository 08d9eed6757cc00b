"""``python -m gpufolio``: bench | env | check | provenance | site | worklog | compare | pr-note.

    python -m gpufolio bench --project gemm_ladder --quick      # on a GPU box: check, time, stamp, record
    python -m gpufolio bench --dry-run                          # CPU paths only; records marked dry_run
    python -m gpufolio env                                      # print the stamp (GPU or CPU)
    python -m gpufolio check                                    # validate every results file and note
    python -m gpufolio provenance                               # before copying the tree to a box without .git
    python -m gpufolio site [--render-only]                     # render pages, then mkdocs build --strict
"""
from __future__ import annotations

import argparse
import json
import shlex
import sys
from pathlib import Path

from . import PROJECTS


class CliError(Exception):
    """Bad input from the user: one clear line on stderr and exit code 2."""


def recorded_argv(argv: list[str]) -> list[str]:
    """The bench's arguments as a record keeps them: the --out folder (a scratch path on the machine that ran
    it, meaningless to a reader and never part of what was measured) is written as OUT."""
    out, skip = [], False
    for a in argv:
        if skip:
            out.append("OUT")
            skip = False
        elif a == "--out":
            out.append(a)
            skip = True
        elif a.startswith("--out="):
            out.append("--out=OUT")
        else:
            out.append(a)
    return out


def _parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="python -m gpufolio", description=__doc__.splitlines()[0])
    sub = p.add_subparsers(dest="cmd", required=True, metavar="COMMAND")

    b = sub.add_parser("bench", help="run benchmarks: correctness gate, timing, stamped records")
    b.add_argument("--project", action="append", metavar="PROJECT",
                   help=f"one of {', '.join(PROJECTS)} (repeatable; default: all)")
    b.add_argument("--bench", action="append", default=[], metavar="NAME", help="only these bench names")
    b.add_argument("--variant", action="append", default=[], metavar="NAME",
                   help="only these candidates (baselines always run)")
    b.add_argument("--where", action="append", default=[], metavar="KEY=V[,V]",
                   help="only configs whose parameter KEY is one of these values, e.g. S=512,1024 (repeatable)")
    mode = b.add_mutually_exclusive_group()
    mode.add_argument("--quick", action="store_true", help="the quick config set (about 2 min per project)")
    mode.add_argument("--dry-run", action="store_true", help="CPU paths at tiny sizes; records marked dry_run")
    b.add_argument("--out", type=Path, help="write records under OUT/<project>/ instead of projects/<p>/results/")
    b.add_argument("--timeout", type=float, default=300.0, help="seconds per case before it is killed (300)")
    b.add_argument("--no-progress", action="store_true")
    b.add_argument("--compare-to", metavar="RUN", help="then compare with RUN (latest, a run id, a commit)")

    sub.add_parser("env", help="print the environment stamp (JSON)").add_argument(
        "--ceilings", action="store_true", help="also measure copy bandwidth and cuBLAS rates (GPU only)")
    c = sub.add_parser("check", help="validate results files and notes; list stale records")
    c.add_argument("paths", nargs="*", type=Path, help="results files (default: the whole store)")
    sub.add_parser("provenance", help="write .gpufolio/provenance.json for a copy of the tree without .git")
    for name, help_ in DELEGATED.items():
        sub.add_parser(name, help=help_[1], add_help=False)
    return p


# Commands whose arguments belong to another module: everything after the command name is passed on as is.
DELEGATED = {
    "site": ("site", "render the site (then mkdocs build --strict)"),
    "worklog": ("worklog", "draft a worklog entry"),
    "compare": ("compare", "compare two runs case by case, with noise (B/A, faster / slower / within noise)"),
    "pr-note": ("prnotes.cli", "draft an OSS-PR note from a local clone"),
    "lab": ("lab", "run projects' lab stages on a GPU box: one time budget, one archive back"),
}


def cmd_bench(args: argparse.Namespace, argv: list[str]) -> int:
    from .projects import UnknownProject, benches
    from .runner import Plan, run, summary_table

    projects = args.project or list(PROJECTS)
    unknown = [p for p in projects if p not in PROJECTS]
    if unknown:
        raise CliError(f"unknown project {', '.join(unknown)}; projects are: {', '.join(PROJECTS)}")
    try:
        for p in projects:
            benches(p)
    except UnknownProject as e:
        raise CliError(str(e.args[0])) from None
    _require_known(projects, args.bench, args.variant)
    mode = "dry" if args.dry_run else "quick" if args.quick else "full"
    plan = Plan(projects, mode, set(args.bench), set(args.variant), _parse_where(args.where))
    names = plan.param_names() if plan.where else set()
    unknown = sorted(set(plan.where) - names)
    if unknown:
        raise CliError(f"--where: no selected config has parameter {', '.join(unknown)}; "
                       f"parameters are: {', '.join(sorted(names))}")
    if not plan.jobs():
        raise CliError(f"nothing to run: no benchmark matches {' '.join(argv)} in mode {mode}")
    command = "python -m gpufolio " + " ".join(shlex.quote(a) for a in recorded_argv(argv))
    try:
        result = run(plan, out_dir=args.out, timeout_s=args.timeout, command=command,
                     progress=not args.no_progress)
    except RuntimeError as e:
        raise CliError(str(e)) from None
    print(summary_table(result.records))
    print(f"\nrun {result.run_id}: {len(result.records)} records in " + ", ".join(map(str, result.paths)))
    if args.compare_to:
        from .compare import after_bench

        return after_bench(args.compare_to, result.records, args.out)
    return 0


def _require_known(projects: list[str], bench_names: list[str], variant_names: list[str]) -> None:
    """Unknown bench or variant names are a one-line error, never a run of the baselines alone."""
    from .projects import benches

    selected = [b for p in projects for b in benches(p) if not bench_names or b.name in bench_names]
    known_benches = {b.name for p in projects for b in benches(p)}
    unknown = sorted(set(bench_names) - known_benches)
    if unknown:
        raise CliError(f"unknown bench {', '.join(unknown)} in {', '.join(projects)}; "
                       f"benches are: {', '.join(sorted(known_benches))}")
    known_variants = {v.name for b in selected for v in b.variants}
    unknown = sorted(set(variant_names) - known_variants)
    if unknown:
        raise CliError(f"unknown variant {', '.join(unknown)} for the selected benches; "
                       f"variants are: {', '.join(sorted(known_variants))}")


def _parse_where(items: list[str]) -> dict[str, set[str]]:
    """``["S=512,1024", "causal=true"]`` -> ``{"S": {"512", "1024"}, "causal": {"true"}}``; a malformed item is a
    one-line error."""
    where: dict[str, set[str]] = {}
    for item in items:
        key, eq, values = item.partition("=")
        allowed = {v.strip() for v in values.split(",") if v.strip()}
        if not eq or not key.strip() or not allowed:
            raise CliError(f"--where {item!r}: expected KEY=VALUE[,VALUE...], e.g. S=512,1024")
        where.setdefault(key.strip(), set()).update(allowed)
    return where


def cmd_env(args: argparse.Namespace) -> int:
    from .provenance import git_info
    from .stamp import collect_env, measure_ceilings

    ceilings = measure_ceilings() if args.ceilings else None
    print(json.dumps({"env": collect_env(ceilings), "git": git_info()}, indent=2, default=str))
    return 0


def cmd_check(args: argparse.Namespace) -> int:
    from . import store
    from .provenance import StaleCheck

    problems, stale, n = [], {}, 0
    is_stale = StaleCheck()  # one hash of each project's sources and one git diff per commit, not per record
    for path in args.paths:
        if Path(path).is_dir():
            raise CliError(f"{path} is a directory; give results files (projects/<p>/results/<run>.jsonl), "
                           "or no path for the whole store")
        if not Path(path).exists():
            raise CliError(f"no such results file: {path}")
        if Path(path).suffix != ".jsonl":
            raise CliError(f"{path} is not a results file (projects/<p>/results/<run>.jsonl)")
    files = args.paths or list(store.iter_result_files())
    if not args.paths:
        problems += [f"{p}: records under a folder that is not a project ({', '.join(PROJECTS)})"
                     for p in store.stray_result_files()]
    for path in files:
        rep = store.read_file(Path(path), strict=False)
        problems += rep.problems
        n += len(rep.records)
        for r in rep.records:
            if is_stale(r["project"], r["git"]):
                key = f"{r['project']} run {r['run_id']}"
                stale[key] = stale.get(key, 0) + 1
    try:
        from .prnotes import validate_all
    except ImportError:
        validate_all = None
    if validate_all is not None:
        problems += validate_all()
    print(f"{n} records in {len(files)} files: {len(problems)} problems")
    for p in problems:
        print(f"  problem: {p}")
    for what, count in sorted(stale.items()):
        print(f"  stale: {what}: {count} records measured on sources that have changed since")
    return 1 if problems else 0


def cmd_provenance() -> int:
    from .provenance import write_provenance_file

    try:
        path = write_provenance_file()
    except RuntimeError as e:
        raise CliError(str(e)) from None
    print(path.read_text(encoding="utf-8"), end="")
    return 0


def _delegate(module: str, rest: list[str]) -> int:
    import importlib

    try:
        mod = importlib.import_module(f"gpufolio.{module}")
    except ModuleNotFoundError as e:
        raise CliError(f"gpufolio.{module} is not available: {e}") from None
    return int(mod.main(rest) or 0)


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv and argv[0] in DELEGATED:
        try:
            return _delegate(DELEGATED[argv[0]][0], argv[1:])
        except CliError as e:
            print(f"gpufolio {argv[0]}: {e}", file=sys.stderr)
            return 2
    args = _parser().parse_args(argv)
    try:
        if args.cmd == "bench":
            return cmd_bench(args, argv)
        if args.cmd == "env":
            return cmd_env(args)
        if args.cmd == "check":
            return cmd_check(args)
        return cmd_provenance()
    except CliError as e:
        print(f"gpufolio {args.cmd}: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
