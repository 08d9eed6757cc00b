"""A model of the Gluon backward's barrier protocol (``kernels/gluon_bwd.py``), run under random schedules on CPU.

The forward's model (``gluon_protocol``) for the backward's agents: the producer warp, which loads K and V once
and then Q (with its rows' LSE) and dO (with Δ) block after block into a STAGES-deep ring, and the four warps of
each consumer warpgroup, in the order the kernel issues its waits, arrives, shared-memory reads and writes and
wgmmas, with dQ's wgmma after dK's or before it (``DQ_FIRST``). Every consumer arrive is per-thread (a warp's 32
in one step; barriers count 128 per warpgroup). A wgmma starts once all four warps of its warpgroup have issued
it, reads its shared memory until it completes, and a warpgroup's wgmmas complete in issue order. Checked for
every schedule:

- no deadlock: every agent finishes;
- TMA writes a Q/dO slot only when no wgmma is reading it; every read of a slot (a wgmma's, or a warp's load of
  LSE or Δ) finds the query block it wants, landed;
- a consumer writes its half of a dS buffer only when no dQ wgmma is reading the buffer, and the dQ wgmma reads
  a buffer only when both halves hold its query block;
- with a dQ writer warp (``lab/variants.py``'s "dQ writer warp" variants, ``writer``): a consumer writes its dQ
  tile only when no reduce-add is reading it, and a reduce-add reads a tile only when
  all four of its consumer's warps have written the block it adds. Each writer setting is also played once
  with the writer lagging as far behind as the protocol lets it (it steps only when nothing else can).

The lagging writer found a deadlock in the writer's first protocol, the one timed on the GPU: one ``dq_full``
barrier per consumer, arrived on every block. A consumer that finishes two blocks while the writer has not yet
waited for the first completes two phases, the parity the writer waits for reads as not yet completed, and the
consumer then waits for a dS buffer only the writer can release. On the GPU the writer polls within a few
cycles of the arrival, a block takes thousands, so it never hung there; it was a race all the same. With a
``dq_full`` barrier per tile of each pair (four), a consumer's next arrival on the same barrier is two blocks on,
behind ``ds_empty``, which the writer arrives on only after it has waited out the phase before
(``writer_barriers``: 2 as timed, 4 as fixed).

Each wait dropped in turn (``skip``) shows what it guards: without the wait on ``ds_full`` or ``qdo_empty`` the
checks fail; without the wait on ``ds_empty`` they never do — the next block's ``ds_full`` already orders a
consumer's dS write after the other's dQ wgmma of two blocks before (each consumer arrives on it only after its
previous dQ wgmma has been waited out), so that wait is belt and braces.

With the writer, the wait on ``ds_empty`` also guards the dQ tile pair of two blocks before (the writer arrives
on it once both reduce-adds have read the pair): random schedules rarely reach the overwrite it prevents, the
lagging writer does, so dropping it fails the settings of three blocks or more.

    python -m gpufolio_projects.flash_attention.lab.gluon_bwd_protocol [--schedules 300]
"""
from __future__ import annotations

import argparse
import functools
import random
import sys
from dataclasses import dataclass, field

from .gluon_protocol import LANES, WARPS, Barrier, ProtocolError, first_failure, play

PER = LANES * WARPS  # per-thread arrivals of one consumer warpgroup


@dataclass
class Mma:
    consumer: int
    reads: tuple  # (("q" | "do", slot, block) | ("ds", buffer, block), ...)
    issued: set = field(default_factory=set)
    started: bool = False
    done: bool = False


