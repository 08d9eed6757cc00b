"""Rung 15's stream-K schedule, the real header (bf16/kernels/stream_k.cuh) compiled as host C++: every (unit, k)
is computed once, each unit is stored by one owner, and the order and balance the kernel relies on hold (CPU)."""
from __future__ import annotations

import math
import random
import shutil
import subprocess
from collections import defaultdict

import pytest
from gpufolio_projects.gemm_ladder.bf16 import registry

# Prints, per case read from stdin ("units num_k clusters"), the schedule's fields and then every piece of every
# cluster in the order the cluster runs it, with last_contributor for the owner of a cut unit (else -1).
DUMP = r"""
#include <cstdio>
#include "stream_k.cuh"
using bf16ladder::stream_k::Schedule;
using bf16ladder::stream_k::Segment;
int main() {
  int units, num_k, clusters;
  while (std::scanf("%d %d %d", &units, &num_k, &clusters) == 3) {
    const Schedule s(units, num_k, clusters);
    std::printf("case %d %d %d %d %d\n", units, num_k, clusters, s.dp_rounds, s.first_sk);
    for (int c = 0; c < clusters; ++c)
      for (int i = 0;; ++i) {
        const Segment g = s.segment(c, i);
        if (g.unit < 0) break;
        const bool cut_owner = g.k_begin == 0 && g.k_end < num_k;
        std::printf("%d %d %d %d %d\n", c, g.unit, g.k_begin, g.k_end, cut_owner ? s.last_contributor(g) : -1);
      }
  }
  return 0;
}
"""

# (units, num_k, clusters). Rung 15's three timed shapes on 66 clusters (8192^3: 32 x 32 units of 128
# iterations; 4096^3: 16 x 16 of 64; 8192 x 28672 x 4096: 32 x 112 of 64), the ragged 4099 x 4104 x 776 of the
# GPU tests (17 x 17 units of 13), whole rounds, fewer units than clusters, one more, and tiny K.
SHAPES = [(1024, 128, 66), (256, 64, 66), (3584, 64, 66), (289, 13, 66), (1024, 128, 64), (64, 128, 66),
          (16, 64, 66), (67, 128, 66), (131, 2, 66), (1000, 1, 66), (1000, 2, 66), (133, 3, 66), (5, 7, 1),
          (7, 5, 2), (1, 1, 1), (2, 1, 3), (200, 1, 132), (97, 16, 33)]
_rng = random.Random(15)
RANDOM = [(_rng.randint(1, 1500), _rng.randint(1, 160), _rng.randint(1, 132)) for _ in range(250)]


def _compile(out_dir) -> str:
    src = out_dir / "stream_k_dump.cpp"
    src.write_text(DUMP)
    exe = out_dir / "stream_k_dump"
    host = shutil.which("c++") or shutil.which("g++") or shutil.which("clang++")
    if host:  # the CUDA qualifiers defined away: the header is plain C++ underneath
        cmd = [host, "-std=c++17", "-O1", "-D__host__=", "-D__device__=", "-I", str(registry.KERNEL_DIR), str(src)]
    elif shutil.which("nvcc"):
        cmd = ["nvcc", "-std=c++17", "-x", "cu", "-I", str(registry.KERNEL_DIR), str(src)]
    else:
        pytest.skip("no C++ compiler")
    proc = subprocess.run([*cmd, "-o", str(exe)], capture_output=True, text=True, timeout=300)
    assert proc.returncode == 0, proc.stderr[-3000:]
    return str(exe)


@pytest.fixture(scope="module")
def schedules(tmp_path_factory):
    """(units, num_k, clusters) -> (dp_rounds, first_sk, {cluster: [(unit, k_begin, k_end, last_contributor)]})."""
    exe = _compile(tmp_path_factory.mktemp("stream_k"))
    cases = SHAPES + RANDOM
    text = subprocess.run([exe], input="".join(f"{u} {k} {c}\n" for u, k, c in cases), capture_output=True,
                          text=True, check=True, timeout=300).stdout
    out, pieces = {}, None
    for line in text.splitlines():
        f = [int(x) for x in line.split()[1:]] if line.startswith("case") else [int(x) for x in line.split()]
        if line.startswith("case"):
            pieces = defaultdict(list)
            out[tuple(f[:3])] = (f[3], f[4], pieces)
        else:
            pieces[f[0]].append(tuple(f[1:]))
    assert set(out) == set(cases)
    return out


