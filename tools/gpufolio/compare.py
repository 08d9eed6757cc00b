"""``python -m gpufolio compare A B``: did B help? Every (bench, params, variant) of both runs, B over A, with noise.

    python -m gpufolio compare latest~1 latest --project fused_kernels
    python -m gpufolio compare 20261203T053445Z-7ab1a4 20261203T060746Z-34b775 --json
    python -m gpufolio compare A B --fail-on-regression 5     # exit 1 when a case got slower by more than 5 %
    python -m gpufolio bench --project fused_kernels --quick --compare-to latest   # the same table after a run

A and B: a run id (or a unique start of one), ``latest`` / ``latest~N`` (the newest run, N runs back), or a commit
(7 to 40 hex digits of its SHA: the newest run measured at it). Runs come from the results store, plus any
folder given with ``--results`` (a bench's ``--out``).

The noise rule (``verdict``): each run's timing gives a p20–p80 band of its own repetitions. B is *faster* when
the bands do not overlap (B's p80 below A's p20) and the median time moved by more than the threshold (2 %);
*slower* is the mirror image; anything else is *within noise*. The bands say how much one run scatters; the
threshold keeps two tight bands a hair apart from reading as a change. What neither sees is drift between
runs (a card's power and clock state moves cuBLAS by 10-20 % from one day to the next), so the table shows each
run's clocks, power and measured ceilings, and a candidate's ratio to its own run's baseline next to the raw one.

Two runs on different GPU models are not compared (exit 2), nor are unknown run ids (one line, exit 2).
"""
from __future__ import annotations

import argparse
import json
import math
import re
import sys
from collections.abc import Iterable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

from . import PROJECTS, store

THRESHOLD = 0.02  # a median has to move by more than this fraction (with non-overlapping bands) to be a change
MEASURED = ("ok", "dry_run")  # statuses that carry a number
LATEST_RE = re.compile(r"^latest(?:~(\d+))?$")
SHA_PREFIX_RE = re.compile(r"^[0-9a-f]{7,40}$")
RULE = ("faster / slower: the two runs' p20-p80 timing bands do not overlap and the median time moved by more "
        "than {pct:g} %; otherwise within noise")


class CompareError(ValueError):
    """Bad input (an unknown run, two GPU models): one line on stderr and exit code 2."""


# ---- runs -------------------------------------------------------------------------------------------------------

def load_runs(records: Iterable[dict]) -> dict[str, list[dict]]:
    """run id -> its records, oldest run first (a run id starts with its UTC start time)."""
    runs: dict[str, list[dict]] = {}
    for r in records:
        runs.setdefault(r["run_id"], []).append(r)
    return dict(sorted(runs.items(), key=lambda kv: (min(r["created_at"] for r in kv[1]), kv[0])))


def read_runs(results: Iterable[Path] = (), root: Path | None = None) -> dict[str, list[dict]]:
    """Every run in the store and under the ``results`` folders (read recursively); bad lines are left out."""
    paths = list(store.iter_result_files(root))
    for folder in results:
        folder = Path(folder)
        if not folder.is_dir():
            raise CompareError(f"no such results folder: {folder}")
        paths += sorted(folder.rglob("*.jsonl"))
    return load_runs(store.load_records(paths=paths, strict=False))


def run_gpu(records: list[dict]) -> str | None:
    """The GPU model a run measured on (None: no GPU, e.g. a dry run)."""
    names = {((r.get("env") or {}).get("gpu") or {}).get("name") for r in records}
    return sorted(names, key=str)[0] if len(names) == 1 else " + ".join(sorted(map(str, names)))


