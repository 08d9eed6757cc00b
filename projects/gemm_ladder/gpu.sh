#!/usr/bin/env bash
# gemm_ladder on the H200, one script per round (HELPERS.md): run from the repo root with $OUTDIR set.
#   build (cold, timed; the BF16 ladder's build in parallel) -> SGEMM GPU tests -> tile sweep -> sgemm bench
#   -> resource usage (registers / shared memory / spills) -> ncu on key rungs -> the BF16 ladder's own steps.
# Every step has a timeout and writes its log under $OUTDIR/sgemm/; steps.txt lists each step's rc and seconds.
set -u
: "${OUTDIR:?set OUTDIR}"
P=projects/gemm_ladder
LOG="$OUTDIR/sgemm"
mkdir -p "$LOG"
# Set by the SGEMM engineer before each round: quick|full, whether to profile, whether the BF16 part is ready.
MODE=quick
PROFILE=0
RUN_BF16=1
BF16_NCU="skip"   # "skip": no ncu in the BF16 part this round; "default": its own list
PY=python
command -v python >/dev/null || PY=python3

step() {  # step NAME SECONDS CMD...: run CMD with a timeout, log to $LOG/NAME.log, record rc and duration
  local name=$1 limit=$2
  shift 2
  local t0=$EPOCHREALTIME
  timeout --kill-after=5 "$limit" "$@" >"$LOG/$name.log" 2>&1
  local rc=$?
  printf '%-12s rc=%-3s %6.1f s\n' "$name" "$rc" "$(awk "BEGIN{print $EPOCHREALTIME - $t0}")" | tee -a "$LOG/steps.txt"
  return $rc
}

if [ "$RUN_BF16" = 1 ] && [ -f "$P/bf16/ops.py" ]; then  # compile the BF16 extension alongside ours
  (timeout 280 $PY -c "from gpufolio_projects.gemm_ladder.bf16 import ops; ops.load()" >"$LOG/bf16_prebuild.log" 2>&1 &)
fi

export GPUFOLIO_BUILD_VERBOSE=1  # ninja echoes every nvcc line, ptxas -v included
step build_cold 170 $PY -c "
import time; t = time.time()
from gpufolio_projects.gemm_ladder.sgemm import registry
registry.load(); print(f'cold build of the SGEMM ladder: {time.time() - t:.1f} s')"
unset GPUFOLIO_BUILD_VERBOSE
grep -E "ptxas info|spill|bytes stack" "$LOG/build_cold.log" >"$LOG/ptxas_v.txt"
step build_warm 60 $PY -c "
import time; t = time.time()
from gpufolio_projects.gemm_ladder.sgemm import registry
registry.load(); print(f'warm start (cached build): {time.time() - t:.1f} s')"
SO=$(find "$P/.build/gpufolio_sgemm" -name '*.so' | head -1)
[ -n "$SO" ] && step res_usage 30 cuobjdump --dump-resource-usage "$SO"

step tests 90 $PY -m pytest -m gpu "$P/tests/test_sgemm_gpu.py" -q -x -p no:cacheprovider
step sweep 60 $PY -m gpufolio_projects.gemm_ladder.sgemm.sweep --size 4096
cp "$LOG/sweep.log" "$OUTDIR/sgemm_sweep_4096.txt"

BENCH_ARGS=(--project gemm_ladder --bench sgemm --out "$OUTDIR" --no-progress)
[ "$MODE" = quick ] && BENCH_ARGS+=(--quick)
step bench 400 $PY -m gpufolio bench "${BENCH_ARGS[@]}"

if [ "$PROFILE" = 1 ]; then
  # Hardware counters at 4096^3 for the rungs the writeup leans on, and cuBLAS's kernel for comparison.
  step ncu 120 ncu --clock-control none -k regex:'gemm|xmma|cutlass' -c 7 \
    --section SpeedOfLight --section Occupancy --section LaunchStats --section WarpStateStats \
    --metrics l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_pipe_fma.sum,sm__cycles_elapsed.avg.per_second \
    $PY -m gpufolio_projects.gemm_ladder.sgemm.profile_rungs --size 4096 --rungs 03,05,06,07,09,10
fi

if [ "$RUN_BF16" = 1 ] && [ -f "$P/bf16/gpu.sh" ]; then
  if [ "$BF16_NCU" = skip ]; then BF16_NCU_VARIANTS="" bash "$P/bf16/gpu.sh"; else bash "$P/bf16/gpu.sh"; fi
fi
echo "--- sgemm steps"; cat "$LOG/steps.txt"
