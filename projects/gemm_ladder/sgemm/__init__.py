"""The FP32 SGEMM ladder: one CUDA kernel per rung (NN_technique.cu), listed in registry.py."""