def resolve(spec: str, runs: dict[str, list[dict]], project: str | None = None, gpu: Any = ...,
            exclude: Iterable[str] = ()) -> str:
    """The run id ``spec`` names among ``runs`` (optionally: only runs of ``project``, on GPU model ``gpu``, and
    not in ``exclude``). Raises CompareError with one line when it names none, or several."""
    skip = set(exclude)
    pool = [rid for rid, recs in runs.items() if rid not in skip
            and (project is None or any(r["project"] == project for r in recs))
            and (gpu is ... or run_gpu(recs) == gpu)]
    where = (f" of {project}" if project else "") + (f" on {gpu or 'a machine without GPU'}" if gpu is not ... else "")
    if spec in pool:
        return spec
    m = LATEST_RE.match(spec)
    if m:
        back = int(m.group(1) or 0)
        if back >= len(pool):
            raise CompareError(f"{spec}: there {'is' if len(pool) == 1 else 'are'} only {len(pool)} "
                               f"run{'s' * (len(pool) != 1)}{where}")
        return pool[-1 - back]
    if SHA_PREFIX_RE.match(spec.lower()):
        at = [rid for rid in pool if any(str((r.get("git") or {}).get("sha") or "").startswith(spec.lower())
                                         for r in runs[rid])]
        if at:
            return at[-1]  # the newest run measured at that commit
    starts = [rid for rid in pool if rid.startswith(spec)]
    if len(starts) == 1:
        return starts[0]
    if len(starts) > 1:
        raise CompareError(f"{spec} is the start of {len(starts)} run ids{where} ({', '.join(starts[:3])}, ...)")
    raise CompareError(f"no run{where} matches {spec!r} (a run id, latest, latest~N, or a commit SHA of 7+ digits)")


# ---- one case -----------------------------------------------------------------------------------------------------

def verdict(a_timing: dict, b_timing: dict, threshold: float = THRESHOLD) -> str:
    """faster / slower / within noise for B against A, from each run's median and p20-p80 band (ms)."""
    change = b_timing["median_ms"] / a_timing["median_ms"] - 1.0
    if b_timing["p80_ms"] < a_timing["p20_ms"] and change < -threshold:
        return "faster"
    if b_timing["p20_ms"] > a_timing["p80_ms"] and change > threshold:
        return "slower"
    return "within noise"


def metric_band(metric: dict, timing: dict) -> tuple[float, float]:
    """The metric at the timing's p20 and p80, low to high. A metric is either the median time itself (ms) or a
    rate of fixed work over the median time (TFLOP/s, GB/s, tok/s), so the band maps through time."""
    value, median = metric["value"], timing["median_ms"]
    if math.isclose(value, median, rel_tol=1e-9):
        return timing["p20_ms"], timing["p80_ms"]
    return value * median / timing["p80_ms"], value * median / timing["p20_ms"]


def case_key(r: dict) -> tuple[str, str, str, str]:
    return r["project"], r["bench"], store.params_key(r["params"]), r["variant"]


def _measured(r: dict) -> bool:
    return r["status"] in MEASURED and bool(r.get("metric")) and bool(r.get("timing"))


def _baseline_values(records: list[dict]) -> dict[tuple, float]:
    """(project, bench, params) -> the headline baseline's metric in the same run."""
    out = {}
    for r in records:
        if r["role"] == "baseline" and _measured(r) and r["variant"] == (r.get("bench_meta") or {}).get("headline_baseline"):
            out[case_key(r)[:3]] = r["metric"]["value"]
    return out


@dataclass
class Case:
    project: str
    bench: str
    params: str
    variant: str
    role: str
    metric: str
    unit: str
    higher_is_better: bool
    a: float
    b: float
    a_band: tuple[float, float]
    b_band: tuple[float, float]
    a_ms: tuple[float, float, float]  # p20, median, p80
    b_ms: tuple[float, float, float]
    ratio: float  # B / A of the metric
    time_change: float  # B's median time / A's - 1 (negative: faster)
    verdict: str
    vs_baseline_ratio: float | None  # (B / B's baseline) / (A / A's baseline), candidates only


