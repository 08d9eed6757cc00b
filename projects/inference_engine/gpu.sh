#!/usr/bin/env bash
# inference_engine on the GPU box. Run from the repo root with OUTDIR set; every log lands under $OUTDIR.
#   IE_STAGES   which stages, in order (default "bench:decode_b1,offline_throughput,online tests profile"): bench:NAMES = the
#               quick bench of those benches, comma-separated (records under $OUTDIR/inference_engine/),
#               tests = pytest -m gpu, profile = profile_decode.py
#   IE_PROFILE  profile_decode.py stages (default "kernels,step,gemv,offline")
#   IE_TOTAL_S  the round's limit less a margin (default 117); each stage runs under timeout with its own cap
#               (IE_LIMIT_BENCH, IE_LIMIT_TESTS, IE_LIMIT_PROFILE) and never past the total.
# Logs: ie_bench_<names>.log, ie_pytest_gpu.log, ie_profile.log (+ ie_profile.txt, the profile's own summary).
set -u
: "${OUTDIR:?set OUTDIR}"
mkdir -p "$OUTDIR"
TOTAL=${IE_TOTAL_S:-117}
STAGES=${IE_STAGES:-bench:decode_b1,offline_throughput,online tests profile}
nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv > "$OUTDIR/ie_nvidia_smi.txt" 2>&1

limit() {  # min(stage cap, time left)
  local left=$((TOTAL - SECONDS))
  if [ "$1" -lt "$left" ]; then echo "$1"; else echo "$left"; fi
}

for stage in $STAGES; do
  case "$stage" in
    bench:*)
      names=${stage#bench:}
      L=$(limit "${IE_LIMIT_BENCH:-96}")
      args=()
      for b in ${names//,/ }; do args+=(--bench "$b"); done
      log="$OUTDIR/ie_bench_${names//,/_}.log"
      echo "[$SECONDS s] bench (limit ${L}s): ${args[*]}"
      if [ "$L" -gt 5 ]; then
        timeout "$L" python -m gpufolio bench --project inference_engine --quick "${args[@]}" --out "$OUTDIR" \
          --no-progress > "$log" 2>&1
        echo "bench rc=$?" | tee -a "$log"
        tail -6 "$log"
      fi ;;
    tests)
      L=$(limit "${IE_LIMIT_TESTS:-27}")
      echo "[$SECONDS s] pytest -m gpu (limit ${L}s)"
      timeout "$L" python -m pytest -m gpu projects/inference_engine -q -p no:cacheprovider \
        > "$OUTDIR/ie_pytest_gpu.log" 2>&1
      echo "pytest -m gpu rc=$?" | tee -a "$OUTDIR/ie_pytest_gpu.log"
      tail -4 "$OUTDIR/ie_pytest_gpu.log" ;;
    profile)
      L=$(limit "${IE_LIMIT_PROFILE:-40}")
      echo "[$SECONDS s] profile (limit ${L}s)"
      if [ "$L" -gt 5 ]; then
        timeout "$L" python -m gpufolio_projects.inference_engine.profile_decode --out "$OUTDIR" \
          --stages "${IE_PROFILE:-kernels,step,gemv,offline}" > "$OUTDIR/ie_profile.log" 2>&1
        echo "profile rc=$?"
        tail -30 "$OUTDIR/ie_profile.log"
      fi ;;
    *) echo "unknown stage $stage" ;;
  esac
done
echo "[$SECONDS s] done"
