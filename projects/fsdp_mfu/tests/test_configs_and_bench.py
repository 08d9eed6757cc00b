from __future__ import annotations

import subprocess
import sys

import pytest
from gpufolio_projects.fsdp_mfu.configs import CONFIGS, ModelConfig


def test_configs_validate():
    with pytest.raises(ValueError):
        ModelConfig("bad", dim=100, n_layers=1, n_heads=3, n_kv_heads=3, ffn_dim=8, vocab_size=8)
    with pytest.raises(ValueError):
        ModelConfig("bad", dim=96, n_layers=1, n_heads=4, n_kv_heads=3, ffn_dim=8, vocab_size=8)
    sizes = {name: c.num_params() for name, c in CONFIGS.items()}
    assert 100e6 < sizes["llama_125m"] < 150e6 and 300e6 < sizes["llama_350m"] < 400e6
    assert 0.9e9 < sizes["llama_1b"] < 1.1e9 and 7.5e9 < sizes["llama_8b"] < 8.5e9
    assert CONFIGS["llama_125m"].vocab_size == 256  # byte-level: the stdlib loss curve


def test_bench_imports_without_torch():
    code = ("import sys; sys.modules['torch'] = None; "
            "from gpufolio_projects.fsdp_mfu.bench import BENCHES; "
            "b = BENCHES[0]; assert b.name == 'train_step' and b.headline_baseline == 'single_compile'; "
            "assert b.configs('quick')[0]['model'] == 'llama_1b'")
    subprocess.run([sys.executable, "-c", code], check=True)


def test_train_config_validation():
    pytest.importorskip("torch")
    from gpufolio_projects.fsdp_mfu.trainer import TrainConfig

    with pytest.raises(ValueError):
        TrainConfig(mode="zero3")
    with pytest.raises(ValueError):
        TrainConfig(mode="single", meta_init=True)
    cfg = TrainConfig(warmup_steps=10, decay_steps=100, min_lr_ratio=0.1)
    assert cfg.lr_factor(0) == pytest.approx(0.1) and cfg.lr_factor(9) == 1.0
    assert cfg.lr_factor(110) == pytest.approx(0.1) and cfg.lr_factor(500) == pytest.approx(0.1)


def test_profile_buckets_kernel_names():
    pytest.importorskip("torch")
    from gpufolio_projects.fsdp_mfu.kernel_buckets import bucket

    assert bucket("sm90_xmma_gemm_bf16bf16_bf16f32_f32_tn_n_tilesize128x256x64") == "gemm"
    assert bucket("nvjet_hsh_256x128_64x4_1x2_h_bz_coopA_NTN") == "gemm"
    assert bucket("pytorch_flash::flash_bwd_dq_dk_dv_loop_seqk_parallel_kernel") == "attention"
    assert bucket("cudnn_generated_fort_native_sdpa_sm90_flash_fprop_wgmma_f16_knob_3") == "attention"
    # Inductor's kernels are named after what they fuse: a fused norm is Triton work, not the optimizer's
    assert bucket("triton_red_fused__to_copy_add_mean_mul_pow_rsqrt_0") == "triton"
    assert bucket("void at::native::(anonymous namespace)::multi_tensor_apply_kernel<FusedAdamMathFunctor>") == "optimizer"
    assert bucket("ncclDevKernel_AllGather_RING_LL(ncclDevKernelArgsStorage<4096ul>)") == "comm_copy"
    assert bucket("some_unknown_kernel") == "other"


def test_step_breakdown_metrics():
    pytest.importorskip("torch")
    from gpufolio_projects.fsdp_mfu.kernel_buckets import breakdown_metrics

    m = breakdown_metrics({"gemm": 60.0, "attention": 10.0, "triton": 20.0}, step_ms=100.0, dense_flops=6e13,
                          attention_causal_flops=2e12)
    assert m["step_gemm_pct"][0] == 60.0 and m["step_optimizer_pct"][0] == 0.0
    assert m["step_idle_pct"][0] == pytest.approx(10.0) and m["step_overlap_pct"][0] == 0.0
    assert m["gemm_tflops"][0] == pytest.approx(1000.0) and m["attention_causal_tflops"][0] == pytest.approx(200.0)
    # kernels on two streams: 95 ms of kernel time in 85 ms of busy GPU
    m = breakdown_metrics({"gemm": 80.0, "comm_copy": 15.0}, 100.0, 1.0, 1.0, busy_ms=85.0)
    assert m["step_idle_pct"][0] == pytest.approx(15.0) and m["step_overlap_pct"][0] == pytest.approx(10.0)


