#!/usr/bin/env bash
# OSS-PR notes on the GPU box: the notes' repro benches (upstream vs patched in one run) and their GPU tests.
# Run from the repo root with $OUTDIR set (HELPERS.md). Budget: 150 s; each step has its own timeout, the bench
# (the records the note cites) first.
set -uo pipefail
: "${OUTDIR:?set OUTDIR to an empty folder}"
mkdir -p "$OUTDIR"
PY=$(command -v python3 || command -v python)  # the box has python3; `python` may not exist
log() { echo "[oss_pr_notes $(date -u +%H:%M:%S)] $*" | tee -a "$OUTDIR/oss_pr_notes.log"; }

# liger-kernel is not on the box: the lead carries its wheel in .whl/ (GPU.md). Install it out of the tree.
if ! "$PY" -c "import liger_kernel" 2>/dev/null; then
  if ls .whl/liger_kernel-*.whl >/dev/null 2>&1; then
    "$PY" -m pip install -q --no-index --no-deps --target /tmp/oss_pr_notes_site .whl/liger_kernel-*.whl \
      >>"$OUTDIR/oss_pr_notes.log" 2>&1
    export PYTHONPATH="/tmp/oss_pr_notes_site${PYTHONPATH:+:$PYTHONPATH}"
  fi
fi
"$PY" - <<'PY' 2>&1 | tee -a "$OUTDIR/oss_pr_notes.log"
import importlib
for name in ("torch", "triton", "liger_kernel"):
    try:
        m = importlib.import_module(name)
        print(f"{name} {getattr(m, '__version__', '?')} from {m.__file__}")
    except Exception as e:  # the bench records liger's absence as 'skipped'; say it here too
        print(f"{name}: NOT importable ({type(e).__name__}: {e})")
PY

# Benches by name: the backward repro (the prepared note) first; the forward one (a measured dead end, records
# from an earlier round) only when BENCH_FORWARD=1.
benches=(--bench liger_fused_add_rmsnorm_bwd)
[ "${BENCH_FORWARD:-0}" = 1 ] && benches+=(--bench liger_fused_add_rmsnorm)
log "bench (full): ${benches[*]}"
timeout 95 "$PY" -m gpufolio bench --project oss_pr_notes "${benches[@]}" --out "$OUTDIR" --no-progress \
  >"$OUTDIR/bench.log" 2>&1
bench_rc=$?
tail -25 "$OUTDIR/bench.log" | tee -a "$OUTDIR/oss_pr_notes.log"
log "gpu tests"
timeout 40 "$PY" -m pytest -m gpu projects/oss_pr_notes -q -p no:cacheprovider >"$OUTDIR/pytest_gpu.log" 2>&1
tests_rc=$?
tail -3 "$OUTDIR/pytest_gpu.log" | tee -a "$OUTDIR/oss_pr_notes.log"

log "done: tests rc=$tests_rc bench rc=$bench_rc"
exit $(( tests_rc != 0 || bench_rc != 0 ))