class Model:
    def __init__(self, n_blocks: int, stages: int, dq_first: bool = False, seed: int = 0, skip: str | None = None,
                 writer: bool = False, writer_barriers: int = 4, lagging_writer: bool = False):
        self.n, self.stages, self.skip = n_blocks, stages, skip  # skip: a barrier whose waits are left out
        self.dq_first = dq_first  # the kernel's DQ_FIRST: dQ's wgmma before dK's, dS released before Q/dO
        # A dQ writer warp with two dQ tile pairs, pair i % 2 released on ds_empty with dS (False: each consumer
        # reduces its own tile, as committed).
        self.writer = writer
        # dq_full barriers: one per consumer (2, as first timed: it can deadlock) or one per tile of each pair (4).
        self.writer_barriers = writer_barriers
        self.lagging_writer = lagging_writer
        self.rng = random.Random(seed)
        self.kv_bar = Barrier(1)
        self.ready = {t: [Barrier(1) for _ in range(stages)] for t in ("q", "do")}
        self.qdo_empty = [Barrier(2 * PER) for _ in range(stages)]
        self.ds_full = [Barrier(2 * PER), Barrier(2 * PER)]
        self.ds_empty = [Barrier(2 * PER + writer), Barrier(2 * PER + writer)]
        self.dq_full = [Barrier(PER) for _ in range(writer_barriers)]
        self.dq = [[[None] * WARPS for _ in range(2)] for _ in range(2)]  # pair, half, warp -> block
        self.reducing: list = []  # (pair, half) of the reduce-adds reading a tile
        self.held = {t: [None] * stages for t in ("q", "do")}  # block in a slot (None: never, or being written)
        self.readers = {("q", s): 0 for s in range(stages)} | {("do", s): 0 for s in range(stages)}
        self.readers |= {("ds", b): 0 for b in range(2)}
        self.ds = [[[None] * WARPS for _ in range(2)] for _ in range(2)]  # buffer, half, warp's rows -> block
        self.mmas: list[Mma] = []
        self.pending: dict[tuple, Mma] = {}  # (consumer, k-th issue) -> its wgmma
        self.issued = {(c, w): 0 for c in range(2) for w in range(WARPS)}
        self.inflight_tma: list = []

    # --- consumers ----------------------------------------------------------------------------------------------

    def _wait(self, bar: Barrier, parity: int):
        yield (lambda: bar.passed(parity)), (lambda: None)

    def _do(self, action):
        yield (lambda: True), action

    def _arrive(self, bar: Barrier):
        yield from self._do(lambda: bar.arrive(LANES))

    def _issue(self, c: int, w: int, *reads):
        def issue():
            k = self.issued[(c, w)]
            self.issued[(c, w)] += 1
            mma = self.pending.setdefault((c, k), Mma(c, reads))
            if mma not in self.mmas:
                self.mmas.append(mma)
            mma.issued.add(w)
            if len(mma.issued) == WARPS:
                for r in mma.reads:
                    self._check_read(c, *r)
                    self.readers[r[:2]] += 1
                mma.started = True
        yield from self._do(issue)

    def _check_read(self, c: int, kind: str, where: int, block: int) -> None:
        if kind == "ds":
            halves = self.ds[where]
            if any(rows != block for half in halves for rows in half):
                raise ProtocolError(f"consumer {c}'s dQ wgmma read dS buffer {where} for block {block}: it holds "
                                    f"{halves}")
        elif self.held[kind][where] != block:
            raise ProtocolError(f"consumer {c} read {kind} slot {where} for block {block}: it holds "
                                f"{self.held[kind][where]}")

    def _mma_wait(self, c: int, w: int, outstanding: int):
        def ready():
            return sum(1 for m in self.mmas if m.consumer == c and w in m.issued and not m.done) <= outstanding
        yield ready, (lambda: None)

    def _write_ds(self, c: int, w: int, b: int, block: int):
        def write():
            if self.readers[("ds", b)]:
                raise ProtocolError(f"consumer {c} wrote dS buffer {b} (block {block}) under a dQ wgmma reading it")
            self.ds[b][c][w] = block
        yield from self._do(write)

    def _write_dq(self, c: int, w: int, block: int):
        def write():
            pair = block % 2
            if (pair, c) in self.reducing:
                raise ProtocolError(f"consumer {c} wrote dQ tile pair {pair} (block {block}) under its reduce-add")
            self.dq[pair][c][w] = block
        yield from self._do(write)

    def _hand_dq(self, c: int, w: int, block: int):
        """The writer variants' end of a query block: the consumer's dQ tile written, fenced, handed over."""
        if self.writer:
            yield from self._write_dq(c, w, block)
            yield from self._arrive(self.dq_full[self._dq_full_index(block, c)])

    def _dq_full_index(self, block: int, half: int) -> int:
        return (block % (self.writer_barriers // 2)) * 2 + half  # a ring of barrier pairs, as the Q/dO ring

    def _dq_full_parity(self, block: int) -> int:
        return (block // (self.writer_barriers // 2)) & 1

    def consumer(self, c: int, w: int):
        yield from self._wait(self.kv_bar, 0)
        for i in range(self.n):
            s, b, ring = i % self.stages, i % 2, (i // self.stages) & 1
            yield from self._wait(self.ready["q"][s], ring)
            yield from self._issue(c, w, ("q", s, i))  # Sᵀ = K_h·Qᵀ
            yield from self._wait(self.ready["do"][s], ring)
            yield from self._issue(c, w, ("do", s, i))  # dPᵀ = V_h·dOᵀ
            yield from self._mma_wait(c, w, 1)
            yield from self._do(lambda s=s, i=i: self._check_read(c, "q", s, i))  # LSE, with Q
            yield from self._mma_wait(c, w, 0)
            yield from self._do(lambda s=s, i=i: self._check_read(c, "do", s, i))  # Δ, with dO
            yield from self._issue(c, w, ("do", s, i))  # dV += Pᵀ·dO
            if self.skip != "ds_empty":
                yield from self._wait(self.ds_empty[b], ((i // 2) & 1) ^ 1)
            yield from self._write_ds(c, w, b, i)
            yield from self._arrive(self.ds_full[b])
            if not self.dq_first:
                yield from self._issue(c, w, ("q", s, i))  # dK += dSᵀ·Q
            if self.skip != "ds_full":
                yield from self._wait(self.ds_full[b], (i // 2) & 1)
            yield from self._issue(c, w, ("ds", b, i))  # dQ's share = dS·K
            if self.dq_first:
                yield from self._issue(c, w, ("q", s, i))  # dK += dSᵀ·Q, in flight under dQ's store
                yield from self._mma_wait(c, w, 1)  # dV and dQ done
                yield from self._arrive(self.ds_empty[b])
                yield from self._hand_dq(c, w, i)
                yield from self._mma_wait(c, w, 0)
                yield from self._arrive(self.qdo_empty[s])
            else:
                yield from self._mma_wait(c, w, 0)
                yield from self._arrive(self.qdo_empty[s])
                yield from self._arrive(self.ds_empty[b])
                yield from self._hand_dq(c, w, i)

    # --- the dQ writer warp -------------------------------------------------------------------------------------

    def dq_writer(self):
        for i in range(self.n):
            pair = i % 2
            for h in range(2):
                yield from self._wait(self.dq_full[self._dq_full_index(i, h)], self._dq_full_parity(i))
                yield from self._do(lambda pair=pair, h=h, i=i: self._reduce(pair, h, i))
            yield (lambda: not self.reducing), (lambda: None)  # store_wait(0): both reduces have read their tiles
            yield from self._do(lambda i=i: self.ds_empty[i % 2].arrive())

    def _reduce(self, pair: int, h: int, block: int) -> None:
        if any(rows != block for rows in self.dq[pair][h]):
            raise ProtocolError(f"the reduce-add of block {block} read dQ tile pair {pair}, half {h}: it holds "
                                f"{self.dq[pair][h]}")
        self.reducing.append((pair, h))

    # --- producer -----------------------------------------------------------------------------------------------

    def producer(self):
        yield from self._do(lambda: (self.kv_bar.expect(), self.inflight_tma.append(("kv", None, None))))
        for i in range(self.n):
            s = i % self.stages
            if self.skip != "qdo_empty":
                yield from self._wait(self.qdo_empty[s], ((i // self.stages) & 1) ^ 1)
            for t in ("q", "do"):
                yield from self._do(lambda t=t, s=s, i=i: self._tma(t, s, i))

    def _tma(self, t: str, s: int, i: int) -> None:
        if self.readers[(t, s)]:
            raise ProtocolError(f"TMA wrote {t} slot {s} (block {i}) under a wgmma reading block {self.held[t][s]}")
        self.ready[t][s].expect()
        self.held[t][s] = None  # being written
        self.inflight_tma.append((t, s, i))

    # --- the scheduler ------------------------------------------------------------------------------------------

    def _events(self):
        events = []
        for k, (t, s, i) in enumerate(self.inflight_tma):
            def land(k=k, t=t, s=s, i=i):
                self.inflight_tma.pop(k)
                if t == "kv":
                    self.kv_bar.complete_tx()
                    return
                self.held[t][s] = i
                self.ready[t][s].complete_tx()
            events.append(land)
        for k in range(len(self.reducing)):
            events.append(lambda k=k: self.reducing.pop(k))  # a reduce-add has read its tile
        for c in range(2):
            first = next((m for m in self.mmas if m.consumer == c and not m.done), None)
            if first is not None and first.started:
                def finish(m=first):
                    m.done = True
                    for r in m.reads:
                        self.readers[r[:2]] -= 1
                events.append(finish)
        return events

    def run(self, max_steps: int = 200_000) -> None:
        agents = {("c", c, w): self.consumer(c, w) for c in range(2) for w in range(WARPS)}
        agents[("p",)] = self.producer()
        if self.writer:
            agents[("w",)] = self.dq_writer()
        play(agents, self._events, self.rng, max_steps, last=("w",) if self.lagging_writer else None)


# (query blocks, ring depth, dQ first): the ring is 2 deep at D = 128 (3 as lab/gluon_probe --bwd tries), 4 at
# D = 64; dQ's wgmma goes first causally at D = 128 (the kernel's DQ_FIRST).
SETTINGS = [(n, st, dq) for dq in (False, True) for st in (2, 3, 4) for n in (1, 2, 3, 5, 8)]


def check(schedules: int, skip: str | None = None, writer: bool = False, writer_barriers: int = 4) -> list[str]:
    """Every setting under ``schedules`` random schedules, and with a writer once more with it lagging; the
    failures (setting: error)."""
    failures = []
    for n, st, dq in SETTINGS:
        model = functools.partial(Model, n, st, dq, skip=skip, writer=writer, writer_barriers=writer_barriers)
        failure = first_failure(model, range(schedules))
        if failure is None and writer:
            failure = first_failure(functools.partial(model, lagging_writer=True), range(1))
            failure = failure and f"writer lagging, {failure}"
        if failure:
            failures.append(f"query blocks={n} stages={st} dq first={dq} {failure}")
    return failures


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--schedules", type=int, default=300, help="random schedules per setting")
    ap.add_argument("--writer", action="store_true", help="with the dQ writer warp of lab/variants.py")
    ap.add_argument("--writer-barriers", type=int, choices=(2, 4), default=4,
                    help="dq_full barriers: 4, one per tile of each pair (as now); 2, one per consumer (as timed)")
    a = ap.parse_args()
    failures = check(a.schedules, writer=a.writer, writer_barriers=a.writer_barriers)
    for f in failures:
        print("FAIL", f, flush=True)
    print(f"{'PASS' if not failures else 'FAIL'}: {a.schedules} schedules per setting, {len(failures)} of "
          f"{len(SETTINGS)} settings failed", flush=True)
    for skip in ("ds_full", "qdo_empty", "ds_empty"):
        caught = check(min(a.schedules, 100), skip=skip, writer=a.writer, writer_barriers=a.writer_barriers)
        print(f"without the waits on {skip}: {len(caught)} of {len(SETTINGS)} settings fail"
              + (f" (first: {caught[0]})" if caught else ""), flush=True)
    return 1 if failures else 0


if __name__ == "__main__":
    sys.exit(main())
