"""inference_engine benches: batch-1 decode against the HBM roofline, offline throughput, online serving —
our engine against Hugging Face ``generate`` on the same weights, in the same run.

    python -m gpufolio bench --project inference_engine [--quick | --dry-run] [--bench decode_b1]

The model is Llama-3.2-1B-shaped with random weights, written once per process as a Hugging Face checkpoint
directory that both engines load. Importable without torch: torch and the engine load when a case is built.
"""
from __future__ import annotations

import math
import random

from gpufolio.api import TOKENS_PER_S, Bench, Case, CheckResult, Timing, Unsupported, Variant, Work
from gpufolio.stamp import last_ceilings

from .latency_stats import SLO, good_fraction, latency_summary

PROJECT = "inference_engine"

# model name -> ModelConfig fields. "tiny" is the dry-run (CPU, fp32) stand-in.
MODELS = {
    "llama3.2-1b": dict(vocab_size=128256, hidden_size=2048, intermediate_size=8192, num_hidden_layers=16,
                        num_attention_heads=32, num_key_value_heads=8, rms_norm_eps=1e-5, rope_theta=500000.0,
                        rope_scaling={"rope_type": "llama3", "factor": 32.0, "low_freq_factor": 1.0,
                                      "high_freq_factor": 4.0, "original_max_position_embeddings": 8192},
                        max_position_embeddings=131072, tie_word_embeddings=True),
    "tiny": dict(vocab_size=512, hidden_size=64, intermediate_size=128, num_hidden_layers=2, num_attention_heads=4,
                 num_key_value_heads=2, rms_norm_eps=1e-6, rope_theta=10000.0, max_position_embeddings=2048,
                 tie_word_embeddings=True),
}
WEIGHT_STD = {"llama3.2-1b": 0.02, "tiny": 0.3}  # the tiny model needs larger weights to not repeat one token

# The strongest baseline first: HF generate with its static cache, which makes transformers compile the decode
# forward itself (torch.compile, "reduce-overhead": CUDA graphs) — the fast path HF documents for generate.
# Eager generate (dynamic cache) stays as the plain baseline.
VARIANTS = [Variant("engine", "candidate", "our engine (paged KV, continuous batching, CUDA graphs)"),
            Variant("hf_static", "baseline", "Hugging Face generate, static cache + compiled forward"),
            Variant("hf_generate", "baseline", "Hugging Face transformers generate (eager, dynamic cache)")]
HF_VARIANTS = ("hf_static", "hf_generate")
# online also measures the engine behind its HTTP server, loaded by the HTTP load generator (serve/)
ONLINE_VARIANTS = VARIANTS + [Variant("engine_http", "candidate", "our engine behind its OpenAI-compatible HTTP "
                                                                  "server, streamed to an HTTP client")]

# One engine, one HF model and one checkpoint per worker process: loading a 2.5 GB model per job would cost
# more than the jobs. Benchmarks reset the engine's prefix cache before every call (no self-hits).
_CACHE: dict = {}


# ---- shared setup -------------------------------------------------------------------------------------------
def _torch():
    import torch

    return torch


def _model_config(params: dict):
    from .config import ModelConfig

    return ModelConfig(**MODELS[params["model"]])


def _checkpoint(params: dict, device) -> str:
    """A random-weight HF checkpoint directory for params["model"] in params["dtype"] (made once per process)."""
    key = ("ckpt", params["model"], params["dtype"])
    if key not in _CACHE:
        import os
        import tempfile

        # one directory per (model, dtype, seed) per machine: a later process (the profile) reuses it
        path = os.path.join(tempfile.gettempdir(), f"gpufolio_ie_{params['model']}_{params['dtype']}_s1234_std{WEIGHT_STD[params['model']]}")
        if os.path.exists(os.path.join(path, "COMPLETE")):
            _CACHE[key] = path
            return path
        torch = _torch()
        from .model import LlamaForCausalLM, random_init_, save_hf_checkpoint

        cfg = _model_config(params)
        with torch.device("meta"):
            model = LlamaForCausalLM(cfg, 16)
        model.to_empty(device=device)
        model.tie_weights()
        random_init_(model, seed=1234, std=WEIGHT_STD[params["model"]])
        model.to(getattr(torch, params["dtype"]))
        save_hf_checkpoint(model, path)
        open(os.path.join(path, "COMPLETE"), "w").close()
        del model
        _CACHE[key] = path
    return _CACHE[key]


