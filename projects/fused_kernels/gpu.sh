#!/usr/bin/env bash
# fused_kernels on the GPU box (run from the repo root, $OUTDIR set, the package importable).
# Final round (75 s in all): the headline records only, in one run so every comparison shares a run_id:
# copy (the run's ceiling), add+RMSNorm fwd and fwd+bwd, linear+cross-entropy, SwiGLU fwd+bwd; each with eager,
# torch.compile and Liger in the same run. Earlier rounds also ran `pytest -m gpu` and the sweeps in tune.py.
set -u
OUT="${OUTDIR:?OUTDIR must be set}"
PY="$(command -v python || command -v python3)"
mkdir -p "$OUT"
export TRITON_INTERPRET=0
date -u > "$OUT/env.log"

step() {  # step NAME SECONDS CMD...: run with a time limit, log to $OUT/NAME.log, print the tail
  local name=$1 secs=$2; shift 2
  local t0=$SECONDS
  timeout --kill-after=3 "$secs" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  echo "== $name rc=$rc $((SECONDS - t0))s"; tail -n 25 "$OUT/$name.log"
}

# --timeout: a case that hangs is killed after 40 s and the run goes on (torch.compile's first case takes ~10 s).
step bench 68 "$PY" -m gpufolio bench --project fused_kernels --quick --bench copy --bench add_rmsnorm \
  --bench linear_cross_entropy --bench swiglu --timeout 40 --out "$OUT" --no-progress
exit 0
