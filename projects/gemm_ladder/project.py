"""gemm_ladder's facts for the harness: the stages of a lab run (``python -m gpufolio lab gemm_ladder``).

Default: build both extensions (cold, ptxas -v in the log), the GPU tests, the quick benches, SASS counts. Off by
default (name them: ``gemm_ladder:sweep,ncu_sgemm``): the tile sweep, the probe sweeps and the ncu profiles.
"""
from gpufolio.lab import Stage, bench, gpu_tests, module

# The project's facts (gpufolio.project_facts reads these literals without running this file).
TITLE = "GEMM ladder"
ORDER = 1
HOME_BENCHES = ("bf16_gemm", "sgemm")  # the bench the home page quotes, in order of preference
NEEDS_NVCC = True  # its kernels are CUDA C++ compiled at run time

LAB = "gpufolio_projects.gemm_ladder.lab"
TESTS = "projects/gemm_ladder/tests"
VERBOSE = {"GPUFOLIO_BUILD_VERBOSE": "1"}  # ninja echoes every nvcc line, ptxas -v included
SGEMM_NCU_METRICS = ("l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,"
                     "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__inst_executed_pipe_fma.sum,"
                     "sm__cycles_elapsed.avg.per_second")
BF16_NCU_METRICS = ("gpu__time_duration.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,"
                    "sm__pipe_tensor_op_hmma_cycles_active.avg.pct_of_peak_sustained_active,"
                    "sm__throughput.avg.pct_of_peak_sustained_elapsed,dram__throughput.avg.pct_of_peak_sustained_elapsed,"
                    "dram__bytes_read.sum,dram__bytes_write.sum,lts__t_sector_hit_rate.pct,"
                    "l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,launch__registers_per_thread,"
                    "launch__grid_size,sm__cycles_active.avg,sm__cycles_elapsed.avg,"
                    "smsp__cycles_active.avg.pct_of_peak_sustained_elapsed")
BF16_PROFILED = ("01_mma_sync_ldmatrix,02_cp_async_pipeline,03_tma_wgmma,04_wgmma_two_consumers,05_warp_specialized,"
                 "06_persistent,07_grouped_raster,08_cluster_multicast,09_tma_store_epilogue,10_cluster_pairs,"
                 "11_whole_rounds,12_multicast_one_issuer,13_multicast_four_stages,"
                 "14_multicast_four_stages_tma_store,15_stream_k,cublas")

STAGES = (
    module("build_sgemm", f"{LAB}.build", "sgemm", limit_s=170, env=VERBOSE, what="cold build, SGEMM extension"),
    module("build_bf16", f"{LAB}.build", "bf16", limit_s=300, env=VERBOSE, what="cold build, BF16 extension"),
    # The refusal path first, alone: if a refusal still crashed the process, the next stage's would too.
    gpu_tests("sgemm_refusal", f"{TESTS}/test_sgemm_gpu.py", "-q", "-rA", "-k",
              "test_binding_refusal_returns_instead_of_crashing", limit_s=60),
    gpu_tests("sgemm_tests", f"{TESTS}/test_sgemm_gpu.py", "-q", limit_s=90),
    gpu_tests("bf16_tests", f"{TESTS}/test_bf16_gpu.py", "-v", limit_s=150),
    bench("gemm_ladder", "bench_sgemm", "--bench", "sgemm", "--quick", "--timeout", "60", limit_s=400),
    bench("gemm_ladder", "bench_bf16", "--bench", "bf16_gemm", "--quick", "--timeout", "60", limit_s=400),
    bench("gemm_ladder", "bench_full", "--timeout", "60", limit_s=560, default=False),
    Stage("sass", ("{python}", "-m", f"{LAB}.sass", "{out}"), 60, "resource usage and HGMMA/TMA counts per kernel",
          needs=("cuobjdump",)),
    module("sweep", f"{LAB}.sgemm_sweep", "--size", "4096", limit_s=120, default=False,
           what="the tile sweep behind rungs 09-11 (its own extension)"),
    module("probe", f"{LAB}.bf16_probe", "--shape", "8192", "8192", "8192", "--shape", "8192", "28672", "4096",
           "--shape", "2048", "2048", "2048", limit_s=180, default=False,
           what="the persistent kernel's variants (its own extension)"),
    module("probe_pp", f"{LAB}.bf16_probe", "--shape", "8192", "8192", "8192", "--shape", "4096", "4096", "4096",
           "--shape", "8192", "28672", "4096", "--shape", "4099", "4104", "776", "--only-listed", "--variants", "^PP",
           "--grids", "0,128", limit_s=180, default=False,
           what="the ping-pong probe variants beside cuBLAS and rung 14, the ragged shape for their edges"),
    Stage("ncu_probe", ("ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "profile/", "-c", "3",
                        "--metrics", BF16_NCU_METRICS, "--csv", "--log-file", "{out}/ncu_probe.csv",
                        "{python}", "-m", f"{LAB}.bf16_probe", "--shape", "8192", "8192", "8192", "--only-listed",
                        "--variants", "^PP", "--profile"),
          120, "ncu on cuBLAS and the two ping-pong probe variants at 8192^3", default=False, needs=("ncu",)),
    Stage("ncu_sgemm", ("ncu", "--clock-control", "none", "-k", "regex:gemm|xmma|cutlass", "-c", "16", "--csv",
                        "--log-file", "{out}/ncu_sgemm.csv", "--section", "SpeedOfLight", "--section", "Occupancy",
                        "--section", "LaunchStats", "--section", "WarpStateStats", "--metrics", SGEMM_NCU_METRICS,
                        "{python}", "-m", f"{LAB}.sgemm_profile", "--size", "4096"),
          120, "ncu on every SGEMM rung and cuBLAS at 4096^3 (table: table_sgemm)", default=False, needs=("ncu",)),
    Stage("ncu_bf16", ("ncu", "--clock-control", "none", "--nvtx", "--nvtx-include", "profile/", "-c", str(BF16_PROFILED.count(",") + 1),
                       "--metrics", BF16_NCU_METRICS, "--csv", "--log-file", "{out}/ncu_bf16.csv",
                       "{python}", "-m", f"{LAB}.bf16_profile", BF16_PROFILED, "8192", "8192", "8192"),
          150, "ncu on every BF16 rung and cuBLAS at 8192^3, one process", default=False, needs=("ncu",)),
    # The tables the writeups link to, from the ncu stages' CSVs and logs (the profiling scripts print the order).
    module("table_sgemm", f"{LAB}.ncu_table", "{out}/ncu_sgemm.csv", "--order", "{out}/ncu_sgemm.log",
           "--metric", "Duration", "--metric", "Compute (SM) Throughput", "--metric", "Memory Throughput",
           "--metric", "DRAM Throughput", "--metric", "Achieved Occupancy", "--metric", "Registers Per Thread",
           limit_s=30, default=False, what="ncu_sgemm's table"),
    module("table_bf16", f"{LAB}.ncu_table", "{out}/ncu_bf16.csv", "--order", "{out}/ncu_bf16.log", limit_s=30,
           default=False, what="ncu_bf16's table"),
    module("table_probe", f"{LAB}.ncu_table", "{out}/ncu_probe.csv", "--order", "{out}/ncu_probe.log", limit_s=30,
           default=False, what="ncu_probe's table"),
)
