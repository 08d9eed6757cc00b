#!/usr/bin/env bash
# One GPU round for flash_attention (run from the repo root on the H200 with $OUTDIR set; logs go there):
#   1. the quick bench (or full: FA_MODE=full) -> $OUTDIR/flash_attention/<run_id>.jsonl, bench.log
#   2. the GPU tests (pytest -m gpu) -> tests.log
#   3. optionally (FA_NCU=1) ncu on the forward kernel at the headline shape -> ncu_fwd.log
# Each part runs under `timeout` so that the round's limit is never hit by one hung step.
set -u
: "${OUTDIR:?set OUTDIR}"
MODE=${FA_MODE:-quick}
BENCH_TIMEOUT=${FA_BENCH_TIMEOUT:-80}
TEST_TIMEOUT=${FA_TEST_TIMEOUT:-26}
NCU=${FA_NCU:-0}
TEST_K=${FA_TEST_K-not every_config}                  # round 1: skip the per-config sweep (compile time)
export GPUFOLIO_FA_NO_FLEX=${FA_NO_FLEX-1}            # round 1: no time for FlexAttention's compiles
export GPUFOLIO_FA_TUNE_FILE="$OUTDIR/tune.json"      # the tuner's picks and timings come back as evidence
export GPUFOLIO_FA_TUNE_VERBOSE=1
[ "$GPUFOLIO_FA_NO_FLEX" = "0" ] && unset GPUFOLIO_FA_NO_FLEX
unset TRITON_INTERPRET
PY=${PYTHON:-python}

start=$(date +%s)
{ nvidia-smi --query-gpu=name,clocks.sm,clocks.max.sm,temperature.gpu,power.draw --format=csv;
  $PY -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"; } \
  > "$OUTDIR/env.log" 2>&1

flag=--quick; [ "$MODE" = full ] && flag=
timeout "$BENCH_TIMEOUT" $PY -m gpufolio bench --project flash_attention $flag --out "$OUTDIR" --no-progress \
  > "$OUTDIR/bench.log" 2>&1
echo "bench rc=$? after $(( $(date +%s) - start )) s" | tee -a "$OUTDIR/bench.log"

timeout "$TEST_TIMEOUT" $PY -m pytest -m gpu projects/flash_attention -v -rfE -p no:cacheprovider -k "$TEST_K" \
  > "$OUTDIR/tests.log" 2>&1
echo "tests rc=$? after $(( $(date +%s) - start )) s" | tee -a "$OUTDIR/tests.log"

if [ "$NCU" = 1 ] && command -v ncu >/dev/null; then
  timeout 60 ncu --clock-control none --kernel-name regex:_attn_fwd_kernel --launch-skip 2 --launch-count 1 \
    --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__inst_executed_pipe_xu.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__occupancy_limit_registers,smsp__warp_issue_stalled_barrier_per_warp_active.pct,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_wait_per_warp_active.pct,smsp__warp_issue_stalled_math_pipe_throttle_per_warp_active.pct \
    $PY -m gpufolio_projects.flash_attention.profile --S 4096 --D 128 --reps 3 > "$OUTDIR/ncu_fwd.log" 2>&1
  echo "ncu rc=$? after $(( $(date +%s) - start )) s" | tee -a "$OUTDIR/ncu_fwd.log"
fi
# What Triton compiled: the chosen kernels' PTX/SASS summary (wgmma count) from the cache, cheap.
find "${TRITON_CACHE_DIR:-$HOME/.triton/cache}" \( -name "_attn_fwd_kernel.ptx" -o -name "_bwd_*_kernel.ptx" \) 2>/dev/null | head -20 | while read -r f; do
  echo "$f: wgmma=$(grep -c 'wgmma.mma_async' "$f") cp.async.bulk.tensor=$(grep -c 'cp.async.bulk.tensor' "$f")"
done > "$OUTDIR/ptx_summary.log" 2>&1
tail -n 30 "$OUTDIR/bench.log"
