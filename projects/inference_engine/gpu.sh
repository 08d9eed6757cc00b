#!/usr/bin/env bash
# inference_engine on the GPU box: GPU tests, then the quick bench (records under $OUTDIR/inference_engine/).
# Run from the repo root with OUTDIR set. Each stage has its own time limit so one hang cannot eat the round.
set -u
: "${OUTDIR:?set OUTDIR}"
mkdir -p "$OUTDIR"
TOTAL=${IE_TOTAL_S:-147}          # the round's limit for this script, less a margin
PROFILE_S=${IE_PROFILE_S:-25}      # kept for the profile after the bench
LIMIT_TESTS=${IE_LIMIT_TESTS:-35}
MODE=${IE_MODE:---quick}

nvidia-smi --query-gpu=name,memory.used,memory.total,clocks.sm --format=csv > "$OUTDIR/ie_nvidia_smi.txt" 2>&1

timeout "$LIMIT_TESTS" python -m pytest -m gpu projects/inference_engine -q -p no:cacheprovider \
  > "$OUTDIR/ie_pytest_gpu.log" 2>&1
echo "pytest -m gpu rc=$?" | tee -a "$OUTDIR/ie_pytest_gpu.log"
tail -5 "$OUTDIR/ie_pytest_gpu.log"

LIMIT_BENCH=$((TOTAL - PROFILE_S - SECONDS))  # whatever the tests left
echo "bench limit ${LIMIT_BENCH}s"
# shellcheck disable=SC2086
timeout "$LIMIT_BENCH" python -m gpufolio bench --project inference_engine $MODE --out "$OUTDIR" --no-progress \
  > "$OUTDIR/ie_bench.log" 2>&1
echo "bench rc=$?" | tee -a "$OUTDIR/ie_bench.log"
tail -15 "$OUTDIR/ie_bench.log"

LIMIT_PROFILE=$((TOTAL - SECONDS))
if [ "$LIMIT_PROFILE" -gt 5 ]; then
  timeout "$LIMIT_PROFILE" python -m gpufolio_projects.inference_engine.profile_decode --out "$OUTDIR" \
    > "$OUTDIR/ie_profile.log" 2>&1
  echo "profile rc=$?"
  tail -40 "$OUTDIR/ie_profile.log"
fi
