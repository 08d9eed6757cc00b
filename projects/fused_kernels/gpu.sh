#!/usr/bin/env bash
# fused_kernels on the GPU box (run from the repo root, $OUTDIR set, the package importable).
# Stages run in the order given by FK_STAGES (space-separated; the default below is this round's plan), each
# under its own time limit, each logging to $OUTDIR/<stage>.log; the bench stages write stamped records.
#   tune_lce     LCE: time and peak memory per schedule at T = 2d and T = d (head on/off), the head's and one
#                chunk's steps apart (tune.py lce)
#   tune_lce_head  the head at T = d: its steps apart, column-CE launch settings, a profile of one call
#   tune_swiglu  SwiGLU launch sweep (block, warps, evict-first loads), forward and backward apart; then
#                forward+backward per setting against torch.compile, alternating, two rounds (tune.py swiglu)
#   tune_odd     add+RMSNorm / RMSNorm at widths 4096 4097 5120 8191 8192: the split kernels (new, and with the
#                backward at twice its warps) against the plain ones (old), forward and forward+backward (tune.py odd)
#   tune_odd_compile  RMSNorm at 4097 and 8191: ours against torch.compile, fwd and fwd+bwd (tune.py odd_compile)
#   bench_rmsnorm, bench_swiglu, bench_lce, bench_norms (copy + add_rmsnorm)   quick-mode records
#   bench_full   every bench at every size (full mode: 2048 to 32768 rows, both LCE shapes, label smoothing)
#   bench_final  every bench in one run, in bench.py's order (copy, swiglu, linear_cross_entropy,
#                add_rmsnorm, rmsnorm: the last ones are the first to go if the round's limit cuts it short)
#   pytest       python -m pytest -m gpu projects/fused_kernels
set -u
OUT="${OUTDIR:?OUTDIR must be set}"
PY="$(command -v python || command -v python3)"
mkdir -p "$OUT"
export TRITON_INTERPRET=0
date -u > "$OUT/env.log"
STAGES="${FK_STAGES:-bench_final}"  # the final round: every record in one run (round 1 ran the tunes and pytest)

BUDGET="${FK_BUDGET:-480}"  # the round's limit, less a margin: no stage runs past it

step() {  # step NAME SECONDS CMD...: run with a time limit, log to $OUT/NAME.log, print the tail
  local name=$1 secs=$2; shift 2
  local left=$((BUDGET - SECONDS))
  if [ "$left" -lt 5 ]; then echo "== $name skipped: ${left}s left"; return; fi
  [ "$secs" -gt "$left" ] && secs=$left
  local t0=$SECONDS
  timeout --kill-after=3 "$secs" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s"; tail -n 40 "$OUT/$name.log"
}

bench() {  # bench NAME SECONDS --bench X ...: quick-mode records under $OUT
  local name=$1 secs=$2; shift 2
  step "$name" "$secs" "$PY" -m gpufolio bench --project fused_kernels --quick "$@" --timeout 40 --out "$OUT" \
    --no-progress
}

TUNE="gpufolio_projects.fused_kernels.tune"
for s in $STAGES; do
  case "$s" in
    tune_lce) step tune_lce 60 "$PY" -m "$TUNE" lce ;;
    tune_lce_head) step tune_lce_head 45 "$PY" -m "$TUNE" lce_head ;;
    tune_swiglu) step tune_swiglu 25 env TORCHINDUCTOR_CACHE_DIR=/tmp/fk_inductor "$PY" -m "$TUNE" swiglu
      # Inductor's launch settings for the same op (its generated kernels, cached above), for the comparison.
      grep -rh -B2 -A12 "@triton_heuristics.pointwise" /tmp/fk_inductor 2>/dev/null | head -120 > "$OUT/inductor_swiglu.log" ;;
    tune_odd) step tune_odd 25 "$PY" -m "$TUNE" odd ;;
    tune_odd_compile) step tune_odd_compile 32 env TORCHINDUCTOR_CACHE_DIR=/tmp/fk_inductor "$PY" -m "$TUNE" odd_compile ;;
    bench_rmsnorm) bench bench_rmsnorm 35 --bench rmsnorm ;;
    bench_swiglu) bench bench_swiglu 30 --bench swiglu ;;
    bench_lce) bench bench_lce 110 --bench linear_cross_entropy ;;
    bench_norms) bench bench_norms 40 --bench copy --bench add_rmsnorm ;;
    bench_full) step bench_full 420 "$PY" -m gpufolio bench --project fused_kernels --timeout 60 --out "$OUT" \
      --no-progress ;;
    bench_final) bench bench_final 260 --bench copy --bench swiglu --bench linear_cross_entropy \
      --bench add_rmsnorm --bench rmsnorm ;;
    pytest) step pytest_gpu 60 "$PY" -m pytest -m gpu projects/fused_kernels -q -p no:cacheprovider ;;
    *) echo "unknown stage $s" ;;
  esac
done
exit 0
