"""Runs a scheduled batch on the device: builds the model and the KV pool, prepares inputs, samples.

KV pool: one tensor ``kv_cache: [2, layers, num_blocks + 1, block_size, H_kv, D]``; the extra last block is
scratch that padding rows of a CUDA-graph batch write into. On a GPU the pool takes what is left of
``gpu_memory_utilization · total memory`` after the weights and an activation reserve.

Decode runs in CUDA graphs captured per batch-size bucket (a batch is padded up to its bucket). The graph does
a whole step in place — slot mapping from positions and block tables, forward, sampling, then
``input_ids <- sampled``, ``positions += 1``, ``context_lens += 1`` — so replaying it k times runs k decode
steps with no host work in between (multi-step decode) and one sync at the end.

A short prefill of one fresh sequence (no cached prefix, the whole prompt in one step — a lone request, the
batch-1 case) also runs as a CUDA graph, captured per token bucket (``PREFILL_GRAPH_BUCKETS``): eagerly its ~150
launches cost ~6 ms of host time for ~1 ms of GPU work. The prompt is padded at the end (token 0, the scratch
block's slots); causal attention keeps the padding out of every real token's output.
"""
from __future__ import annotations

import bisect
import itertools
from typing import Optional

import torch

from .attention import AttentionMetadata
from .config import EngineConfig
from .model import KernelChoice, LlamaForCausalLM, load_hf_weights, random_init_
from .sampler import Sampler
from .scheduler import ScheduledBatch
from .sequence import Sequence

FUSED_DECODE_MAX_BATCH = 16  # triton_gemv.MAX_M: the fused GEMVs pad the batch to 16 rows
GRAPH_BUCKETS = (1, 2, 4, 8, 16, 24, 32, 48, 64, 96, 128, 160, 192, 224, 256, 320, 384, 448, 512)
PREFILL_GRAPH_BUCKETS = (32, 64, 128, 256, 512)  # tokens; longer prompts are GPU-bound, eager costs them little


