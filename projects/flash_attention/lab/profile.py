"""Runs one attention call repeatedly at a bench shape, for ``ncu`` / ``nsys`` (no timing of its own).

    python -m gpufolio_projects.flash_attention.lab.profile --S 4096 --D 128 [--causal] [--bwd] [--reps 3]
    python -m gpufolio_projects.flash_attention.lab.profile --backend triton,gluon_overlap --reps 1
    python -m gpufolio_projects.flash_attention.lab.profile --backend gluon_bwd --bwd --reps 1   # the Gluon backward
    python -m gpufolio_projects.flash_attention.lab.profile --backend fa4,gluon_bwd --bwd --reps 1   # a peer beside
    python -m gpufolio_projects.flash_attention.lab.profile --backend "gluon_bwd,gluon_bwd@NAME" --bwd --reps 1

Several comma-separated backends run one after another in one process (one ncu session sees each kernel). A name
that is not a ``flash_attention`` backend is a bench variant (``fa4``, ``sdpa_cudnn``, ...), called as the bench
calls it. ``gluon_bwd@NAME`` is the backward of ``lab/variants.py``'s variant NAME, called directly on one Gluon
forward's O and LSE (the same kernel name as the committed backward's: profile both in one session and tell
them apart by launch order). Pick the kernels with ``ncu --kernel-name``, not an NVTX range: autograd runs the
backward's kernels on a thread of its own, outside a range pushed here.

Pin a config for the profile with GPUFOLIO_FA_FWD / _BWD_DKDV / _BWD_DQ = "block_m,block_n,warps,stages";
otherwise the tuner's pick (its JSON file) is used.
"""
from __future__ import annotations

import argparse
import functools
import re


def main() -> None:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--S", type=int, default=4096)
    ap.add_argument("--D", type=int, default=128)
    ap.add_argument("--H", type=int, default=16)
    ap.add_argument("--tokens", type=int, default=16384)
    ap.add_argument("--causal", action="store_true")
    ap.add_argument("--bwd", action="store_true")
    ap.add_argument("--reps", type=int, default=3)
    ap.add_argument("--dtype", default="bfloat16")
    ap.add_argument("--backend", default="triton",
                    help="flash_attention backends or bench variants (fa4, sdpa_cudnn, ...), comma-separated")
    a = ap.parse_args()

    import torch

    from .. import bench
    from ..attention import BACKENDS, flash_attention

    dtype = getattr(torch, a.dtype)
    shape = (a.tokens // a.S, a.H, a.S, a.D)
    q, k, v = (torch.randn(shape, device="cuda", dtype=dtype, requires_grad=a.bwd) for _ in range(3))
    do = torch.randn(shape, device="cuda", dtype=dtype)
    params = bench._params(a.S, a.D, a.causal, a.dtype, B=shape[0], H=a.H)
    # Commas followed by a space belong to a variant's name ("gluon_bwd@dQ writer warp, two tiles").
    for backend in re.split(r",(?! )", a.backend):
        if backend.startswith("gluon_bwd@"):
            _profile_bwd_variant(backend.partition("@")[2], q.detach(), k.detach(), v.detach(), do, a)
            continue
        # (q, k, v) -> out: our backend, or a peer as the bench calls it.
        call = (functools.partial(flash_attention, causal=a.causal, backend=backend) if backend in BACKENDS
                else bench._attention_fn(backend, params, q.device, a.bwd))
        for _ in range(a.reps):
            out = call(q, k, v)
            if a.bwd:
                torch.autograd.grad(out, (q, k, v), do)
        torch.cuda.synchronize()
        print(f"profiled {backend} {a.reps} reps at B,H,S,D={shape} causal={a.causal} bwd={a.bwd}", flush=True)


def _profile_bwd_variant(name: str, q, k, v, do, a) -> None:
    """The backward of variant ``name`` ``a.reps`` times on the committed Gluon forward's O and LSE."""
    import torch

    from ..kernels.gluon_fwd import gluon_attention_fwd
    from .variants import backward

    bwd = backward(name)
    o, lse = gluon_attention_fwd(q, k, v, causal=a.causal, overlap=True, lean=True, under_pv=True)
    for _ in range(a.reps):
        bwd.gluon_attention_bwd(do, q, k, v, o, lse, causal=a.causal)
    torch.cuda.synchronize()
    print(f"profiled the backward of variant {name!r} {a.reps} reps at B,H,S,D={tuple(q.shape)} causal={a.causal}",
          flush=True)


if __name__ == "__main__":
    main()
