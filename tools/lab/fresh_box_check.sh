#!/usr/bin/env bash
# The README's "On a GPU box" commands, typed as a new user would on an offline GPU machine, with a verdict.
# Run from the root of a fresh copy of the tree that carries .whl/ (the README's wheel list) and
# .gpufolio/provenance.json (`python -m gpufolio provenance` before copying):
#
#   OUT=/path/to/out bash tools/lab/fresh_box_check.sh [STAGE ...]
#
# Stages (default: gemm fused compare no_nvcc refusal tests_gpu; each under its own time limit, so they can also be run
# one call at a time):
#   gemm       nox -s bench -- --project gemm_ladder --quick
#   fused      nox -s bench -- --project fused_kernels --quick --compare-to latest
#   compare    python -m gpufolio compare latest~1 latest --project fused_kernels   (the session's python)
#   no_nvcc    the bench with CUDA_HOME pointing nowhere: gemm_ladder skipped with the reason, the rest runs
#   refusal    the bench with CUDA_VISIBLE_DEVICES empty: a one-line refusal, exit 2, no records
#   tests_gpu  nox -s tests_gpu
# Every invocation first does the README's offline step (wheels into .whl/site, PYTHONPATH). Logs go to
# $OUT/<stage>.log, new results files to $OUT/records/<project>/, the verdict to stdout and $OUT/verdict.txt.
set -uo pipefail
: "${OUT:?set OUT to an output folder}"
cd "$(dirname "$0")/../.."
mkdir -p "$OUT/records"
STAGE_LIMIT_S=${STAGE_LIMIT_S:-540}
stages=("$@")
[ ${#stages[@]} -eq 0 ] && stages=(gemm fused compare no_nvcc refusal tests_gpu)
verdicts=()
verdict() { verdicts+=("$1: $2"); echo "== $1: $2"; }

# --- the README's offline step, on the box ------------------------------------------------------------------
if ! compgen -G ".whl/*.whl" >/dev/null; then
  echo "no wheels in .whl/: this check is the offline path (see README, On a GPU box)"; exit 2
fi
[ -f .gpufolio/provenance.json ] || echo "warning: no .gpufolio/provenance.json: records will have no commit"
python3 -m pip install -q --no-index --no-deps --upgrade --target .whl/site .whl/*.whl && export PYTHONPATH=$PWD/.whl/site
python3 -m nox --version >/dev/null 2>&1 || { echo "nox is not importable after the wheel install"; exit 2; }

results() { ls projects/*/results/*.jsonl 2>/dev/null | sort; }

# stage NAME COMMAND...: run it under the limit with its log, then copy the results files it added to $OUT.
stage() {
  local name=$1; shift
  local before; before=$(results)
  local t0=$SECONDS
  timeout --kill-after=15 "$STAGE_LIMIT_S" "$@" > "$OUT/$name.log" 2>&1
  local rc=$?
  NEW=$(comm -13 <(echo "$before") <(results))
  for f in $NEW; do mkdir -p "$OUT/records/$(basename "$(dirname "$(dirname "$f")")")" && cp "$f" "$_/"; done
  echo "-- $name: exit $rc after $((SECONDS - t0)) s; new results: ${NEW:-none}"
  tail -n 15 "$OUT/$name.log"
  RC=$rc
}

# status counts of the records in the files just added, e.g. "ok=40 skipped=2"; empty when there are none.
statuses() {
  [ -n "$NEW" ] || return 0
  python3 - $NEW <<'EOF'
import collections, json, sys
c = collections.Counter(json.loads(l)["status"] for f in sys.argv[1:] for l in open(f) if l.strip())
print(" ".join(f"{k}={v}" for k, v in sorted(c.items())))
EOF
}

has() { grep -q -- "$1" "$OUT/$2.log"; }

for s in "${stages[@]}"; do
  case $s in
    gemm)
      stage gemm python3 -m nox -s bench -- --project gemm_ladder --quick
      st=$(statuses)
      if [ $RC -eq 0 ] && has "^GPU: .*NVIDIA" gemm && has "^nvcc: .*CUDA" gemm && [[ $st == *ok=* ]]; then
        verdict gemm "PASS ($st)"; else verdict gemm "FAIL (exit $RC; records: ${st:-none})"; fi ;;
    fused)
      stage fused python3 -m nox -s bench -- --project fused_kernels --quick --compare-to latest
      st=$(statuses)
      if [ $RC -eq 0 ] && [[ $st == *ok=* ]] && has "rule: faster / slower" fused; then
        verdict fused "PASS ($st; comparison printed)"; else verdict fused "FAIL (exit $RC; records: ${st:-none})"; fi ;;
    compare)
      stage compare .nox/bench/bin/python -m gpufolio compare latest~1 latest --project fused_kernels
      if [ $RC -eq 0 ] && has "B/A" compare; then verdict compare PASS; else verdict compare "FAIL (exit $RC)"; fi ;;
    no_nvcc)
      stage no_nvcc env CUDA_HOME=/nonexistent python3 -m nox -s bench -- --project gemm_ladder \
        --project fused_kernels --bench copy --quick
      st=$(statuses)
      if [ $RC -eq 0 ] && has "gemm_ladder: skipped: nvcc not found" no_nvcc && [[ $st == *ok=* ]]; then
        verdict no_nvcc "PASS (gemm_ladder skipped with the reason; fused_kernels copy: $st)"
      else verdict no_nvcc "FAIL (exit $RC; records: ${st:-none})"; fi ;;
    refusal)
      stage refusal env CUDA_VISIBLE_DEVICES= python3 -m nox -s bench -- --project fused_kernels --quick
      if [ $RC -ne 0 ] && [ -z "$NEW" ] && [ "$(grep -c "^gpufolio bench: cannot run here: .*sees no CUDA GPU" "$OUT/refusal.log")" = 1 ]; then
        verdict refusal "PASS (one line: $(grep -m1 "^gpufolio bench: cannot run here" "$OUT/refusal.log" | cut -c1-100))"
      else verdict refusal "FAIL (exit $RC; new results: ${NEW:-none})"; fi ;;
    tests_gpu)
      stage tests_gpu python3 -m nox -s tests_gpu
      if [ $RC -eq 0 ] && has " passed" tests_gpu; then verdict tests_gpu "PASS ($(grep -Eo '[0-9]+ passed[^=]*' "$OUT/tests_gpu.log" | tail -1))"
      else verdict tests_gpu "FAIL (exit $RC)"; fi ;;
    *) verdict "$s" "unknown stage" ;;
  esac
done

printf '%s\n' "${verdicts[@]}" > "$OUT/verdict.txt"
echo
echo "verdict:"
cat "$OUT/verdict.txt"
! grep -q -v ": PASS" "$OUT/verdict.txt"
