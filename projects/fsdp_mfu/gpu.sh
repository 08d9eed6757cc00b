#!/usr/bin/env bash
# One GPU round for fsdp_mfu, run from the repo root with $OUTDIR set (HELPERS.md). Stages run in the order of
# $STAGES; each gets at most its cap and what is left of $BUDGET seconds, so the script never outruns its slot.
#   STAGES            comma list of: bench, profile, loss_curve, gpu_tests (default: this round's)
#   GPU_TESTS_K       pytest -k filter for the gpu_tests stage ("" runs them all, ~20 s)
#   BENCH_VARIANTS    candidates for the bench stage (space separated; the baseline always runs)
#   PROFILE_SETTINGS  settings for profile_step.py (variant[+option...]@B[!], see its docstring)
#   PROFILE_ARGS      more profile_step.py flags (a CPU smoke test: "--model tiny --seq 64 --sdpa auto")
# Costs seen on the H200 (torch 2.11, cold Inductor cache): the quick bench at B=16 with two compiled variants
# 55 s; the byte_25m loss curve (400 eager FSDP2 steps) 31 s; GPU tests ~20 s.
set -u
OUT=${OUTDIR:?set OUTDIR}
BUDGET=${BUDGET:-120}
STAGES=${STAGES:-bench,gpu_tests,profile}
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
# Final round: the headline's records (each carries its kernel-time breakdown), the CUDA check of the folded
# clip, and the top kernels of the FSDP2 step if time is left. The loss curve is round 1's (its code paths have
# not changed since): LC_STEPS / STAGES=...,loss_curve re-run it.
ROUND_SETTINGS="fsdp2_compile+noreshard+fold_clip+fused_proj@32!"
# One Inductor cache for the round: settings and stages that compile the same graph share it.
export TORCHINDUCTOR_CACHE_DIR=/tmp/inductor_fsdp_mfu
nvidia-smi --query-gpu=name,memory.used,clocks.sm,power.draw,power.limit --format=csv > "$OUT/nvidia_smi.txt" 2>&1
for stage in ${STAGES//,/ }; do
  case $stage in
    bench)
      args=(); for v in ${BENCH_VARIANTS:-fsdp2_compile_noreshard fsdp2_compile}; do args+=(--variant "$v"); done
      run bench ${BENCH_CAP:-106} python3 -m gpufolio bench --project fsdp_mfu --quick "${args[@]}" --out "$OUT" \
        --no-progress --timeout 90 ;;
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
      run gpu_tests 30 python3 -m pytest -m gpu projects/fsdp_mfu -q -rA -p no:cacheprovider -s \
        -k "${GPU_TESTS_K:-folded or modes_agree}" ;;
    *) echo "unknown stage $stage" | tee -a "$OUT/stages.log" ;;
  esac
done
cat "$OUT/stages.log"
