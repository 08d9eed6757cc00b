#!/usr/bin/env bash
# One GPU round for fsdp_mfu, run from the repo root with $OUTDIR set (HELPERS.md). Stages run in priority
# order; each gets what is left of $BUDGET seconds (default 240) so the script never outruns its slot.
# Measured costs on the H200 (torch 2.11, cold Inductor cache): the quick bench (2 compiled cases) ~60 s;
# the GPU tests ~20 s. The llama_125m loss curve did NOT fit 40 s at 300 eager FSDP2 steps: give it more.
set -u
OUT=${OUTDIR:?set OUTDIR}
BUDGET=${BUDGET:-240}
START=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
run() {  # run <name> <max seconds> cmd...: bounded by both its own cap and the budget left
  local name=$1 cap=$2; shift 2
  local t; t=$(left); (( t > cap )) && t=$cap
  if (( t < 10 )); then echo "skip $name: ${t}s left" | tee -a "$OUT/stages.log"; return; fi
  local s=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? ${t}s cap, took $(( $(date +%s) - s ))s" | tee -a "$OUT/stages.log"
  tail -n 25 "$OUT/$name.log"
}
# One Inductor cache for the round: the profile re-uses the bench's compiled graphs instead of compiling again.
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_fsdp_mfu
nvidia-smi --query-gpu=name,memory.used,clocks.sm,power.draw --format=csv > "$OUT/nvidia_smi.txt" 2>&1
run bench 80 python -m gpufolio bench --project fsdp_mfu --quick --variant fsdp2_compile --out "$OUT" \
  --no-progress --timeout 75
run profile 30 python -m gpufolio_projects.fsdp_mfu.profile_step --variant fsdp2_compile --sdpa cudnn \
  --out "$OUT/profile"
run gpu_tests 25 python -m pytest -m gpu projects/fsdp_mfu -q -rA -p no:cacheprovider -s
run loss_curve 100 python -m gpufolio_projects.fsdp_mfu.loss_curve --out "$OUT/loss_curve" --steps ${LC_STEPS:-300}
cat "$OUT/stages.log"
