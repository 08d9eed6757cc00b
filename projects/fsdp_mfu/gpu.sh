#!/usr/bin/env bash
# One GPU round for fsdp_mfu, run from the repo root with $OUTDIR set (HELPERS.md). Stages run in the order of
# $STAGES; each gets at most its cap and what is left of $BUDGET seconds, so the script never outruns its slot.
#   STAGES            comma list of: bench, profile, loss_curve, gpu_tests (default: this round's)
#   BENCH_VARIANTS    candidates for the bench stage (space separated; the baseline always runs)
#   PROFILE_SETTINGS  settings for profile_step.py (variant[+option...]@B[!], see its docstring)
#   PROFILE_ARGS      more profile_step.py flags (a CPU smoke test: "--model tiny --seq 64 --sdpa auto")
# Costs seen on the H200 (torch 2.11, cold Inductor cache): a compiled ~1B case ~11-40 s; GPU tests ~20 s.
set -u
OUT=${OUTDIR:?set OUTDIR}
BUDGET=${BUDGET:-120}
STAGES=${STAGES:-bench,profile,loss_curve}
START=$(date +%s)
left() { echo $(( BUDGET - ($(date +%s) - START) )); }
run() {  # run <name> <max seconds> cmd...: bounded by both its own cap and the budget left
  local name=$1 cap=$2; shift 2
  local t; t=$(left); (( t > cap )) && t=$cap
  if (( t < 10 )); then echo "skip $name: ${t}s left" | tee -a "$OUT/stages.log"; return; fi
  local s=$(date +%s)
  timeout "$t" "$@" > "$OUT/$name.log" 2>&1
  echo "$name rc=$? ${t}s cap, took $(( $(date +%s) - s ))s" | tee -a "$OUT/stages.log"
  grep -v "USDT\|profiler_st" "$OUT/$name.log" | tail -n 40
}
# This round: the headline's records first (their kernel-time breakdown is part of each record), then the
# GEMM shapes alone, the top kernels of the FSDP2 step, cheap ablations (same graphs: Inductor cache hits), one
# that compiles (split projections), and the loss curve with what is left.
ROUND_SETTINGS="gemms fsdp2_compile+noreshard+fold_clip+fused_proj@16! fsdp2_compile+fold_clip+fused_proj@16
  fsdp2_compile+noreshard+fused_proj@16 fsdp2_compile+noreshard+fold_clip@16"
# One Inductor cache for the round: settings and stages that compile the same graph share it.
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_fsdp_mfu
nvidia-smi --query-gpu=name,memory.used,clocks.sm,power.draw,power.limit --format=csv > "$OUT/nvidia_smi.txt" 2>&1
for stage in ${STAGES//,/ }; do
  case $stage in
    bench)
      args=(); for v in ${BENCH_VARIANTS:-fsdp2_compile_noreshard}; do args+=(--variant "$v"); done
      run bench ${BENCH_CAP:-75} python3 -m gpufolio bench --project fsdp_mfu --quick "${args[@]}" --out "$OUT" \
        --no-progress --timeout 70 ;;
    profile)
      # shellcheck disable=SC2086
      run profile ${PROFILE_CAP:-30} python3 -m gpufolio_projects.fsdp_mfu.profile_step --out "$OUT/profile" \
        --profile-first 0 --warmup 3 --steps 6 ${PROFILE_ARGS:-} --settings ${PROFILE_SETTINGS:-$ROUND_SETTINGS} ;;
    loss_curve)
      # training stops itself ~8 s before the stage's end (interpreter start-up before it, the final evaluation,
      # stamp and plot after it)
      t=$(left); (( t > 70 )) && t=70
      run loss_curve 70 python3 -m gpufolio_projects.fsdp_mfu.loss_curve --out "$OUT/loss_curve" \
        --steps "${LC_STEPS:-400}" --max-seconds $(( t > 18 ? t - 8 : 10 )) ;;
    gpu_tests)
      run gpu_tests 30 python3 -m pytest -m gpu projects/fsdp_mfu -q -rA -p no:cacheprovider -s ;;
    *) echo "unknown stage $stage" | tee -a "$OUT/stages.log" ;;
  esac
done
cat "$OUT/stages.log"
