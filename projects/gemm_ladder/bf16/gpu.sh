#!/usr/bin/env bash
# BF16 ladder, one GPU round. Run from the repo root with $OUTDIR set; everything lands in $OUTDIR/bf16/.
#   build -> GPU tests (each rung vs fp32, ragged shapes; a hung kernel is found by the test timeout)
#   -> bench (rungs whose tests all passed, plus cuBLAS) -> SASS counts -> ncu at 8192^3 on key rungs.
# projects/gemm_ladder/gpu.sh calls this after its own SGEMM steps.
#   -> probe sweep (variants of the persistent kernel, exploration only; kept in probe.txt).
# Knobs: BF16_BENCH_MODE=quick|full|none (quick), BF16_NCU_VARIANTS ("" skips ncu), BF16_TEST_TIMEOUT (150),
#        BF16_PROBE=0 skips the probe sweep, BF16_PROBE_ARGS replaces its shapes/grids.
set -u
: "${OUTDIR:?set OUTDIR}"
LOG="$OUTDIR/bf16"
mkdir -p "$LOG"
PY="${PYTHON:-python3}"
command -v "$PY" >/dev/null || PY=python
MOD=gpufolio_projects.gemm_ladder.bf16
BENCH_MODE="${BF16_BENCH_MODE:-quick}"
NCU_VARIANTS="${BF16_NCU_VARIANTS-$("$PY" -m $MOD.registry ids) cublas}"
# ncu is not always on PATH (round 1 found none there).
NCU=$(command -v ncu || ls /usr/local/cuda/bin/ncu /usr/local/cuda/nsight-compute*/ncu /opt/nvidia/nsight-compute/*/ncu 2>/dev/null | head -1)
stamp() { echo "[bf16 $(date -u +%H:%M:%S)] $*" | tee -a "$LOG/steps.log"; }

# A build killed by a timeout (e.g. the SGEMM script's background prebuild) leaves torch's lock file behind and
# every later load() would wait on it forever; a lock older than 3 minutes has no live owner.
BUILD_DIR=$("$PY" -c "from gpufolio_projects.gemm_ladder.build import build_dir; print(build_dir('gpufolio_bf16_gemm'))")
if [ -f "$BUILD_DIR/lock" ] && [ -n "$(find "$BUILD_DIR/lock" -mmin +3)" ]; then
  stamp "removing stale build lock"; rm -f "$BUILD_DIR/lock"
fi
stamp "build"
GPUFOLIO_BUILD_VERBOSE=1 timeout "${BF16_BUILD_TIMEOUT:-300}" "$PY" -c "
import time; t = time.time()
from $MOD import ops; m = ops.load(); print('built', m.__file__, f'in {time.time() - t:.1f} s')" \
  >"$LOG/build.log" 2>&1
stamp "build rc=$? $(tail -1 "$LOG/build.log")"
grep -E "ptxas info\s+: (Used|Compiling entry)|spill|serialized|C7508" "$LOG/build.log" >"$LOG/ptxas.txt" 2>/dev/null

stamp "gpu tests"
timeout --kill-after=5 "${BF16_TEST_TIMEOUT:-150}" "$PY" -u -m pytest -m gpu projects/gemm_ladder/tests/test_bf16_gpu.py \
  -v -p no:cacheprovider >"$LOG/pytest_gpu.log" 2>&1
TEST_RC=$?
stamp "gpu tests rc=$TEST_RC: $(tail -1 "$LOG/pytest_gpu.log")"

# Rungs with at least one PASSED and no FAILED/ERROR line (a test killed mid-run leaves its rung unpassed).
GOOD=()
for id in $("$PY" -m $MOD.registry ids); do
  if grep -q "\[.*$id.*\] PASSED\|\[$id\] PASSED" "$LOG/pytest_gpu.log" &&
     ! grep -q "$id.*\(FAILED\|ERROR\)" "$LOG/pytest_gpu.log"; then
    GOOD+=("$id")
  else
    stamp "rung $id did not pass its GPU tests"
    if command -v compute-sanitizer >/dev/null; then
      timeout 60 compute-sanitizer --tool memcheck "$PY" -m $MOD.profile "$id" 333 520 1000 --warmup 0 --check \
        >"$LOG/sanitizer_$id.log" 2>&1
      stamp "compute-sanitizer $id rc=$?: $(grep -m1 -E 'ERROR SUMMARY|max err' "$LOG/sanitizer_$id.log")"
    fi
  fi
done
stamp "passing rungs: ${GOOD[*]:-none}"

if [ "$BENCH_MODE" != none ] && [ ${#GOOD[@]} -gt 0 ]; then
  ARGS=(--project gemm_ladder --bench bf16_gemm --out "$OUTDIR" --timeout 60 --no-progress)
  [ "$BENCH_MODE" = quick ] && ARGS+=(--quick)
  for id in "${GOOD[@]}"; do ARGS+=(--variant "$id"); done
  stamp "bench $BENCH_MODE"
  timeout --kill-after=5 "${BF16_BENCH_TIMEOUT:-400}" "$PY" -m gpufolio bench "${ARGS[@]}" >"$LOG/bench.log" 2>&1
  stamp "bench rc=$?"
  tail -40 "$LOG/bench.log" | tee -a "$LOG/steps.log"
fi

if [ "${BF16_PROBE:-1}" = 1 ] && [ ${#GOOD[@]} -gt 0 ]; then
  stamp "probe"
  timeout --kill-after=5 "${BF16_PROBE_TIMEOUT:-120}" "$PY" -m $MOD.probe ${BF16_PROBE_ARGS:---shape 8192 8192 8192 --shape 8192 28672 4096 --shape 2048 2048 2048} \
    >"$LOG/probe.txt" 2>&1
  stamp "probe rc=$?"
  tee -a "$LOG/steps.log" <"$LOG/probe.txt"
fi

stamp "sass"
SO=$("$PY" -c "from gpufolio_projects.gemm_ladder.build import build_dir; import glob; \
print((glob.glob(str(build_dir('gpufolio_bf16_gemm') / '*.so')) or [''])[0])")
CUOBJDUMP=$(command -v cuobjdump || echo /usr/local/cuda/bin/cuobjdump)
if [ -n "$SO" ] && [ -x "$CUOBJDUMP" ]; then
  "$CUOBJDUMP" --dump-sass "$SO" >"$LOG/sass.txt" 2>&1
  "$CUOBJDUMP" --dump-resource-usage "$SO" >"$LOG/resource_usage.txt" 2>&1
  # One line per kernel: HGMMA / HMMA / TMA load / TMA store instruction counts, then the mangled name.
  awk '/Function :/ {f=$3; seen[f]=1} /HGMMA/ {g[f]++} /HMMA/ {h[f]++} /UTMALDG/ {l[f]++} /UTMASTG/ {s[f]++}
       END {for (k in seen) printf "HGMMA=%d HMMA=%d UTMALDG=%d UTMASTG=%d %s\n", g[k], h[k], l[k], s[k], k}' \
    "$LOG/sass.txt" | sort -k5 >"$LOG/sass_counts.txt"
  tee -a "$LOG/steps.log" <"$LOG/sass_counts.txt"
else
  stamp "no .so ($SO) or cuobjdump"
fi

stamp "ncu binary: ${NCU:-none}"
if [ -n "$NCU_VARIANTS" ] && [ -n "$NCU" ]; then
  METRICS="gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,\
sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,sm__throughput.avg.pct_of_peak_sustained_elapsed,\
dram__throughput.avg.pct_of_peak_sustained_elapsed,dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,\
l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__registers_per_thread,launch__grid_size,\
sm__cycles_active.avg,sm__cycles_elapsed.avg,smsp__cycles_active.avg.pct_of_peak_sustained_elapsed"
  # One process for every variant (one extension load; kernels in the order the script prints), so the
  # evidence for all rungs costs one ncu session. Variants that did not pass their GPU tests are left out.
  PROFILED=()
  for v in $NCU_VARIANTS; do
    if [ "$v" = cublas ] || [[ " ${GOOD[*]:-} " =~ " $v " ]]; then PROFILED+=("$v"); fi
  done
  LIST=$(IFS=,; echo "${PROFILED[*]}")
  stamp "ncu ${LIST}"
  timeout "${BF16_NCU_TIMEOUT:-150}" "$NCU" --clock-control none --nvtx --nvtx-include "profile/" -c ${#PROFILED[@]} \
    --metrics "$METRICS" --csv --log-file "$LOG/ncu_rungs.csv" \
    "$PY" -m $MOD.profile "$LIST" 8192 8192 8192 >"$LOG/ncu_order.txt" 2>"$LOG/ncu.err"
  if [ $? != 0 ]; then  # a metric this ncu does not know fails the whole session: retry with the basic set
    stamp "ncu failed ($(tail -c 300 "$LOG/ncu.err" | tr '\n' ' ')); retrying with basic metrics"
    timeout "${BF16_NCU_TIMEOUT:-150}" "$NCU" --clock-control none --nvtx --nvtx-include "profile/" -c ${#PROFILED[@]} \
      --metrics gpu__time_duration.sum,sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,launch__registers_per_thread,launch__grid_size \
      --csv --log-file "$LOG/ncu_rungs.csv" "$PY" -m $MOD.profile "$LIST" 8192 8192 8192 >"$LOG/ncu_order.txt" 2>>"$LOG/ncu.err"
  fi
  stamp "ncu rc=$? ($(grep -c '"gpu__time_duration.sum"' "$LOG/ncu_rungs.csv" 2>/dev/null) kernels)"
  "$PY" -m gpufolio_projects.gemm_ladder.ncu_table "$LOG/ncu_rungs.csv" --order "$LOG/ncu_order.txt" \
    >"$LOG/ncu_table.md" 2>&1
  tee -a "$LOG/steps.log" <"$LOG/ncu_table.md"
fi
stamp "done"
exit 0
