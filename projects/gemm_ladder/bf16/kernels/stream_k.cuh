// Rung 15's stream-K schedule: which pieces of work each cluster runs, in what order. Integer arithmetic
// only, the same on host and device: the CPU test (tests/test_bf16_stream_k.py) compiles this header as plain
// C++ and checks the schedule it produces.
//
// Work is counted in k-iterations (BK-wide slices of K) of units (persistent.cuh: a unit is what one cluster
// computes, CLUSTER_M vertically adjacent 128 x 256 tiles). U units of num_k iterations on G clusters:
//   U % G == 0, or U < G: data-parallel only, rung 14's round robin: cluster c runs units c, c + G, c + 2G, ...
//   otherwise: U / G - 1 data-parallel rounds of whole units, then the stream-K phase: the last G + U % G
//     units, laid end to end as one line of (unit, k) iterations and cut into G contiguous ranges whose
//     lengths differ by at most one iteration. Cluster c runs range c, front to back.
// With a stream-K phase every cluster runs ceil(U * num_k / G) iterations or one fewer: at 8192^3, 1024 units of
// 128 iterations on 66 clusters, 1986 instead of the 16 * 128 = 2048 of whole rounds (-3.0%).
//
// Why the stream-K phase starts one round early instead of spreading only the U % G leftover units: every
// range is then at least num_k long, so no unit is cut more than once. The piece holding k = 0 (its owner, which
// stores the tile) is the END of one cluster's range; the rest is the START of the next cluster's range, whose
// partial sums the owner adds once, from the workspace. Per-cluster work is the same either way, but spreading
// only the leftovers cuts every unit into four or five pieces at 8192 x 28672 x 4096 (20 leftover units of 64
// iterations, 19 or 20 per cluster), and each owner would add three or four partial tiles in a row at the end.
// The order makes the fix-up free of waits in the common case and of deadlock in every case: a cluster's only
// contribution is its FIRST stream-K piece (it never waits before making it), its owned, cut unit is its LAST
// piece, and an owner waits only on clusters with a higher index (all resident at once: the launcher's grid).
#pragma once

namespace bf16ladder::stream_k {

struct Segment {
  int unit;            // < 0: the cluster has no work left
  int k_begin, k_end;  // the unit's k-iterations [k_begin, k_end)
};

struct Schedule {
  int units, num_k, clusters;
  int dp_rounds;     // whole units each cluster runs first (unit c + r * clusters for round r)
  int first_sk;      // the stream-K phase's first unit; == units when there is no stream-K phase
  int share, extra;  // stream-K iterations of a cluster: share, plus one for the clusters below `extra`

  Schedule() = default;
  __host__ __device__ Schedule(int units_, int num_k_, int clusters_)
      : units(units_), num_k(num_k_), clusters(clusters_) {
    const int rounds = units / clusters, leftover = units % clusters;
    const bool split = leftover != 0 && rounds >= 1;
    dp_rounds = split ? rounds - 1 : (units + clusters - 1) / clusters;
    first_sk = split ? dp_rounds * clusters : units;
    // At most 2 * clusters units of at most 2^22 iterations (registry.check_shape): no overflow.
    const int iters = (units - first_sk) * num_k;
    share = iters / clusters;
    extra = iters % clusters;
  }

  // Cluster c's range starts at this stream-K iteration (counted from k = 0 of unit first_sk); begin(clusters)
  // is the end of the last range.
  __host__ __device__ int begin(int c) const { return c * share + (c < extra ? c : extra); }

  // The cluster whose range holds stream-K iteration `pos` (only called when there is a stream-K phase).
  __host__ __device__ int cluster_at(int pos) const {
    const int long_ranges = extra * (share + 1);
    return pos < long_ranges ? pos / (share + 1) : extra + (pos - long_ranges) / share;
  }

  // Piece i (0, 1, 2, ...) of cluster c's work, in the order the cluster runs it; unit < 0 past the last.
  __host__ __device__ Segment segment(int c, int i) const {
    if (i < dp_rounds) {
      const int u = c + i * clusters;
      return u < units ? Segment{u, 0, num_k} : Segment{-1, 0, 0};
    }
    const int b = begin(c), e = begin(c + 1);
    const int u = b / num_k + (i - dp_rounds);  // counted from first_sk
    const int lo = i == dp_rounds ? b : u * num_k;
    if (lo >= e) return Segment{-1, 0, 0};
    const int hi = (u + 1) * num_k < e ? (u + 1) * num_k : e;
    return Segment{first_sk + u, lo - u * num_k, hi - u * num_k};
  }

  // A piece with k_begin > 0 is a contribution: its partial sums go to the workspace for the unit's owner. A
  // piece with k_begin == 0 and k_end < num_k is an owner's: before storing the tile it adds the partials of
  // clusters c + 1 .. last_contributor(s) (with this schedule always exactly one, c + 1).
  __host__ __device__ int last_contributor(const Segment& s) const {
    return cluster_at((s.unit - first_sk + 1) * num_k - 1);
  }
};

}  // namespace bf16ladder::stream_k
