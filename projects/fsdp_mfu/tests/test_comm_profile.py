"""NCCL time, hidden and exposed, from kernel intervals (comm_profile.py), on hand-made timelines."""
from __future__ import annotations

import pytest
from gpufolio_projects.fsdp_mfu.comm_profile import comm_metrics, comm_overlap, intersection, union


def test_union_merges_touching_and_nested_spans():
    assert union([(5, 6), (0, 2), (1, 3), (3, 4), (7, 9), (7.5, 8)]) == [(0, 4), (5, 6), (7, 9)]
    assert union([]) == []


def test_intersection_of_two_timelines():
    assert intersection([(0, 10)], [(2, 3), (5, 12)]) == 6
    assert intersection([(0, 1), (4, 5)], [(1, 4)]) == 0


def test_comm_overlap_per_step():
    # two steps (us): an all-gather half under a GEMM, a reduce-scatter fully exposed, two NCCL kernels overlapping
    kernels = [("nvjet_sm90_gemm", 0, 1000), ("ncclDevKernel_AllGather_RING_LL", 500, 1500),
               ("ncclDevKernel_ReduceScatter_RING", 2000, 3000), ("ncclDevKernel_AllReduce", 2500, 3000),
               ("triton_poi_fused_add", 3000, 4000)]
    m = comm_overlap(kernels, steps=2)
    assert m["nccl_ms"] == pytest.approx(2.0 / 2)  # [500, 1500] + [2000, 3000] us = 2 ms over 2 steps
    assert m["overlapped_ms"] == pytest.approx(0.5 / 2)
    assert m["exposed_ms"] == pytest.approx(1.5 / 2)
    assert comm_overlap([("nvjet", 0, 10)], 1) == {"nccl_ms": 0.0, "overlapped_ms": 0.0, "exposed_ms": 0.0}


def test_comm_metrics_mean_over_ranks():
    ranks = [{"nccl_ms": 10.0, "overlapped_ms": 8.0, "exposed_ms": 2.0},
             {"nccl_ms": 30.0, "overlapped_ms": 12.0, "exposed_ms": 18.0}]
    m = comm_metrics(ranks, step_ms=100.0)
    assert m["nccl_pct"][0] == pytest.approx(20.0) and m["exposed_comm_pct"][0] == pytest.approx(10.0)
    assert m["comm_overlap_pct"][0] == pytest.approx(50.0)
    assert "comm_overlap_pct" not in comm_metrics([{"nccl_ms": 0.0, "overlapped_ms": 0.0, "exposed_ms": 0.0}], 1.0)
    assert comm_metrics([], 1.0) == {}