def check(units, num_k, clusters, dp_rounds, first_sk, pieces):
    stream_k = units % clusters != 0 and units > clusters
    assert first_sk == ((units // clusters - 1) * clusters if stream_k else units)
    # Every (unit, k) exactly once: each unit's pieces tile [0, num_k) with no gap, overlap or empty piece.
    by_unit = defaultdict(list)
    for c, ps in pieces.items():
        for i, (u, kb, ke, _) in enumerate(ps):
            assert 0 <= u < units and 0 <= kb < ke <= num_k, (c, i, u, kb, ke)
            by_unit[u].append((kb, ke, c, i))
    assert sorted(by_unit) == list(range(units))
    for u, ps in by_unit.items():
        ps.sort()
        assert ps[0][0] == 0 and ps[-1][1] == num_k and all(a[1] == b[0] for a, b in zip(ps, ps[1:])), (u, ps)
        owner = ps[0][2]
        if len(ps) > 1:  # a cut unit: no unit is cut more than once, and the next cluster holds its second piece
            assert u >= first_sk and len(ps) == 2, (u, ps)
            (_, _, c_owner, i_owner), (_, _, c_other, i_other) = ps
            assert c_other == owner + 1
            # the contribution is the contributor's first stream-K piece; the owner's piece is its last
            assert i_other == dp_rounds and i_owner == len(pieces[owner]) - 1
            # the kernel's owner loop adds the partials of clusters owner + 1 .. last_contributor
            assert pieces[owner][i_owner][3] == c_other
        else:
            assert pieces[owner][ps[0][3]][3] == -1
    for c, ps in pieces.items():
        # data-parallel rounds first, rung 14's round robin of whole units
        for r, (u, kb, ke, _) in enumerate(ps[:dp_rounds]):
            assert (u, kb, ke) == (c + r * clusters, 0, num_k)
        sk = ps[dp_rounds:]
        assert stream_k or not sk
        assert len(sk) <= 3  # [tail of a unit] [whole units] [head of a unit], each range < 2 units
        assert all(kb == 0 for _, kb, _, _ in sk[1:])  # at most one contribution, made before anything else
        assert all(ke == num_k for _, _, ke, _ in sk[:-1])  # a cut unit is owned only by the last piece
        if sk:  # one contiguous run of the line of units
            assert [u for u, *_ in sk] == list(range(sk[0][0], sk[0][0] + len(sk)))
    work = [sum(ke - kb for _, kb, ke, _ in pieces.get(c, [])) for c in range(clusters)]
    assert max(work) == (math.ceil(units * num_k / clusters) if units >= clusters else num_k)
    if stream_k:
        assert max(work) - min(work) <= 1


@pytest.mark.parametrize("case", SHAPES, ids=lambda s: "x".join(map(str, s)))
def test_schedule_covers_every_k_iteration_once_in_the_kernels_order(schedules, case):
    check(*case, *schedules[case])


def test_schedule_on_random_shapes(schedules):
    for case in RANDOM:
        check(*case, *schedules[case])


@pytest.mark.parametrize("case,rung14,rung15", [((1024, 128, 66), 16 * 128, 1986),  # 8192^3: 64 clusters, 16 rounds
                                                 ((256, 64, 66), 4 * 64, 249),  # 4096^3: 64 clusters, 4 rounds
                                                 ((3584, 64, 66), 55 * 64, 3476)])  # MLP: 66 clusters, 55 rounds
def test_stream_k_shortens_the_longest_cluster_by_the_whole_rounds_quantisation(schedules, case, rung14, rung15):
    """The README's bound for rung 15: the busiest cluster's k-iterations, against rung 14's whole rounds."""
    _, _, pieces = schedules[case]
    assert max(sum(ke - kb for _, kb, ke, _ in ps) for ps in pieces.values()) == rung15 < rung14