def _engine(params: dict, device):
    key = ("engine", params["model"], params["dtype"], device.type)
    if key not in _CACHE:
        from .config import CacheConfig, SchedulerConfig
        from .llm_engine import LLM

        for k in [k for k in _CACHE if k[0] == "engine"]:
            del _CACHE[k]
        import time

        cuda = device.type == "cuda"
        t0 = time.perf_counter()
        ckpt = _checkpoint(params, device)
        t1 = time.perf_counter()
        _CACHE[key] = eng = LLM(
            ckpt, device=device.type, dtype=params["dtype"], max_model_len=2304,
            cuda_graphs=cuda,
            cache=CacheConfig(block_size=16, gpu_memory_utilization=0.45, num_blocks=None if cuda else 2048),
            scheduler=SchedulerConfig(max_num_seqs=256, max_num_batched_tokens=16384, num_decode_steps=16))
        # the worker log keeps these: where the set-up time went, how big the pool came out
        print(f"[inference_engine] checkpoint {t1 - t0:.1f}s, engine {time.perf_counter() - t1:.1f}s, "
              f"{eng.block_manager.num_blocks} KV blocks of {eng.config.cache.block_size} tokens, "
              f"graph buckets {eng.model_runner.graph_buckets if eng.model_runner.use_graphs else 'none'}",
              flush=True)
    return _CACHE[key]


def _hf(params: dict, device):
    key = ("hf", params["model"], params["dtype"], device.type)
    if key not in _CACHE:
        torch = _torch()
        from transformers import LlamaForCausalLM

        _CACHE[key] = LlamaForCausalLM.from_pretrained(
            _checkpoint(params, device), dtype=getattr(torch, params["dtype"])).to(device).eval()
    return _CACHE[key]


def _greedy(max_tokens: int):
    from .sampling_params import SamplingParams

    return SamplingParams(temperature=0.0, max_tokens=max_tokens, ignore_eos=True)


def _random_prompts(gen, lengths: list[int], vocab: int, device) -> list[list[int]]:
    torch = _torch()
    return [torch.randint(0, vocab, (n,), generator=gen, device=device).tolist() for n in lengths]


def _hf_generate(model, prompts: list[list[int]], new_tokens: int, device, static: bool = False) -> list[list[int]]:
    """One static batch: left-padded to the longest prompt, every row generating ``new_tokens``. ``static``: HF's
    static KV cache (``cache_implementation="static"``), with which ``generate`` compiles the forward itself."""
    torch = _torch()
    width = max(map(len, prompts))
    ids = torch.zeros(len(prompts), width, dtype=torch.long)
    mask = torch.zeros(len(prompts), width, dtype=torch.long)
    for i, p in enumerate(prompts):
        ids[i, width - len(p):] = torch.tensor(p)
        mask[i, width - len(p):] = 1
    with torch.inference_mode():
        out = model.generate(input_ids=ids.to(device), attention_mask=mask.to(device), max_new_tokens=new_tokens,
                             min_new_tokens=new_tokens, do_sample=False, pad_token_id=0, eos_token_id=None,
                             **({"cache_implementation": "static"} if static else {}))
    return out[:, width:].tolist()


# ---- the correctness check (no elementwise reference for generated text) -----------------------------------
def _check_against_hf(params: dict, device, prompts: list[list[int]], outs: list[list[int]],
                      lengths: list[int]) -> CheckResult:
    """Every request got exactly its length; then, on up to two prompts, greedy tokens against HF.

    fp32 (CPU dry runs): token-identical to HF ``generate``. bf16: near-ties in the logits make exact
    agreement fragile (two engines sum in different orders), so the criterion is teacher-forced: HF reads
    the prompt plus our tokens in one forward, and each token we picked must be within ``tol`` of HF's
    largest logit at that position, tol = max|logit| / 16 (16 bf16 ulps at that scale; a wrong token under a
    random-init model is typically several logit standard deviations away). The exact-match prefix is reported.
    """
    torch = _torch()
    bad = [i for i, (o, n) in enumerate(zip(outs, lengths)) if len(o) != n]
    if bad:
        return CheckResult(False, "lengths", {"wrong_lengths": bad[:10]})
    hf = _hf(params, device)
    picks = sorted(range(len(prompts)), key=lambda i: len(prompts[i]))[:2]
    detail: dict = {"requests_checked": len(picks)}
    passed = True
    for i in picks:
        p, o = prompts[i], outs[i]
        if params["dtype"] == "float32":
            ref = _hf_generate(hf, [p], len(o), device)[0]
            same = next((j for j, (a, b) in enumerate(zip(o, ref)) if a != b), len(o))
            detail[f"req{i}_exact_prefix"] = same
            passed &= same == len(o)
            continue
        with torch.inference_mode():
            logits = hf(torch.tensor([p + o[:-1]], device=device)).logits[0, len(p) - 1:].float()
        top, mine = logits.max(-1).values, logits.gather(-1, torch.tensor(o, device=device)[:, None])[:, 0]
        gap = (top - mine)
        tol = float(logits.abs().max()) / 16
        exact = (logits.argmax(-1) == torch.tensor(o, device=device)).tolist()
        detail[f"req{i}_exact_prefix"] = exact.index(False) if False in exact else len(o)
        detail[f"req{i}_argmax_agree"] = sum(exact) / len(o)
        detail[f"req{i}_max_gap"] = float(gap.max())
        detail["tol"] = tol
        passed &= bool(gap.max() <= tol)
    ref = "HF generate, token-identical" if params["dtype"] == "float32" else "HF teacher-forced logits, near-argmax"
    return CheckResult(passed, ref, detail)


