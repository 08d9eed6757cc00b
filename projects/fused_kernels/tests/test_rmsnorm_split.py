"""The split RMSNorm kernels (ops/rmsnorm_split.py): odd widths where each row is head / aligned body / tail,
against the fp64 reference and against the plain kernels; and, compiled for sm_90 on the CPU, the claim they
exist for: the body moves as 16-byte vectors where the plain kernel moves single elements."""
import math

import pytest
import torch
from gpufolio.ptx import run_compile_script
from gpufolio_projects.fused_kernels.ops import _rows
from gpufolio_projects.fused_kernels.ops import add_rmsnorm as arn
from gpufolio_projects.fused_kernels.tests._ref import assert_close, leaves, ref_add_rmsnorm


def _run(T, H, dtype, cfg, with_res=True, offset=0):
    """Forward + backward through the launchers with ``cfg``; fresh inputs. ``offset`` shifts every tensor's
    start by that many elements, so rows are not where the split assumes (results must not change)."""
    g = torch.Generator().manual_seed(T * 7919 + H + offset)

    def mk(*shape):
        flat = torch.randn(math.prod(shape) + offset, generator=g).to(dtype)
        return flat[offset:].view(*shape)

    x, r, w, dy, dr = mk(T, H), mk(T, H), mk(H), mk(T, H), mk(T, H)
    y, s = arn.rmsnorm_forward(x, r if with_res else None, w, 1e-6, cfg)
    ds, dw = arn.rmsnorm_backward(dy, dr if with_res else None, s if with_res else x, w, 1e-6, cfg)
    x64, r64, w64 = leaves(x, r, w)
    y64, s64 = ref_add_rmsnorm(x64, r64 if with_res else torch.zeros_like(r64), w64)
    outs, cots = ((y64, s64), (dy.double(), dr.double())) if with_res else ((y64,), (dy.double(),))
    rx, rw = torch.autograd.grad(outs, (x64, w64), cots)
    assert_close(y, y64, dtype, name="y")
    if with_res:
        assert_close(s, s64, dtype, name="residual_out")
    assert_close(ds, rx, dtype, name="ds")
    assert_close(dw, rw, dtype, scale=math.sqrt(T), name="dweight")


@pytest.mark.parametrize("H", [1000, 4097, 5120, 8191])
@pytest.mark.parametrize("dtype", [torch.float32, torch.float16])
@pytest.mark.parametrize("split", [True, False], ids=["split", "plain"])
def test_both_kernels_at_odd_widths(H, dtype, split):
    """19 rows: more than the P phases (8 at 4097 and 8191 in fp16), several row tiles per backward program
    (4 programs on CPU), a last phase with fewer rows than the first. 5120 is a multiple of 16: split=True
    forces the split kernel there with an empty head and tail."""
    cfg = arn.launch_config(H, torch.empty((), dtype=dtype).element_size(), split=split)
    _run(19, H, dtype, cfg)


@pytest.mark.parametrize("prefetch", [True, False])
@pytest.mark.parametrize("with_res", [True, False])
def test_split_backward_variants(prefetch, with_res):
    cfg = arn.LaunchConfig(block_n=256, rows=1, num_warps=4, bwd_num_warps=4, bwd_prefetch=prefetch, split=True)
    _run(21, 263, torch.float16, cfg, with_res=with_res)


@pytest.mark.parametrize("H", [1, 3, 7, 9, 100])
def test_split_narrow_rows(H):
    """Rows narrower than a vector (all head), barely wider, and 100 (P = 2, 16 rows per program)."""
    cfg = arn.launch_config(H, 2, split=True)
    _run(37, H, torch.float16, cfg)


def test_split_unaligned_base_pointer():
    """A tensor starting 1 element past a 16-byte boundary: the heads no longer fall on vector boundaries (and
    Triton compiles without the alignment), but every mask is exact, so the results are the same."""
    _run(11, 4097, torch.float16, arn.launch_config(4097, 2), offset=1)


def test_split_config_rules():
    assert arn.launch_config(4097).split and arn.launch_config(4097).block_n == 4096  # not 8192: no idle half
    assert arn.launch_config(8191).split and arn.launch_config(8191).block_n == 8192
    assert not arn.launch_config(4096).split and not arn.launch_config(5120).split
    # the split backward runs the forward's warps (the H200 sweep's pick); the plain one twice that
    assert arn.launch_config(8191).bwd_num_warps == 16 and arn.launch_config(4097).bwd_num_warps == 8
    assert arn.launch_config(4097, 4).block_n == 4096  # fp32: 4 per vector, body at most 4096
    assert [_rows.n_phases(h, 8) for h in (8191, 4100, 1000, 4096)] == [8, 2, 1, 1]
    # A bf16 config used on fp32 rows of 4100 (fp32 bodies reach 4100 > 4096 lanes): refused, not truncated.
    cfg = arn.launch_config(4100, 2)
    with pytest.raises(ValueError):
        arn.rmsnorm_forward(torch.randn(2, 4100), None, torch.randn(4100), 1e-6, cfg)


_PTX_SCRIPT = r"""
import re, triton
from triton.backends.compiler import GPUTarget
from triton.compiler import ASTSource
from gpufolio_projects.fused_kernels.ops import add_rmsnorm as arn, rmsnorm_split as rs
names = ["x_ptr", "r_ptr", "w_ptr", "y_ptr", "r_out_ptr", "n_rows", "n_cols", "eps", "P"]
sig = {n: "*bf16" if n.endswith("ptr") else "fp32" if n == "eps" else "i32" for n in names}
const = {"HAS_RESIDUAL": True, "ROWS": 1, "BLOCK_N": 8192, "EVICT_FIRST": False}
aligned = {(i,): [["tt.divisibility", 16]] for i in range(5)}  # what Triton infers for torch's allocations
def vec_ops(fn, sig, const):
    k = triton.compile(ASTSource(fn, sig, constexprs=const, attrs=aligned), target=GPUTarget("cuda", 90, 32),
                       options={"num_warps": 16})
    return len(re.findall(r"(ld|st)\.global(\.\w+)*\.v4\.b32", k.asm["ptx"]))
print(vec_ops(rs._rmsnorm_fwd_split_kernel, sig, dict(const, VEC=8, EDGE=512)),
      vec_ops(arn._rmsnorm_fwd_kernel, {k: v for k, v in sig.items() if k != "P"}, const))
"""


@pytest.mark.slow
def test_split_forward_compiles_to_vector_accesses():
    """Compiled for sm_90 on this CPU (no GPU needed; the interpreter off in a child process): at 8192 lanes on
    16 warps each thread moves 16 bf16 of each of x, r, y, r_out; the split kernel does that in 16-byte vectors
    (2 per tensor: 8 in all), the plain kernel at an odd width in none."""
    split_vec, plain_vec = map(int, run_compile_script(_PTX_SCRIPT).split()[-2:])
    assert split_vec == 8 and plain_vec == 0, (split_vec, plain_vec)
