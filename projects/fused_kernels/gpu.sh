#!/usr/bin/env bash
# fused_kernels on the GPU box (run from the repo root, $OUTDIR set, the package importable).
# Order = priority: the stamped bench first, then the gpu tests, then tuning sweeps (logs only, no records).
# Every step has its own timeout so one hang cannot eat the round; all logs go under $OUTDIR.
set -u
OUT="${OUTDIR:?OUTDIR must be set}"
PY="$(command -v python || command -v python3)"
P=projects/fused_kernels
mkdir -p "$OUT"

{ date -u; nvidia-smi --query-gpu=name,clocks.sm,clocks.mem,temperature.gpu --format=csv 2>&1
  "$PY" -c "import torch, triton; print('torch', torch.__version__, 'triton', triton.__version__)"
  "$PY" -c "import liger_kernel, importlib.metadata as m; print('liger-kernel', m.version('liger-kernel'))" 2>&1
} > "$OUT/env.log" 2>&1

step() {  # step NAME SECONDS CMD...: run with a time limit, log to $OUT/NAME.log, print the tail
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout --kill-after=5 "$secs" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s"; tail -n 25 "$OUT/$name.log"
}

export TRITON_INTERPRET=0
# Round 2: host-vs-kernel breakdown first (is add+RMSNorm fwd+bwd host-bound?), then every bench, then sweeps.
step tune_prof 22 "$PY" -m gpufolio_projects.fused_kernels.tune prof
step bench 105 "$PY" -m gpufolio bench --project fused_kernels --quick --out "$OUT" --no-progress
step tune_sweeps 16 "$PY" -m gpufolio_projects.fused_kernels.tune copy norm swiglu
exit 0
