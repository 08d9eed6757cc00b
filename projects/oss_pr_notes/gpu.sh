#!/usr/bin/env bash
# OSS-PR notes on the GPU box (run from the repo root with $OUTDIR set, HELPERS.md). The final round gives this
# project 55 s in all, so: the backward repro's records first (quick widths, the patch and its 2x/8x neighbours
# against upstream), then the one GPU test that checks the patched launch against upstream's, if time is left.
# The forward repro's records come from an earlier round (BENCH_FORWARD=1 runs it again; it needs ~30 s more).
set -uo pipefail
: "${OUTDIR:?set OUTDIR to an empty folder}"
mkdir -p "$OUTDIR"
PY=$(command -v python3 || command -v python)  # the box has python3; `python` may not exist
log() { echo "[oss_pr_notes $(date -u +%H:%M:%S)] $*" | tee -a "$OUTDIR/oss_pr_notes.log"; }

# liger-kernel is not on the box: gpu_session.sh installs the carried wheel (.whl/) into /tmp/site.
ls -d /tmp/site/liger_kernel* 2>&1 | tee -a "$OUTDIR/oss_pr_notes.log"

benches=(--bench liger_fused_add_rmsnorm_bwd --variant patched --variant patched_x2 --variant patched_x8)
mode=(--quick)
if [ "${BENCH_FORWARD:-0}" = 1 ]; then benches+=(--bench liger_fused_add_rmsnorm); mode=(); fi
log "bench ${mode[*]} ${benches[*]}"
timeout 26 "$PY" -m gpufolio bench --project oss_pr_notes "${mode[@]}" "${benches[@]}" --out "$OUTDIR" \
  --no-progress >"$OUTDIR/bench.log" 2>&1
bench_rc=$?
tail -12 "$OUTDIR/bench.log" | tee -a "$OUTDIR/oss_pr_notes.log"

log "gpu test: patched backward launch vs upstream"
timeout 25 "$PY" -m pytest -m gpu projects/oss_pr_notes/tests/test_bwd_patch.py -q -p no:cacheprovider \
  >"$OUTDIR/pytest_gpu.log" 2>&1
tests_rc=$?
tail -3 "$OUTDIR/pytest_gpu.log" | tee -a "$OUTDIR/oss_pr_notes.log"
log "done: bench rc=$bench_rc tests rc=$tests_rc"
exit $(( bench_rc != 0 || tests_rc != 0 ))