def _timing(variant: str, reps: int = 3) -> Timing:
    # The harness calls fn for two checks, a peak-memory pass and a warm-up besides the timed reps: calls of
    # seconds (eager HF generate; our offline run) get one timed rep, batch-1 decode at least 3 (online: ONLINE_TIMING).
    # The static-cache baseline compiles in its first call (the check before timing), so the reps are warm.
    slow = variant == "hf_generate"
    return Timing(method="wall", warmup_ms=0.0, rep_ms=0.0 if slow else 500.0,
                  warmup_min=1, min_reps=1 if slow else reps, max_reps=20)


def _gpu_guard(params: dict, device) -> None:
    if params["model"] != "tiny" and device.type != "cuda":
        raise Unsupported("the 1B model runs on the GPU only")


# ---- decode_b1 --------------------------------------------------------------------------------------------
def _decode_b1_configs(mode: str) -> list[dict]:
    if mode == "dry":
        return [dict(model="tiny", dtype="float32", prompt_len=16, new_tokens=8)]
    # HF generate is called 5 times per job (two checks, peak memory, warm-up, one rep) at ~20 ms a token
    new = 128 if mode == "quick" else 256
    return [dict(model="llama3.2-1b", dtype="bfloat16", prompt_len=32 if mode == "quick" else 128, new_tokens=new)]


def _decode_b1_case(variant: str, params: dict, device) -> Case:
    _gpu_guard(params, device)
    cfg = _model_config(params)
    P, N = params["prompt_len"], params["new_tokens"]
    if variant == "engine":
        eng = _engine(params, device)

        def fn(inputs):
            eng.block_manager.reset_prefix_cache()
            return eng.generate([inputs["prompt"]], _greedy(N))

        def check(inputs, outs):
            return _check_against_hf(params, device, [inputs["prompt"]], outs, [N])
    else:
        hf = _hf(params, device)
        static = variant == "hf_static"

        def fn(inputs):
            return _hf_generate(hf, [inputs["prompt"]], N, device, static=static)

        def check(inputs, outs):
            return CheckResult(len(outs[0]) == N, "lengths only (the baseline is the reference)")

    elem = 2 if params["dtype"] in ("bfloat16", "float16") else 4
    # I/O per generated token: every weight once (the tied embedding is read as the LM head) + the K/V of the
    # context so far, all layers; the average context over the run is P + (N + 1) / 2.
    weight_bytes = cfg.num_params() * elem
    kv_bytes = (P + (N + 1) / 2) * cfg.kv_bytes_per_token(elem)
    bytes_per_token = weight_bytes + kv_bytes

    def extra(median_s: float) -> dict:
        gbps = N * bytes_per_token / median_s / 1e9
        out = {"hbm_gbps": (gbps, "GB/s", True), "bytes_per_token": (bytes_per_token / 1e9, "GB", False)}
        # The roofline is the run's own copy bandwidth, measured by the stamp (absent on a box without CUDA).
        copy = last_ceilings().get("copy_gbps")
        if copy:
            out["roofline_pct"] = (100 * gbps / copy, "% of stamped copy bandwidth", True)
            out["roofline_tok_s"] = (copy * 1e9 / bytes_per_token, "tok/s at stamped copy bandwidth", True)
        out["wall_ms_per_token"] = (median_s / N * 1e3, "ms", False)
        if variant == "engine" and device.type == "cuda":
            out.update(_decode_probe(eng, weight_bytes))
        return out

    return Case(fn=fn, make_inputs=lambda gen: {"prompt": _random_prompts(gen, [P], cfg.vocab_size, device)[0]},
                work=Work(tokens=N, bytes=N * bytes_per_token), check=check, timing=_timing(variant),
                extra_metrics=extra)


