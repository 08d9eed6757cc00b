"""The environment stamp: which GPU, which software, what state the card was in, and the run's own ceilings.

Taken once per run inside the benchmark worker (the only process that touches CUDA); clocks, power and
temperature are read again at the end of the run. On a machine without a GPU the stamp says so (gpu: null).
"""
from __future__ import annotations

import platform
import shutil
import subprocess
import sys
from typing import Any


def _cpu_model() -> str | None:
    try:
        with open("/proc/cpuinfo", encoding="utf-8") as f:
            for line in f:
                if line.startswith("model name"):
                    return line.split(":", 1)[1].strip()
    except OSError:
        pass
    return platform.processor() or None


def _version(module: str) -> str | None:
    try:
        mod = __import__(module)
    except Exception:  # noqa: BLE001 - a broken optional install is just "absent" here
        return None
    return getattr(mod, "__version__", None)


def gpu_state(index: int = 0) -> dict[str, Any] | None:
    """SM/memory clocks (MHz), power draw and limit (W), temperature (C): nvidia-ml-py, else nvidia-smi."""
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            h = pynvml.nvmlDeviceGetHandleByIndex(index)
            return {
                "sm_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_SM),
                "mem_clock_mhz": pynvml.nvmlDeviceGetClockInfo(h, pynvml.NVML_CLOCK_MEM),
                "power_w": pynvml.nvmlDeviceGetPowerUsage(h) / 1000.0,
                "power_limit_w": pynvml.nvmlDeviceGetEnforcedPowerLimit(h) / 1000.0,
                "temperature_c": pynvml.nvmlDeviceGetTemperature(h, pynvml.NVML_TEMPERATURE_GPU),
            }
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001 - fall through to nvidia-smi
        pass
    if shutil.which("nvidia-smi") is None:
        return None
    fields = "clocks.sm,clocks.mem,power.draw,power.limit,temperature.gpu"
    try:
        out = subprocess.run(
            ["nvidia-smi", f"--query-gpu={fields}", "--format=csv,noheader,nounits", f"--id={index}"],
            capture_output=True, text=True, timeout=20, check=True,
        ).stdout.strip().split(", ")
        keys = ["sm_clock_mhz", "mem_clock_mhz", "power_w", "power_limit_w", "temperature_c"]
        return {k: float(v) for k, v in zip(keys, out)}
    except (subprocess.SubprocessError, ValueError, OSError):
        return None


def _driver() -> str | None:
    try:
        import pynvml

        pynvml.nvmlInit()
        try:
            d = pynvml.nvmlSystemGetDriverVersion()
            return d.decode() if isinstance(d, bytes) else d
        finally:
            pynvml.nvmlShutdown()
    except Exception:  # noqa: BLE001
        pass
    if shutil.which("nvidia-smi"):
        try:
            return subprocess.run(["nvidia-smi", "--query-gpu=driver_version", "--format=csv,noheader"],
                                  capture_output=True, text=True, timeout=20, check=True).stdout.split()[0]
        except (subprocess.SubprocessError, IndexError, OSError):
            return None
    return None


def collect_env(ceilings: dict[str, float] | None = None) -> dict[str, Any]:
    """The stamp every record of a run carries. ``ceilings`` come from ``measure_ceilings``."""
    env: dict[str, Any] = {
        "gpu": None,
        "cuda": None,
        "torch": _version("torch"),
        "torch_git": None,
        "triton": _version("triton"),
        "python": sys.version.split()[0],
        "cpu": _cpu_model(),
        "platform": platform.platform(),
        "ceilings": ceilings or {},
    }
    try:
        import torch
    except ImportError:
        return env
    env["torch_git"] = getattr(torch.version, "git_version", None)
    env["cuda"] = torch.version.cuda
    if torch.cuda.is_available():
        props = torch.cuda.get_device_properties(0)
        env["gpu"] = {
            "name": props.name,
            "count": torch.cuda.device_count(),
            "sm_count": props.multi_processor_count,
            "memory_gib": round(props.total_memory / 2**30, 1),
            "compute_capability": f"{props.major}.{props.minor}",
            "l2_mib": round(getattr(props, "L2_cache_size", 0) / 2**20, 1) or None,
            "driver": _driver(),
            "clocks_start": gpu_state(0),
            "clocks_end": None,
        }
    return env


# The ceilings this process measured last (the worker stamps a run before its cases): a case that divides by
# the run's cuBLAS rate reads it here instead of timing its own (``last_ceilings``).
_LAST: dict[str, float] = {}


def last_ceilings() -> dict[str, float]:
    """What ``measure_ceilings`` returned last in this process; empty if it has not run here."""
    return dict(_LAST)


def measure_ceilings(quick: bool = False) -> dict[str, float]:
    """The run's own ceilings, measured like every other number (events, warm-up, median).

    copy_gbps:   device-to-device copy of 1 GiB (counting bytes read + written), GB/s.
    bf16_tflops: cuBLAS bf16 8192³, TFLOP/s (quick or not).
    fp32_tflops: cuBLAS fp32 with TF32 off, 4096³, TFLOP/s.
    """
    import torch

    from .timing import time_events

    if not torch.cuda.is_available():
        return {}
    out: dict[str, float] = {}
    n = (256 if quick else 1024) * 2**20 // 4
    src = torch.randn(n, device="cuda")
    dst = torch.empty_like(src)
    t = time_events(lambda: dst.copy_(src), warmup_ms=50, rep_ms=200, min_reps=10, flush_l2=False)
    out["copy_gbps"] = 2 * src.numel() * 4 / (t.median_ms * 1e-3) / 1e9  # read src + write dst

    # 8192³ in quick runs too: a ceiling measured at 4096³ (where cuBLAS itself is slower) put an 8192³ GEMM at
    # "105% of the measured cuBLAS ceiling" beside 0.94x the same run's cuBLAS. It costs about a second more.
    size = 8192
    a = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    b = torch.randn(size, size, device="cuda", dtype=torch.bfloat16)
    # A long warm-up: the SM clock idles at 345 MHz and ramps under load (seen on our H200). Timed the way every
    # case is (L2 flushed and inputs refreshed between reps): back to back, under sustained power, cuBLAS read
    # 678 TFLOP/s in a run whose own cuBLAS baseline, timed by the harness, reached 753 at the same size.
    def refresh(i: int, n: int) -> None:
        a.normal_()
        b.normal_()

    t = time_events(lambda: a @ b, warmup_ms=1000, rep_ms=500, min_reps=20, prepare=refresh)
    out["bf16_tflops"] = 2 * size**3 / (t.median_ms * 1e-3) / 1e12
    out["bf16_size"] = float(size)

    prev = torch.backends.cuda.matmul.allow_tf32
    torch.backends.cuda.matmul.allow_tf32 = False
    try:
        a = torch.randn(4096, 4096, device="cuda")
        b = torch.randn(4096, 4096, device="cuda")
        t = time_events(lambda: a @ b, warmup_ms=100, rep_ms=300, min_reps=10, flush_l2=False)
        out["fp32_tflops"] = 2 * 4096**3 / (t.median_ms * 1e-3) / 1e12
    finally:
        torch.backends.cuda.matmul.allow_tf32 = prev
    torch.cuda.empty_cache()
    _LAST.clear()
    _LAST.update(out)
    return out
