"""The portfolio site: plain Python writes Markdown and PNGs from the results store; MkDocs only renders them.

    python -m gpufolio site [--render-only] [--results-root DIR] [--check-readme]

Modules: ``records`` (the prepared frame and the honesty verdict), ``select`` (headlines, not counted),
``markers`` (writeup markers), ``tables``, ``charts``, ``project`` / ``pages`` (the pages), ``readme`` (the
README table), ``config`` / ``about`` (gpufolio.yml: author, repository; the About page), ``build`` (render +
mkdocs build), ``mkdocs_hooks`` (the generated nav, the site config, the HTML lint: ``lint``).
"""
from __future__ import annotations

import argparse
import logging
import sys
import time
from pathlib import Path


def main(argv: list[str] | None = None) -> int:
    from .. import store
    from . import build, readme
    from . import config as C
    from .markers import MarkerError
    from .writeup import WriteupError

    ap = argparse.ArgumentParser(prog="python -m gpufolio site", description=__doc__.splitlines()[0])
    ap.add_argument("--render-only", action="store_true", help="write site_src/ and the README table, skip mkdocs")
    ap.add_argument("--results-root", type=Path, help="a tree with projects/<p>/results/*.jsonl (default: this checkout)")
    ap.add_argument("--check-readme", action="store_true",
                    help="fail if the README headline table is out of date instead of rewriting it")
    ap.add_argument("--site-dir", type=Path, help="where mkdocs writes the site (default: site/)")
    ap.add_argument("--all-errors", action="store_true", help="list every unresolved marker, not only the first")
    args = ap.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(levelname)-7s - %(message)s")
    root = store.repo_root()
    t0 = time.perf_counter()
    if args.results_root is not None and not (args.results_root / "projects").is_dir():
        print(f"gpufolio site: --results-root {args.results_root}: no projects/ folder there "
              "(expected projects/<project>/results/*.jsonl)", file=sys.stderr)
        return 2
    stray = store.stray_result_files(args.results_root or root)
    if stray:
        print(f"gpufolio site: records under a folder that is not a project: {', '.join(map(str, stray))}",
              file=sys.stderr)
        return 2
    try:
        # the README table first: it needs no writeup, so a bad marker does not leave it stale
        site = C.load(root)
        df = build.prepared_frame(root, args.results_root)
        current = readme.update(root / "README.md", df, site, check=args.check_readme)
        out = build.render(root, args.results_root, site=site, cache_dir=root / ".build" / "site-cache",
                           all_errors=args.all_errors, df=df)
    except MarkerError as e:
        hint = "" if args.all_errors else " (--all-errors lists every unresolved marker)"
        print(f"gpufolio site: {e}{hint}", file=sys.stderr)
        return 2
    except (WriteupError, build.SiteError, readme.ReadmeError, store.RecordError, C.ConfigError) as e:
        print(f"gpufolio site: {e}", file=sys.stderr)
        return 2
    except FileNotFoundError as e:
        print(f"gpufolio site: {e}", file=sys.stderr)
        return 2
    if args.check_readme and not current:
        print("gpufolio site: README.md headline table is out of date; run `nox -s site`", file=sys.stderr)
        return 1
    print(f"rendered {len(out.pages)} pages into {out.docs_dir} in {time.perf_counter() - t0:.1f}s")
    if args.render_only:
        return 0
    from mkdocs.exceptions import MkDocsException

    try:
        build.mkdocs_build(root / "mkdocs.yml", site_dir=args.site_dir, results_root=args.results_root)
    except (MkDocsException, SystemExit) as e:
        print(f"gpufolio site: mkdocs build failed: {e}", file=sys.stderr)
        return 1
    print(f"site built in {time.perf_counter() - t0:.1f}s")
    return 0