@dataclass
class RunInfo:
    run_id: str
    created_at: str
    projects: list[str]
    gpu: str | None
    commit: str | None
    dirty: bool | None
    torch: str | None
    dry_run: bool
    clocks_start: dict | None
    clocks_end: dict | None
    ceilings: dict

    @classmethod
    def of(cls, run_id: str, records: list[dict]) -> RunInfo:
        first = min(records, key=lambda r: r["created_at"])
        last = max(records, key=lambda r: r["created_at"])
        env, git = first.get("env") or {}, first.get("git") or {}
        return cls(run_id, first["created_at"], sorted({r["project"] for r in records}), run_gpu(records),
                   git.get("sha"), git.get("dirty"), env.get("torch"),
                   all(r["status"] == "dry_run" or (r.get("env") or {}).get("gpu") is None for r in records),
                   (env.get("gpu") or {}).get("clocks_start"), ((last.get("env") or {}).get("gpu") or {}).get("clocks_end"),
                   env.get("ceilings") or {})


@dataclass
class Comparison:
    a: RunInfo
    b: RunInfo
    threshold: float
    cases: list[Case] = field(default_factory=list)
    only_in_a: list[dict] = field(default_factory=list)  # {project, bench, params, variant, status}
    only_in_b: list[dict] = field(default_factory=list)
    not_measured: list[dict] = field(default_factory=list)  # in both, but one of them has no number (and why)

    def regressions(self, pct: float) -> list[Case]:
        """Cases slower beyond noise by more than ``pct`` percent of A's median time."""
        return [c for c in self.cases if c.verdict == "slower" and c.time_change * 100 > pct]

    def as_json(self) -> dict:
        out = asdict(self)
        out["rule"] = RULE.format(pct=self.threshold * 100)
        return out


def compare(a_records: list[dict], b_records: list[dict], threshold: float = THRESHOLD) -> Comparison:
    """B against A, case by case. Raises CompareError when the two runs are on different GPU models."""
    if not a_records or not b_records:
        raise CompareError("a run with no records to compare")
    a_info = RunInfo.of(a_records[0]["run_id"], a_records)
    b_info = RunInfo.of(b_records[0]["run_id"], b_records)
    if a_info.gpu != b_info.gpu:
        raise CompareError(f"run {a_info.run_id} is on {a_info.gpu or 'no GPU'} and run {b_info.run_id} on "
                           f"{b_info.gpu or 'no GPU'}: runs on different GPU models are not compared")
    out = Comparison(a_info, b_info, threshold)
    a_by = {case_key(r): r for r in a_records}
    b_by = {case_key(r): r for r in b_records}
    a_base, b_base = _baseline_values(a_records), _baseline_values(b_records)
    for key in sorted(a_by.keys() | b_by.keys()):
        ra, rb = a_by.get(key), b_by.get(key)
        brief = dict(zip(("project", "bench", "params", "variant"), key))
        if rb is None:
            out.only_in_a.append(brief | {"status": ra["status"]})
        elif ra is None:
            out.only_in_b.append(brief | {"status": rb["status"]})
        elif not (_measured(ra) and _measured(rb)):
            out.not_measured.append(brief | {"a_status": ra["status"], "b_status": rb["status"],
                                             "why": (rb if not _measured(rb) else ra).get("message")})
        else:
            out.cases.append(_case(key, ra, rb, a_base.get(key[:3]), b_base.get(key[:3]), threshold))
    return out


def _case(key: tuple, ra: dict, rb: dict, a_base: float | None, b_base: float | None, threshold: float) -> Case:
    ma, mb, ta, tb = ra["metric"], rb["metric"], ra["timing"], rb["timing"]
    vs_base = None
    if ra["role"] == "candidate" and a_base and b_base and ma["value"]:
        vs_base = (mb["value"] / b_base) / (ma["value"] / a_base)
    return Case(*key, role=ra["role"], metric=ma["name"], unit=ma["unit"], higher_is_better=ma["higher_is_better"],
                a=ma["value"], b=mb["value"], a_band=metric_band(ma, ta), b_band=metric_band(mb, tb),
                a_ms=(ta["p20_ms"], ta["median_ms"], ta["p80_ms"]), b_ms=(tb["p20_ms"], tb["median_ms"], tb["p80_ms"]),
                ratio=mb["value"] / ma["value"] if ma["value"] else math.nan,
                time_change=tb["median_ms"] / ta["median_ms"] - 1.0, verdict=verdict(ta, tb, threshold),
                vs_baseline_ratio=vs_base)