def _decode_probe(eng, weight_bytes: int) -> dict:
    """Where the wall time per token goes: GPU ms per batch-1 decode step (graph replays, timed by the harness's
    ``time_events``) for the engine's kernels and for the paths they replaced (decode_probe.py). The probe's
    prefill time, a single wall-clock sample, is left out of the record."""
    from .decode_probe import gpu_ms_per_step

    out = {}
    try:  # the default path first: a later path's compile failure still leaves its number
        probe = gpu_ms_per_step(eng, ("fused", "unfused_triton", "unfused_cublas"))
    except Exception as e:  # noqa: BLE001 — diagnostics must not cost the record
        print(f"[inference_engine] decode probe failed: {type(e).__name__}: {e}", flush=True)
        return out
    for name, ms in probe.items():
        if name != "prefill_ms":
            out["gpu_ms_per_step" if name == "fused" else f"gpu_ms_per_step_{name}"] = (ms, "ms", False)
    if "fused" in probe:  # the weights a step streams, at the GPU's own time per step
        out["gpu_weight_gbps"] = (weight_bytes / probe["fused"] / 1e6, "GB/s", True)
    return out


# ---- offline_throughput -------------------------------------------------------------------------------------
def _workload(params: dict) -> tuple[list[int], list[int]]:
    """Input and output lengths drawn uniformly from [min_len, max_len] with the config's seed; outputs capped."""
    rng = random.Random(params["seed"])
    n, lo, hi = params["num_requests"], params["min_len"], params["max_len"]
    ins = [rng.randint(lo, hi) for _ in range(n)]
    outs = [min(rng.randint(lo, hi), params["output_cap"]) for _ in range(n)]
    return ins, outs


def _offline_configs(mode: str) -> list[dict]:
    if mode == "dry":
        return [dict(model="tiny", dtype="float32", num_requests=8, min_len=4, max_len=24, output_cap=8,
                     hf_requests=4, hf_batch=4, hf_max_steps=6, hf_static_batch=8, seed=0)]
    # HF generate is host-bound: a step costs about the same at batch 1 and 64 (~20 ms), so its wall time is
    # steps, and the harness calls it five times per job. It runs one static batch of 64 (the middle of the
    # length-sorted list) stopped after hf_max_steps decode steps: its tok/s counts only the tokens it made,
    # and a batch cut short wastes no rows on finished requests, so the cut overstates HF's rate, never ours.
    # The static-cache baseline is GPU-bound, not host-bound: it runs every request, in static batches of
    # hf_static_batch (all 256 at once: its KV cache, 256 x 2048 tokens x 32 KiB, is 17 GB of the card's 141),
    # each batch to its longest output, no step cut — the same requests and tokens as our engine's.
    # Quick mode caps every request's output at 512 (all engines); full mode keeps the drawn lengths.
    cap, steps = (512, 128) if mode == "quick" else (1024, 1024)
    return [dict(model="llama3.2-1b", dtype="bfloat16", num_requests=256, min_len=100, max_len=1024,
                 output_cap=cap, hf_requests=64, hf_batch=64, hf_max_steps=steps, hf_static_batch=256, seed=0)]


def _hf_subset(in_lens: list[int], k: int) -> list[int]:
    order = sorted(range(len(in_lens)), key=lambda i: in_lens[i])
    start = (len(order) - k) // 2
    return order[start:start + k]