class ModelRunner:
    def __init__(self, config: EngineConfig):
        self.config = config
        self.device = torch.device(config.device)
        self.dtype = getattr(torch, config.dtype)
        self.block_size = config.cache.block_size
        mc = config.model_config
        self.vocab_size = mc.vocab_size
        # lookahead: multi-step decode may write up to num_decode_steps positions past max_model_len
        self.max_blocks_per_seq = -(-(config.max_model_len + config.scheduler.num_decode_steps) // self.block_size)
        self.model = self._build_model()
        self.num_blocks = self._num_blocks()
        self.scratch_block = self.num_blocks
        self.kv_cache = torch.zeros(2, mc.num_hidden_layers, self.num_blocks + 1, self.block_size,
                                    mc.num_key_value_heads, mc.head_dim, dtype=self.dtype, device=self.device)
        self.kv_caches = [(self.kv_cache[0, i], self.kv_cache[1, i]) for i in range(mc.num_hidden_layers)]
        self.sampler = Sampler()
        self.use_graphs = config.cuda_graphs and self.device.type == "cuda"
        self.max_batch = config.scheduler.max_num_seqs
        self._alloc_decode_buffers()
        self.graphs: dict[tuple[int, bool], torch.cuda.CUDAGraph] = {}
        # (padded batch, ((seq_id, len), ...)) whose decode inputs the device buffers hold; None: unknown
        self._resident: Optional[tuple] = None
        self._resident_blocks: list[int] = []
        self.graph_buckets = [b for b in GRAPH_BUCKETS if b <= min(config.max_graph_batch, self.max_batch)]
        if self.use_graphs:
            self.graph_pool = torch.cuda.graph_pool_handle()
            for b in reversed(self.graph_buckets):  # largest first: the smaller ones reuse its memory
                self._capture(b, greedy_only=True)
        # prefill graphs, captured on first use: bucket -> (graph, the logits it writes, the tensors it reads
        # that nothing else holds); a pool of their own
        self.prefill_buckets = [b for b in PREFILL_GRAPH_BUCKETS
                                if b <= min(config.max_model_len, config.scheduler.max_num_batched_tokens)]
        self.prefill_graphs: dict[int, tuple[torch.cuda.CUDAGraph, torch.Tensor, tuple]] = {}
        self.prefill_graph_error: Optional[str] = None  # why prefill graphs were switched off, if they were
        if self.use_graphs and self.prefill_buckets:
            self.prefill_pool = torch.cuda.graph_pool_handle()
            # [ids | slots | last]: one host-to-device copy per call; positions are always 0 .. T-1
            self.prefill_io = torch.zeros(2 * self.prefill_buckets[-1] + 1, dtype=torch.int64, device=self.device)

    # -- setup --------------------------------------------------------------------------------------------
    @torch.no_grad()
    def _build_model(self) -> LlamaForCausalLM:
        cfg = self.config
        use_triton = cfg.kernels == "triton" or (cfg.kernels == "auto" and self.device.type == "cuda")
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg.model_config, cfg.max_model_len + cfg.scheduler.num_decode_steps,
                                     KernelChoice(use_triton, cfg.skinny_max_m, cfg.fused_decode), cfg.flash_prefill)
        model.to_empty(device=self.device)
        model.tie_weights()  # to_empty replaces each module's parameter separately, which unties them
        for layer in model.layers:
            layer.self_attn.rope.reset()
        if cfg.model is not None:
            load_hf_weights(model, cfg.model)
        else:
            random_init_(model, cfg.seed)
        model.to(self.dtype)
        for layer in model.layers:  # to(dtype) cast the RoPE table too; keep it fp32
            layer.self_attn.rope.reset()
        return model.eval()

    def _num_blocks(self) -> int:
        cache, mc, sc = self.config.cache, self.config.model_config, self.config.scheduler
        if cache.num_blocks is not None:
            return cache.num_blocks
        if self.device.type != "cuda":
            return 4 * self.max_blocks_per_seq
        import gc

        gc.collect()
        torch.cuda.empty_cache()  # memory cached by earlier work in this process counts as free here
        elem = self.dtype.itemsize
        free, total = torch.cuda.mem_get_info(self.device)
        # activations of the largest prefill step, and fp32 logits (+ sort buffers, the seeded noise's int64
        # hashes) of the largest decode batch
        act = sc.max_num_batched_tokens * (6 * mc.hidden_size + 4 * mc.intermediate_size) * elem
        act += sc.max_num_seqs * mc.vocab_size * 4 * 8 + (512 << 20)
        budget = free - (1.0 - cache.gpu_memory_utilization) * total - act
        block_bytes = mc.kv_bytes_per_token(elem) * self.block_size
        num = int(budget // block_bytes)
        if num < self.max_blocks_per_seq:
            raise RuntimeError(f"KV pool of {num} blocks cannot hold one max_model_len sequence; "
                               "raise gpu_memory_utilization or lower max_model_len")
        return num

    def _alloc_decode_buffers(self) -> None:
        B, W, dev = self.max_batch, self.max_blocks_per_seq, self.device
        self.input_ids = torch.zeros(B, dtype=torch.int64, device=dev)
        self.positions = torch.zeros(B, dtype=torch.int64, device=dev)
        self.context_lens = torch.zeros(B, dtype=torch.int32, device=dev)
        self.block_tables = torch.full((B, W), self.scratch_block, dtype=torch.int32, device=dev)
        self.temperatures = torch.zeros(B, dtype=torch.float32, device=dev)
        self.top_k = torch.full((B,), self.vocab_size, dtype=torch.int64, device=dev)
        self.top_p = torch.ones(B, dtype=torch.float32, device=dev)
        self.seeds = torch.zeros(B, dtype=torch.int64, device=dev)
        self.step_tokens = torch.zeros(self.config.scheduler.num_decode_steps, B, dtype=torch.int64, device=dev)

    # -- decode ---------------------------------------------------------------------------------------------
    def _decode_body(self, b: int, greedy_only: bool) -> None:
        """One decode step for rows [0, b) of the static buffers, advancing them in place."""
        ids, pos, ctx, bt = self.input_ids[:b], self.positions[:b], self.context_lens[:b], self.block_tables[:b]
        kernels = self.model.kernels
        if kernels.triton and kernels.fused_decode and b <= FUSED_DECODE_MAX_BATCH:
            from .fused_decode import decode_logits  # imported late: TRITON_INTERPRET is read at import

            logits = decode_logits(self.model, ids, pos, self.kv_caches, bt, ctx)
        else:
            bs = self.block_size
            slot = bt.gather(1, (pos // bs).unsqueeze(1)).squeeze(1).long() * bs + pos % bs
            meta = AttentionMetadata(False, bs, slot, bt, ctx)
            hidden = self.model(ids, pos, self.kv_caches, meta)
            logits = self.model.compute_logits(hidden, upcast=not greedy_only)
        # the sampled token's position is pos + 1: the counter of the seeded noise
        tokens = self.sampler(logits, self.temperatures[:b], self.top_k[:b], self.top_p[:b], greedy_only,
                              self.seeds[:b], pos + 1)
        ids.copy_(tokens)  # the sampled token is the next step's input (and what run_decode reads back)
        pos.add_(1)
        ctx.add_(1)

    def _reset_padding(self, start: int, end: int) -> None:
        """Rows [start, end) become padding: a context of 0 in the scratch block."""
        self.input_ids[start:end] = 0
        self.positions[start:end] = 0
        self.context_lens[start:end] = 0
        self.block_tables[start:end] = self.scratch_block
        self.temperatures[start:end] = 0.0

    @torch.inference_mode()
    def _capture(self, b: int, greedy_only: bool) -> None:
        self.graphs[(b, greedy_only)] = self.capture_decode_graph(b, greedy_only, self.graph_pool)

    @torch.inference_mode()
    def capture_decode_graph(self, b: int, greedy_only: bool, pool=None) -> torch.cuda.CUDAGraph:
        """One decode step for rows [0, b) as a CUDA graph, with the kernels ``self.model.kernels`` names now.
        The engine's graphs share ``self.graph_pool``; a graph for a comparison (profiling another kernel path)
        takes a pool of its own (pool=None), so the engine's graphs stay valid."""
        self._resident = None  # capture overwrites the decode buffers
        self._reset_padding(0, b)  # warm-up and capture must write only into the scratch block
        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # compiles the Triton kernels, settles cuBLAS workspaces
                self._reset_padding(0, b)
                self._decode_body(b, greedy_only)
        torch.cuda.current_stream().wait_stream(stream)
        self._reset_padding(0, b)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=pool if pool is not None else torch.cuda.graph_pool_handle()):
            self._decode_body(b, greedy_only)
        return graph

    def _block_table_tensor(self, seqs: list[Sequence], width: int) -> torch.Tensor:
        """[len(seqs), width] int32 on the host, each row a block table padded with the scratch block. Built from
        one flat list: a tensor per sequence costs ~20 µs, 5 ms at batch 256, and the GPU waits for it."""
        lens = torch.tensor([len(s.block_table) for s in seqs])
        tables = torch.full((len(seqs), width), self.scratch_block, dtype=torch.int32)
        tables[torch.arange(width)[None, :] < lens[:, None]] = torch.tensor(
            list(itertools.chain.from_iterable(s.block_table for s in seqs)), dtype=torch.int32)
        return tables

    def _fill_block_tables(self, seqs: list[Sequence]) -> None:
        self.block_tables[:len(seqs)].copy_(self._block_table_tensor(seqs, self.max_blocks_per_seq),
                                            non_blocking=True)

    def _fill_decode_buffers(self, seqs: list[Sequence], padded: int) -> None:
        b = len(seqs)
        self._resident = None
        self._fill_block_tables(seqs)
        self.input_ids[:b].copy_(torch.tensor([s.token_ids[-1] for s in seqs]), non_blocking=True)
        self.positions[:b].copy_(torch.tensor([len(s) - 1 for s in seqs]), non_blocking=True)
        self.context_lens[:b].copy_(torch.tensor([len(s) for s in seqs], dtype=torch.int32), non_blocking=True)
        self._fill_sampling(seqs, self.temperatures, self.top_k, self.top_p, self.seeds)
        if padded > b:
            self._reset_padding(b, padded)

    def _fill_sampling(self, seqs, temperatures, top_k, top_p, seeds) -> None:
        b = len(seqs)
        temperatures[:b].copy_(torch.tensor([s.params.temperature for s in seqs], dtype=torch.float32))
        top_k[:b].copy_(torch.tensor([s.params.top_k or self.vocab_size for s in seqs]))
        top_p[:b].copy_(torch.tensor([s.params.top_p for s in seqs], dtype=torch.float32))
        seeds[:b].copy_(torch.tensor([s.sample_seed for s in seqs], dtype=torch.int64))

    @torch.inference_mode()
    def run_decode(self, seqs: list[Sequence], num_steps: int) -> list[list[int]]:
        b = len(seqs)
        greedy_only = all(s.params.greedy for s in seqs)
        i = bisect.bisect_left(self.graph_buckets, b)
        graph: Optional[torch.cuda.CUDAGraph] = None
        padded = b
        if self.use_graphs and i < len(self.graph_buckets):
            padded = self.graph_buckets[i]
            if (padded, greedy_only) not in self.graphs:
                self._capture(padded, greedy_only)
            graph = self.graphs[(padded, greedy_only)]
        key = (padded, tuple((s.seq_id, len(s)) for s in seqs))
        if key == self._resident:  # the same batch as the last chunk, which the graph advanced in place
            if [len(s.block_table) for s in seqs] != self._resident_blocks:
                self._fill_block_tables(seqs)
        else:
            self._fill_decode_buffers(seqs, padded)
        self._resident_blocks = [len(s.block_table) for s in seqs]
        # after these steps the device holds each sequence's last token, position and context; if the host
        # appends all of them (no stop), the next chunk finds its inputs in place and skips the copies
        self._resident = (padded, tuple((s.seq_id, len(s) + num_steps) for s in seqs))
        for step in range(num_steps):
            if graph is not None:
                graph.replay()
            else:
                self._decode_body(b, greedy_only)
            self.step_tokens[step, :b].copy_(self.input_ids[:b])
        tokens = self.step_tokens[:num_steps, :b].T.tolist()  # the one host sync of the k steps
        return tokens

    # -- prefill --------------------------------------------------------------------------------------------
    @torch.inference_mode()
    def run_prefill(self, seqs: list[Sequence], num_tokens: list[int]) -> list[list[int]]:
        bucket = self._prefill_bucket(seqs, num_tokens)
        if bucket is not None:
            done, logits = [0], self._graphed_prefill_logits(seqs[0], bucket)
        else:
            done, logits = self._eager_prefill_logits(seqs, num_tokens)
        out: list[list[int]] = [[] for _ in seqs]
        if not done:
            return out
        sampling_seqs = [seqs[i] for i in done]
        n, dev = len(done), self.device
        temps = torch.empty(n, dtype=torch.float32, device=dev)
        top_k = torch.empty(n, dtype=torch.int64, device=dev)
        top_p = torch.empty(n, dtype=torch.float32, device=dev)
        seeds = torch.empty(n, dtype=torch.int64, device=dev)
        self._fill_sampling(sampling_seqs, temps, top_k, top_p, seeds)
        greedy_only = all(s.params.greedy for s in sampling_seqs)
        positions = torch.tensor([len(s) for s in sampling_seqs], device=dev)  # where the sampled token goes
        tokens = self.sampler(logits, temps, top_k, top_p, greedy_only, seeds, positions).tolist()
        for i, t in zip(done, tokens):
            out[i] = [t]
        return out

    def _eager_prefill_logits(self, seqs: list[Sequence], num_tokens: list[int]):
        """-> (indices of the sequences whose prompt ends in this step, their last-token logits [n, V] or None)."""
        bs, dev = self.block_size, self.device
        ids, positions, slots, ctx_lens = [], [], [], []
        for s, n in zip(seqs, num_tokens):
            start = s.num_computed_tokens
            ids.extend(s.token_ids[start:start + n])
            positions.extend(range(start, start + n))
            slots.extend(s.block_table[p // bs] * bs + p % bs for p in range(start, start + n))
            ctx_lens.append(start + n)
        tables = self._block_table_tensor(seqs, max(len(s.block_table) for s in seqs))
        meta = AttentionMetadata(
            True, bs, torch.tensor(slots, device=dev), tables.to(dev),
            torch.tensor(ctx_lens, dtype=torch.int32, device=dev), list(num_tokens), ctx_lens)
        hidden = self.model(torch.tensor(ids, device=dev), torch.tensor(positions, device=dev), self.kv_caches, meta)
        # only sequences whose prompt ends in this chunk sample; the others only filled the cache
        done = [i for i, (s, c) in enumerate(zip(seqs, ctx_lens)) if c == len(s)]
        if not done:
            return done, None
        ends = torch.tensor(num_tokens).cumsum(0) - 1
        return done, self.model.compute_logits(hidden[ends[done].to(dev)])

    def _prefill_bucket(self, seqs: list[Sequence], num_tokens: list[int]) -> Optional[int]:
        """The token bucket when this step can replay a prefill graph: one sequence, nothing cached, its whole
        prompt in this step and no longer than the largest bucket. None otherwise."""
        if not self.use_graphs or self.prefill_graph_error is not None or len(seqs) != 1:
            return None
        s, n = seqs[0], num_tokens[0]
        if s.num_computed_tokens or n != len(s):
            return None
        i = bisect.bisect_left(self.prefill_buckets, n)
        return self.prefill_buckets[i] if i < len(self.prefill_buckets) else None

    def _graphed_prefill_logits(self, seq: Sequence, T: int) -> torch.Tensor:
        n, bs, top = len(seq), self.block_size, self.prefill_buckets[-1]
        table = seq.block_table
        scratch = [self.scratch_block * bs + p % bs for p in range(n, T)]
        io = torch.zeros(2 * top + 1, dtype=torch.int64)
        io[:n] = torch.tensor(seq.token_ids[:n])
        io[top:top + T] = torch.tensor([table[p // bs] * bs + p % bs for p in range(n)] + scratch)
        io[2 * top] = n - 1
        if T not in self.prefill_graphs:
            try:
                self.prefill_graphs[T] = self._capture_prefill(T)
            except Exception as e:  # noqa: BLE001 — a kernel that cannot be captured: prefill stays eager
                self.prefill_graph_error = f"{type(e).__name__}: {e}"
                print(f"[inference_engine] prefill graphs off: {self.prefill_graph_error}", flush=True)
                return self._eager_prefill_logits([seq], [n])[1]
        self.prefill_io.copy_(io, non_blocking=True)
        graph, logits, _ = self.prefill_graphs[T]
        graph.replay()
        return logits

    @torch.inference_mode()
    def _capture_prefill(self, T: int) -> tuple[torch.cuda.CUDAGraph, torch.Tensor, tuple]:
        """A graph of the forward and the last token's logits for a fresh T-token prefill, reading the token ids,
        slots and last index from ``self.prefill_io``. Warm-up and capture write the scratch block only."""
        bs, top, dev = self.block_size, self.prefill_buckets[-1], self.device
        io = self.prefill_io
        ids, slots, last = io[:T], io[top:top + T], io[2 * top:]
        io.zero_()
        slots.copy_(self.scratch_block * bs + torch.arange(T, device=dev) % bs)
        positions = torch.arange(T, device=dev)
        meta = AttentionMetadata(True, bs, slots, torch.full((1, 1), self.scratch_block, dtype=torch.int32,
                                                                device=dev),
                                 torch.tensor([T], dtype=torch.int32, device=dev), [T], [T],
                                 cu_seqlens=torch.tensor([[0, T], [0, T]], dtype=torch.int32, device=dev))

        def body():
            hidden = self.model(ids, positions, self.kv_caches, meta)
            return self.model.compute_logits(hidden.index_select(0, last))

        stream = torch.cuda.Stream()
        stream.wait_stream(torch.cuda.current_stream())
        with torch.cuda.stream(stream):
            for _ in range(2):  # compiles the kernels, settles cuBLAS workspaces
                body()
        torch.cuda.current_stream().wait_stream(stream)
        graph = torch.cuda.CUDAGraph()
        with torch.cuda.graph(graph, pool=self.prefill_pool):
            logits = body()
        return graph, logits, (positions, meta)  # the graph reads their memory: they must outlive it

    def invalidate_resident(self) -> None:
        """Forget which decode inputs the device buffers hold (after a failed step: they may be half-advanced)."""
        self._resident = None

    def run(self, batch: ScheduledBatch) -> list[list[int]]:
        if batch.is_prefill:
            return self.run_prefill(batch.seqs, batch.num_tokens)
        return self.run_decode(batch.seqs, batch.num_steps)