# ---- text -------------------------------------------------------------------------------------------------------

def _num(v: float) -> str:
    return f"{v:.4g}"


def _state(c: dict | None) -> str:
    if not c:
        return "?"

    def num(key: str, spec: str = "g") -> str:  # a reading the stamp could not take is "?", never a made-up 0
        v = c.get(key)
        return format(v, spec) if isinstance(v, (int, float)) and not isinstance(v, bool) else "?"

    return (f"SM {num('sm_clock_mhz')} MHz, mem {num('mem_clock_mhz')} MHz, "
            f"{num('power_w', '.0f')}/{num('power_limit_w', '.0f')} W, {num('temperature_c')} C")


def run_line(label: str, info: RunInfo) -> str:
    commit = (info.commit or "unknown")[:10] + (" dirty" if info.dirty else "" if info.dirty is False else " (?)")
    ceil = ", ".join(f"{k} {v:.4g}" for k, v in sorted(info.ceilings.items()) if not k.endswith("_size"))
    line = (f"{label}: run {info.run_id} ({info.created_at[:16]}), commit {commit}, "
            f"{info.gpu or 'no GPU (dry run)'}, torch {info.torch}")
    if info.gpu:
        line += f"\n   clocks start [{_state(info.clocks_start)}] end [{_state(info.clocks_end)}]"
        line += f"\n   ceilings {ceil or '-'}"
    return line


def _rows(cases: Iterable[Case]) -> list[list[str]]:
    rows = []
    for c in cases:
        rows.append([f"{c.project}/{c.bench}", c.variant + (" (base)" if c.role == "baseline" else ""), c.params,
                     f"{_num(c.a)} [{_num(c.a_band[0])}-{_num(c.a_band[1])}]",
                     f"{_num(c.b)} [{_num(c.b_band[0])}-{_num(c.b_band[1])}]", c.unit, f"{c.ratio:.3f}",
                     "-" if c.vs_baseline_ratio is None else f"{c.vs_baseline_ratio:.3f}", c.verdict])
    return rows


def plain_table(header: list[str], rows: list[list[str]]) -> str:
    widths = [max(len(h), *(len(r[i]) for r in rows)) if rows else len(h) for i, h in enumerate(header)]
    fmt = "  ".join(f"{{:<{w}}}" for w in widths)
    return "\n".join([fmt.format(*header), fmt.format(*("-" * w for w in widths)), *(fmt.format(*r) for r in rows)])


HEADER = ["bench", "variant", "params", "A [p20-p80]", "B [p20-p80]", "unit", "B/A", "B/A vs base", "verdict"]


def render(cmp: Comparison) -> str:
    """The terminal table: both runs' stamps, the rule, one line per case, then what could not be compared."""
    counts = {v: sum(c.verdict == v for c in cmp.cases) for v in ("faster", "slower", "within noise")}
    parts = [run_line("A", cmp.a), run_line("B", cmp.b),
             f"rule: {RULE.format(pct=cmp.threshold * 100)}", "", plain_table(HEADER, _rows(cmp.cases)) if cmp.cases
             else "(no case measured in both runs)", "",
             f"{len(cmp.cases)} cases: {counts['faster']} faster, {counts['slower']} slower, "
             f"{counts['within noise']} within noise"]
    for what, items in (("only in A", cmp.only_in_a), ("only in B", cmp.only_in_b)):
        if items:
            parts.append(f"{len(items)} {what}: " + "; ".join(
                f"{i['project']}/{i['bench']} {i['variant']} {i['params']} ({i['status']})" for i in items[:LISTED])
                + _more(items))
    for i in cmp.not_measured[:LISTED]:
        parts.append(f"no number in both: {i['project']}/{i['bench']} {i['variant']} {i['params']} "
                     f"(A {i['a_status']}, B {i['b_status']}{': ' + i['why'][:80] if i['why'] else ''})")
    if len(cmp.not_measured) > LISTED:
        parts.append(f"no number in both: {len(cmp.not_measured)} cases in all" + _more(cmp.not_measured))
    return "\n".join(parts)


