"""Triton kernels (fwd.py, bwd.py), their configs and tuner (tuning.py) and plain launchers (launch.py)."""
