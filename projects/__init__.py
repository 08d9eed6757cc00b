"""The six portfolio projects (import name gpufolio_projects); each has bench.py, tests/ and results/."""