def _offline_case(variant: str, params: dict, device) -> Case:
    _gpu_guard(params, device)
    cfg = _model_config(params)
    in_lens, out_lens = _workload(params)
    if variant == "engine":
        eng = _engine(params, device)
        sps = [_greedy(n) for n in out_lens]

        def fn(inputs):
            eng.block_manager.reset_prefix_cache()
            return eng.generate(inputs["prompts"], sps)

        def check(inputs, outs):
            return _check_against_hf(params, device, inputs["prompts"], outs, out_lens)
        tokens = sum(out_lens)
    else:
        hf = _hf(params, device)
        static = variant == "hf_static"
        if static:  # every request, no step cut
            subset, B, max_steps = list(range(len(in_lens))), params["hf_static_batch"], max(out_lens)
        else:
            subset = _hf_subset(in_lens, params["hf_requests"])
            B, max_steps = params["hf_batch"], params["hf_max_steps"]
        # a static batch runs to its longest output (or the step cut); each row keeps what it asked for
        batches = [subset[s:s + B] for s in range(0, len(subset), B)]
        steps = [min(max(out_lens[i] for i in idx), max_steps) for idx in batches]
        hf_lens = [min(out_lens[i], n) for idx, n in zip(batches, steps) for i in idx]

        def fn(inputs):
            outs = []
            for idx, n in zip(batches, steps):
                gen = _hf_generate(hf, [inputs["prompts"][i] for i in idx], n, device, static=static)
                outs += [g[:out_lens[i]] for g, i in zip(gen, idx)]  # static batching: the rest is waste
            return outs

        def check(inputs, outs):
            ok = [len(o) for o in outs] == hf_lens
            return CheckResult(ok, "lengths only (the baseline is the reference)")
        tokens = sum(hf_lens)

    def make_inputs(gen):
        return {"prompts": _random_prompts(gen, in_lens, cfg.vocab_size, device)}

    def extra(median_s: float) -> dict:
        if variant != "engine":
            return {}
        return {"preemptions": (float(eng.scheduler.num_preemptions), "count", False),
                "kv_pool_blocks": (float(eng.block_manager.num_blocks), "blocks", True)}

    return Case(fn=fn, make_inputs=make_inputs, work=Work(tokens=tokens), check=check,
                timing=_timing(variant, reps=1), extra_metrics=extra)


# ---- online -----------------------------------------------------------------------------------------------------
# Goodput counts the requests that met both bounds: interactive bounds for a 1B model on an H200, where an
# unloaded request sees a TTFT of tens of ms and a TPOT of 2-3 ms. TTFT 200 ms leaves room for a prefill plus a
# few 16-step decode chunks of queueing; TPOT 10 ms is 100 tokens/s per stream, about four times the unloaded TPOT.
ONLINE_SLO = SLO(ttft_ms=200.0, tpot_ms=10.0)
# The full sweep's offered loads (req/s) against the engine's capacity on this workload (inputs 100-1024, outputs
# capped at 128), read off the last H200 offline profile (evidence/2026-12-02-profile-offline-k8-k16.txt): prefill
# at ~4.8 us a token (a 562-token mean prompt: ~2.7 ms) plus decode at ~12 us a token at batch 256 (127 tokens:
# ~1.6 ms) is ~4.3 ms of engine time per request, ~230 req/s (~29k output tok/s) at best. 32-128 sit well under
# it, 192 near it, 256 and 384 above it: the top two rates saturate the engine, so the frontier shows its knee.
ONLINE_FULL_RATES = (32.0, 64.0, 128.0, 192.0, 256.0, 384.0)
# Requests per full case: two seconds of arrivals at the rate, at least 64 (pooled p99s over 4 calls x 64 requests)
# and at most 512 (past capacity a call lasts requests / capacity: 512 keeps it near 2.5 s and twice max_num_seqs).
ONLINE_ARRIVAL_S, ONLINE_MIN_REQUESTS, ONLINE_MAX_REQUESTS = 2.0, 64, 512


def _online_requests(rate: float) -> int:
    return min(max(round(rate * ONLINE_ARRIVAL_S), ONLINE_MIN_REQUESTS), ONLINE_MAX_REQUESTS)


def _online_configs(mode: str) -> list[dict]:
    # max_call_s bounds one call of the case in time (it raises past it), num_requests bounds it in requests
    base = dict(model="llama3.2-1b", dtype="bfloat16", min_len=100, max_len=1024, seed=0,
                slo_ttft_ms=ONLINE_SLO.ttft_ms, slo_tpot_ms=ONLINE_SLO.tpot_ms, max_call_s=60.0)
    if mode == "dry":
        return [dict(base, model="tiny", dtype="float32", num_requests=6, min_len=4, max_len=24, output_cap=8,
                     rate=50.0, max_call_s=120.0)]
    if mode == "quick":  # the harness calls each case five times: short arrival spans keep it in budget
        return [dict(base, num_requests=12, output_cap=64, rate=r) for r in (16.0, 48.0, 160.0)]
    return [dict(base, num_requests=_online_requests(r), output_cap=128, rate=r) for r in ONLINE_FULL_RATES]