def test_profile_buckets_runs_on_cpu():
    torch = pytest.importorskip("torch")
    from gpufolio_projects.fsdp_mfu.kernel_buckets import profile_buckets

    x = torch.randn(64, 64)
    kernels, top, busy = profile_buckets(lambda: x @ x, 2, lambda: None)
    assert kernels == {} and top == {} and busy == 0.0  # no CUDA kernels on CPU: nothing is invented


def test_busy_time_is_a_union_and_skips_annotations():
    torch = pytest.importorskip("torch")
    from types import SimpleNamespace as NS

    from gpufolio_projects.fsdp_mfu.kernel_buckets import busy_union_ms, kernel_buckets

    cuda = torch.autograd.DeviceType.CUDA

    def ev(key, start, end, annotation=False):
        return NS(key=key, device_type=cuda, is_user_annotation=annotation, time_range=NS(start=start, end=end),
                  device_time_total=end - start)

    events = [ev("nvjet_sm90_tst_256x128", 0, 1000), ev("ncclDevKernel_AllGather", 500, 1500),  # overlap 500 us
              ev("triton_poi_fused_add_0", 2000, 2500),
              ev("Optimizer.step#AdamW.step", 0, 2500, annotation=True),  # a range over kernels: not a kernel
              ev("FSDP::post_backward_reduce", 0, 2500)]  # annotation named like one, flag or not
    prof = NS(events=lambda: events, key_averages=lambda: events)
    assert busy_union_ms(prof, steps=1) == pytest.approx(2.0)  # [0, 1500] + [2000, 2500] us
    kernels, _ = kernel_buckets(prof, steps=1)
    assert kernels == pytest.approx({"gemm": 1.0, "comm_copy": 1.0, "triton": 0.5})


def test_headline_metric_is_mfu_per_gpu_of_its_own_datasheet():
    from gpufolio_projects.fsdp_mfu import bench
    from gpufolio_projects.fsdp_mfu.bench_common import StepWork

    assert bench.BENCHES[0].metric is bench.MFU and bench.MFU.name == "mfu"
    assert bench.MFU.unit == "% of datasheet bf16 dense peak" and "989" not in bench.MFU.unit
    work = StepWork(tokens=1000, flops=989e12, peak_tflops=989.0)  # one second of the peak on one GPU
    assert bench.MFU.value(work, 2.0) == pytest.approx(50.0)
    two = StepWork(tokens=1000, flops=989e12, gpus=2, peak_tflops=989.0)  # the same flops over two ranks
    assert bench.MFU.value(two, 2.0) == pytest.approx(25.0)
    slower_card = StepWork(tokens=1000, flops=312e12, peak_tflops=312.0)  # the card's own peak, not 989
    assert bench.MFU.value(slower_card, 1.0) == pytest.approx(100.0)


def test_an_unlisted_gpu_is_refused_not_given_a_peak(monkeypatch):
    import torch
    from gpufolio.api import Unsupported
    from gpufolio_projects.fsdp_mfu import bench_common

    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H100 PCIe")
    with pytest.raises(Unsupported, match="H100 PCIe"):
        bench_common.datasheet_peak_tflops(torch.device("cuda"))
    monkeypatch.setattr(torch.cuda, "get_device_name", lambda device=None: "NVIDIA H200")
    assert bench_common.datasheet_peak_tflops(torch.device("cuda")) == 989.0


def test_cublas_ceiling_is_the_stamps(monkeypatch):
    from gpufolio import stamp
    from gpufolio_projects.fsdp_mfu import bench

    monkeypatch.setattr(stamp, "_LAST", {"bf16_tflops": 700.0, "bf16_size": 8192.0})
    assert bench.bf16_ceiling() == 700.0
    monkeypatch.setattr(stamp, "_LAST", {})  # no stamp (no CUDA): no ceiling, and the case times none itself
    assert bench.bf16_ceiling() is None


def test_profile_step_measures_the_bench_step_on_cpu(tmp_path):
    """profile_step.py builds the bench's own step (bench.build_step) and times it with the harness's timer."""
    pytest.importorskip("torch")
    from types import SimpleNamespace as NS

    import torch
    from gpufolio_projects.fsdp_mfu import profile_step

    a = NS(model="tiny", seq=32, sdpa="auto", warmup=1, steps=2, profile_steps=1, trace=False, out=tmp_path)
    r = profile_step.measure("single+fused_proj@2", a, torch.device("cpu"), do_profile=True)
    assert r["options"] == {"fused_proj": True, "compile": False} and r["B"] == 2 and r["timing"]["n"] == 2
    assert r["step_ms"] > 0 and r["tok_s"] > 0 and r["mem_pred_gib"] > 0 and "mfu" not in r  # no GPU, no MFU
    assert "kernel_ms_per_step" in r
    assert "fsdp2_compile" in profile_step.summary_line(dict(r, setting="fsdp2_compile@2"))
