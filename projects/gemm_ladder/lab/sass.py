"""What the ladders' extensions compiled to (a lab stage; needs cuobjdump): per-kernel resource usage, and per
kernel the counts of the instructions the BF16 ladder's story rests on (HGMMA, HMMA, TMA loads and stores).

    python -m gpufolio_projects.gemm_ladder.lab.sass OUT_DIR

Writes OUT_DIR/<extension>_resource_usage.txt and OUT_DIR/<extension>_sass.txt, and prints the counts.
"""
from __future__ import annotations

import re
import shutil
import subprocess
import sys
from collections import Counter
from pathlib import Path

EXTENSIONS = ("gpufolio_sgemm", "gpufolio_bf16_gemm")
COUNTED = ("HGMMA", "HMMA", "UTMALDG", "UTMASTG")
FUNCTION_RE = re.compile(r"Function : (\S+)")


def counts(sass: str) -> dict[str, Counter]:
    """kernel (mangled name) -> how many of each COUNTED instruction its SASS holds."""
    out: dict[str, Counter] = {}
    kernel = None
    for line in sass.splitlines():
        m = FUNCTION_RE.search(line)
        if m:
            kernel = m.group(1)
            out[kernel] = Counter()
        elif kernel is not None:
            for op in COUNTED:
                if re.search(rf"\b{op}\b", line):
                    out[kernel][op] += 1
    return out


def main(argv: list[str] | None = None) -> int:
    from ..build import build_dir

    argv = sys.argv[1:] if argv is None else argv
    if len(argv) != 1:
        print("usage: python -m gpufolio_projects.gemm_ladder.lab.sass OUT_DIR", file=sys.stderr)
        return 2
    out = Path(argv[0])
    out.mkdir(parents=True, exist_ok=True)
    tool = shutil.which("cuobjdump") or "/usr/local/cuda/bin/cuobjdump"
    for name in EXTENSIONS:
        found = sorted(build_dir(name).glob("*.so"))
        if not found:
            print(f"{name}: not built (run the build stages first)")
            continue
        for flag, suffix in (("--dump-resource-usage", "resource_usage"), ("--dump-sass", "sass")):
            text = subprocess.run([tool, flag, str(found[0])], capture_output=True, text=True, check=True).stdout
            (out / f"{name}_{suffix}.txt").write_text(text, encoding="utf-8")
        for kernel, c in sorted(counts((out / f"{name}_sass.txt").read_text()).items()):
            print(" ".join(f"{op}={c[op]}" for op in COUNTED), kernel)
    return 0


if __name__ == "__main__":
    sys.exit(main())
