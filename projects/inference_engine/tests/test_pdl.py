"""Programmatic dependent launch (pdl.py): off on the CPU, and — compiled for sm_90 here, no GPU needed — the
fused GEMV issues its weight loads before ``griddepcontrol.wait`` and every activation load after it."""
import pytest
import torch
from gpufolio.ptx import run_compile_script
from gpufolio_projects.inference_engine.pdl import pdl_supported


def test_off_without_a_gpu():
    assert not pdl_supported(torch.device("cpu"))


_PTX_SCRIPT = r"""
import triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from gpufolio_projects.inference_engine import triton_gemv as tg
names = ["x_ptr", "w_ptr", "y_ptr", "norm_w_ptr", "M", "N", "K", "stride_xm", "stride_wn", "stride_ym", "eps"]
sig = {n: "*bf16" if n.endswith("ptr") else "fp32" if n == "eps" else "i32" for n in names}
# the gate_up GEMV of the 1B model at batch 1: norm prologue, SiLU·mul, one 2048-wide row per program
const = dict(NORM=True, RESIDUAL=False, SILU_MUL=True, BLOCK_M=1, BLOCK_N=1, BLOCK_K=2048, ONE_SHOT=True,
             PRECISION="tf32", USE_DOT=False, PDL=True, K=2048, stride_wn=2048)
aligned = {(i,): [["tt.divisibility", 16]] for i in range(4)}
k = triton.compile(ASTSource(tg._fused_gemv_kernel, sig, constexprs=const, attrs=aligned),
                   target=GPUTarget("cuda", 90, 32), options={"num_warps": 4, "num_stages": 1, "launch_pdl": True})
for line in k.asm["ptx"].splitlines():
    if "griddepcontrol" in line or "ld.global" in line:
        print("WAIT" if "griddepcontrol.wait" in line else "TRIGGER" if "griddepcontrol" in line else "LOAD")
"""


@pytest.mark.slow
def test_weights_stream_before_the_wait():
    """2048 bf16 of a gate row and of an up row over 128 threads: two 16-byte loads each before the wait; x
    (two) and the norm weight (two) after it."""
    seq = run_compile_script(_PTX_SCRIPT).split()
    assert seq[0] == "TRIGGER" and seq.count("WAIT") == 1, seq
    wait = seq.index("WAIT")
    assert seq[1:wait] == ["LOAD"] * 4 and seq[wait + 1:] == ["LOAD"] * 4, seq
