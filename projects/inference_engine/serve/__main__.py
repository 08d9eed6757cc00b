"""python -m gpufolio_projects.inference_engine.serve --model DIR: the engine behind an OpenAI-compatible API."""
from __future__ import annotations

import argparse
import os
import sys


def _parser() -> argparse.ArgumentParser:
    ap = argparse.ArgumentParser(prog="python -m gpufolio_projects.inference_engine.serve",
                                 description="OpenAI-compatible HTTP server (/v1/completions, /v1/chat/completions, "
                                             "/v1/models, /health, /metrics) on the inference engine.")
    ap.add_argument("--model", required=True, help="a Hugging Face Llama checkpoint directory")
    ap.add_argument("--tokenizer", help="a Hugging Face tokenizer directory (default: --model, if it has one); "
                                        "without one, prompts are token ids and responses carry token_ids only")
    ap.add_argument("--served-model-name", help="the model id clients send (default: the directory's name)")
    ap.add_argument("--host", default="127.0.0.1")
    ap.add_argument("--port", type=int, default=8000)
    ap.add_argument("--device", default="cuda")
    ap.add_argument("--dtype", default="bfloat16", choices=("float32", "float16", "bfloat16"))
    ap.add_argument("--max-model-len", type=int, default=4096)
    ap.add_argument("--num-blocks", type=int, help="KV blocks (default: sized from free GPU memory)")
    ap.add_argument("--gpu-memory-utilization", type=float, default=0.9)
    ap.add_argument("--max-num-seqs", type=int, default=256)
    ap.add_argument("--max-num-batched-tokens", type=int, default=8192)
    ap.add_argument("--num-decode-steps", type=int, default=8, help="decode steps per host sync")
    ap.add_argument("--max-in-flight", type=int, help="requests in the system before 429 (default 2 x max-num-seqs)")
    return ap


def _tokenizer(args):
    from .protocol import Tokenizer

    path = args.tokenizer or args.model
    has_one = any(os.path.exists(os.path.join(path, f)) for f in ("tokenizer.json", "tokenizer_config.json"))
    if args.tokenizer is None and not has_one:
        return Tokenizer()
    from transformers import AutoTokenizer

    return Tokenizer(AutoTokenizer.from_pretrained(path))


def main(argv: list[str] | None = None) -> int:
    args = _parser().parse_args(argv)
    if not os.path.isfile(os.path.join(args.model, "config.json")):
        print(f"error: --model {args.model}: no config.json there (a Hugging Face checkpoint directory)",
              file=sys.stderr)
        return 2
    import uvicorn

    from ..config import CacheConfig, SchedulerConfig
    from ..llm_engine import LLM
    from .app import build_app

    try:
        tokenizer = _tokenizer(args)
    except (OSError, ValueError) as e:
        print(f"error: --tokenizer {args.tokenizer or args.model}: {e}".splitlines()[0], file=sys.stderr)
        return 2
    try:
        engine = LLM(args.model, device=args.device, dtype=args.dtype, max_model_len=args.max_model_len,
                     cuda_graphs=args.device.startswith("cuda"),
                     cache=CacheConfig(num_blocks=args.num_blocks, gpu_memory_utilization=args.gpu_memory_utilization),
                     scheduler=SchedulerConfig(max_num_seqs=args.max_num_seqs,
                                               max_num_batched_tokens=args.max_num_batched_tokens,
                                               num_decode_steps=args.num_decode_steps))
    except ValueError as e:
        print(f"error: {e}", file=sys.stderr)
        return 2
    name = args.served_model_name or os.path.basename(os.path.normpath(args.model))
    app = build_app(engine, name, tokenizer, args.max_in_flight)
    uvicorn.run(app, host=args.host, port=args.port, log_level="info")
    return 0


if __name__ == "__main__":
    sys.exit(main())
