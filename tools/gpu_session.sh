#!/usr/bin/env bash
# One session on an offline GPU box, run from the repo root:
#   OUT=/path/to/out bash tools/gpu_session.sh gemm_ladder:150 flash_attention:120 ...
# Installs carried wheels (.whl/), makes gpufolio importable without a registry, prints the stamp, then runs
# each project's projects/<p>/gpu.sh under its time limit (seconds) with OUTDIR=$WORK/<p>, logging to
# $WORK/<p>/gpu.log. Everything is packed into $OUT/session.tgz: one file travels back whole, where a tree of
# logs would hit the limits on how many files and how deep come back.
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
WORK=${WORK:-/tmp/gpufolio-session}
rm -rf "$WORK" && mkdir -p "$WORK"
export PYTHONUNBUFFERED=1 NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
if compgen -G ".whl/*.whl" >/dev/null; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade --target /tmp/site .whl/*.whl \
    || echo "wheel install failed"
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
# Import names without an install: gpufolio -> tools/gpufolio, gpufolio_projects -> projects.
mkdir -p /tmp/gpufolio-path
ln -sfn "$PWD/tools/gpufolio" /tmp/gpufolio-path/gpufolio
ln -sfn "$PWD/projects" /tmp/gpufolio-path/gpufolio_projects
export PYTHONPATH=/tmp/gpufolio-path:$PYTHONPATH
export GPUFOLIO_BUILD_DIR=/tmp/gpufolio-build TORCH_EXTENSIONS_DIR=/tmp/torch-ext

start=$SECONDS
{ nvidia-smi; python3 -m gpufolio env; } > "$WORK/env.log" 2>&1
echo "stamp: $(grep -m1 '"name"' "$WORK/env.log")  [$((SECONDS - start)) s]"
for spec in "$@"; do
  p=${spec%%:*}; limit=${spec#*:}
  mkdir -p "$WORK/$p"
  t0=$SECONDS
  OUTDIR="$WORK/$p" timeout --kill-after=10 "$limit" bash "projects/$p/gpu.sh" > "$WORK/$p/gpu.log" 2>&1
  rc=$?
  echo "== $p: exit $rc after $((SECONDS - t0)) s (limit $limit)"
  tail -n 25 "$WORK/$p/gpu.log"
done
tar czf "$OUT/session.tgz" -C "$WORK" .
cp "$WORK"/env.log "$OUT/" 2>/dev/null
echo "total $((SECONDS - start)) s"