# One timed call per case (a call is seconds of arrivals): five calls in all — the check before timing, the peak
# memory pass, the warm-up, the timed call, the check after.
ONLINE_TIMING = Timing(method="wall", warmup_ms=0.0, rep_ms=0.0, warmup_min=1, min_reps=1, max_reps=1)


def _online_case(variant: str, params: dict, device) -> Case:
    _gpu_guard(params, device)
    if variant not in ("engine", "engine_http"):
        raise Unsupported("HF generate has no serving loop: a static batch cannot admit requests mid-generation")
    from .llm_engine import run_online

    cfg = _model_config(params)
    in_lens, out_lens = _workload(params)
    rng = random.Random(params["seed"] + 1)
    t, arrivals = 0.0, []
    for _ in in_lens:  # Poisson arrivals: exponential gaps at `rate` requests per second
        t += rng.expovariate(params["rate"])
        arrivals.append(t)
    if variant == "engine_http":
        try:
            from .serve.inprocess import http_online
        except ImportError as e:
            raise Unsupported(f"the HTTP variant needs the serve extra ({e})") from None
    eng = _engine(params, device)
    sps = [_greedy(n) for n in out_lens]
    calls: list[list[dict]] = []

    def fn(inputs):
        eng.block_manager.reset_prefix_cache()
        if variant == "engine_http":
            stats = http_online(eng, inputs["prompts"], out_lens, arrivals, params["max_call_s"])
        else:
            stats = run_online(eng, inputs["prompts"], sps, arrivals, params["max_call_s"])
        calls.append(stats)
        return [s["token_ids"] for s in stats]

    def check(inputs, outs):
        return _check_against_hf(params, device, inputs["prompts"], outs, out_lens)

    slo = SLO(params["slo_ttft_ms"], params["slo_tpot_ms"])

    def extra(median_s: float) -> dict:
        return online_metrics(calls, slo, len(in_lens), median_s, params["rate"])

    return Case(fn=fn, make_inputs=lambda gen: {"prompts": _random_prompts(gen, in_lens, cfg.vocab_size, device)},
                work=Work(tokens=sum(out_lens)), check=check, timing=ONLINE_TIMING, extra_metrics=extra)


def online_metrics(calls: list[list[dict]], slo: SLO, num_requests: int, median_s: float, rate: float) -> dict:
    """The online record's latency and goodput metrics. Latencies are per request, as the serving loop (or the
    HTTP client) saw them, pooled over every call but the first (the check before timing: it warms up);
    throughputs are the harness's: requests per timed call over its median time. Goodput: the pooled share of
    requests that met the SLO, times that request rate."""
    stats = [s for c in calls[1:] for s in c]
    ttft, tpot = [s["ttft"] for s in stats], [s["tpot"] for s in stats]
    req_s = num_requests / median_s
    # a percentile of no values (no request with two tokens has a TPOT) is left out: a record holds finite numbers
    out = {k: (v, "ms", False) for k, v in latency_summary(ttft, tpot, [s["e2e"] for s in stats]).items()
           if math.isfinite(v)}
    return out | {"goodput": (good_fraction(slo, ttft, tpot) * req_s, "req/s within SLO", True),
                  "req_s": (req_s, "req/s", True),
                  "offered_rate": (rate, "req/s", True)}


BENCHES = [
    Bench(PROJECT, "decode_b1", TOKENS_PER_S, VARIANTS, _decode_b1_configs, _decode_b1_case,
          description="Batch-1 greedy decode of a Llama-3.2-1B-shaped bf16 model: tokens/s and % of the "
                      "roofline at the run's stamped copy bandwidth (weights + K/V read per token).",
          headline_params={"model": "llama3.2-1b"}, headline_baseline="hf_static", x_param="new_tokens"),
    Bench(PROJECT, "offline_throughput", TOKENS_PER_S, VARIANTS, _offline_configs, _offline_case,
          description="256 requests, input and output lengths uniform in 100-1024 (outputs capped), all "
                      "submitted at once: output tokens/s.",
          headline_params={"model": "llama3.2-1b"}, headline_baseline="hf_static", x_param="output_cap"),
    Bench(PROJECT, "online", TOKENS_PER_S, ONLINE_VARIANTS, _online_configs, _online_case,
          description="Poisson arrivals at rates up to past the engine's capacity: output tokens/s, TTFT, TPOT and "
                      "end-to-end latency p50/p90/p99 (ms), and goodput: requests/s within the SLO (TTFT and TPOT "
                      "bounds, in the params).",
          headline_params={"model": "llama3.2-1b"}, x_param="rate"),
]