LISTED = 8  # cases listed by name in each of the table's footnotes; --json has them all


def _more(items: list) -> str:
    return f"; ... and {len(items) - LISTED} more (--json lists them all)" if len(items) > LISTED else ""


# ---- entry points -----------------------------------------------------------------------------------------------

def _select(runs: dict[str, list[dict]], run_id: str, project: str | None, bench: list[str]) -> list[dict]:
    return [r for r in runs[run_id] if (project is None or r["project"] == project) and (not bench or r["bench"] in bench)]


def compare_specs(a: str, b: str, *, project: str | None = None, bench: list[str] = (), results: Iterable[Path] = (),
                  threshold: float = THRESHOLD, root: Path | None = None) -> Comparison:
    runs = read_runs(results, root)
    a_id, b_id = resolve(a, runs, project), resolve(b, runs, project)
    return compare(_select(runs, a_id, project, list(bench)), _select(runs, b_id, project, list(bench)), threshold)


def after_bench(spec: str, records: list[dict], out_dir: Path | None = None) -> int:
    """``bench --compare-to SPEC``: the table for the run just made against SPEC, where ``latest`` means the
    newest earlier run of the same projects on the same GPU model. Returns the exit code."""
    if not records:
        return 0
    try:
        runs = read_runs([out_dir] if out_dir and Path(out_dir).is_dir() else [])
        projects = {r["project"] for r in records}
        runs = {rid: [r for r in recs if r["project"] in projects] for rid, recs in runs.items()}
        runs = {rid: recs for rid, recs in runs.items() if recs}
        gpu, new_id = run_gpu(records), records[0]["run_id"]
        if LATEST_RE.match(spec) and not any(rid != new_id and run_gpu(recs) == gpu for rid, recs in runs.items()):
            print(f"\nnothing to compare with: no earlier run of {', '.join(sorted(projects))} on "
                  f"{gpu or 'a machine without GPU'}")
            return 0
        a_id = resolve(spec, runs, gpu=gpu, exclude={new_id})
        print("\n" + render(compare(runs[a_id], records)))
    except CompareError as e:
        print(f"gpufolio bench --compare-to: {e}", file=sys.stderr)
        return 2
    return 0


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m gpufolio compare", description=__doc__.splitlines()[0])
    ap.add_argument("a", metavar="A", help="the run before: a run id, latest~N, or a commit")
    ap.add_argument("b", metavar="B", help="the run after")
    ap.add_argument("--project", choices=PROJECTS, help="only this project's records (and its runs for latest)")
    ap.add_argument("--bench", action="append", default=[], metavar="NAME", help="only these benches")
    ap.add_argument("--results", action="append", default=[], type=Path, metavar="DIR",
                    help="also read runs from this folder (a bench's --out)")
    ap.add_argument("--threshold", type=float, default=THRESHOLD * 100, metavar="PCT",
                    help=f"smallest median change that counts, in percent ({THRESHOLD * 100:g})")
    ap.add_argument("--json", action="store_true", help="print the comparison as JSON")
    ap.add_argument("--fail-on-regression", type=float, metavar="PCT",
                    help="exit 1 when a case is slower beyond noise by more than PCT percent")
    return ap


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    try:
        cmp = compare_specs(args.a, args.b, project=args.project, bench=args.bench, results=args.results,
                            threshold=args.threshold / 100)
    except CompareError as e:
        print(f"gpufolio compare: {e}", file=sys.stderr)
        return 2
    print(json.dumps(cmp.as_json(), indent=2, default=str) if args.json else render(cmp))
    if args.fail_on_regression is not None:
        bad = cmp.regressions(args.fail_on_regression)
        if bad:
            print(f"gpufolio compare: {len(bad)} case(s) slower by more than {args.fail_on_regression:g} %: "
                  + "; ".join(f"{c.bench} {c.variant} {c.params} {c.time_change * 100:+.1f} %" for c in bad),
                  file=sys.stderr)
            return 1
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
