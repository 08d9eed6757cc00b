"""The ncu report -> evidence table converter, on a report shaped like `ncu --csv --log-file` writes."""
from __future__ import annotations

from gpufolio_projects.gemm_ladder.lab import ncu_table

REPORT = '''==PROF== Connected to process 1
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1","python3","h","sgemm_naive_kernel(int, int)","1","7","(32, 32, 1)","(8, 8, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","ms","12.5"
"0","1","python3","h","sgemm_naive_kernel(int, int)","1","7","(32, 32, 1)","(8, 8, 1)","0","9.0","Occupancy","Achieved Occupancy","%","97.1"
"1","1","python3","h","ampere_sgemm_128x64_nn","1","7","(256, 1, 1)","(32, 32, 1)","0","9.0","GPU Speed Of Light Throughput","Duration","ms","1.5"
'''


def test_report_rows_follow_launch_order_and_take_the_printed_labels(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(REPORT)
    kernels = ncu_table.read_report(path)
    assert [k["kernel"] for k in kernels] == ["sgemm_naive_kernel(int, int)", "ampere_sgemm_128x64_nn"]
    labels = ncu_table.labels_from("==PROF== x\n01_naive: 1024^3\ncublas: 4096^3\n")
    out = ncu_table.table(kernels, labels, ["Duration", "Achieved Occupancy"])
    assert "| 01_naive | 12.5 ms | 97.1 % |" in out
    assert "| cublas | 1.5 ms | n/a |" in out  # a metric the kernel lacks is shown as missing, not invented


def test_label_count_mismatch_falls_back_to_kernel_names(tmp_path):
    path = tmp_path / "r.csv"
    path.write_text(REPORT)
    out = ncu_table.table(ncu_table.read_report(path), ["only_one"], ["Duration"])
    assert "`sgemm_naive_kernel`" in out and "2 kernels for 1 variants" in out


def test_bf16_profile_order_lines_are_labels():
    assert ncu_table.labels_from("profiled 07_grouped_raster 8192x8192x8192\nprofiled cublas 8192x8192x8192\n") == [
        "07_grouped_raster", "cublas"]


def test_a_file_without_a_header_is_a_clear_error(tmp_path, capsys):
    path = tmp_path / "r.csv"
    path.write_text("==ERROR== ncu failed\n")
    assert ncu_table.main([str(path)]) == 2
    assert "no ncu CSV header" in capsys.readouterr().err
