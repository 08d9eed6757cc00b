"""oss_pr_notes' facts for the harness.

ENTRY_POINTS: the bench modules, as globs under this folder: bench.py gathers each note's repro by name at import
(importlib), so the notes' repro benches are named here for the source digest to follow their imports.
"""
ENTRY_POINTS = ("bench.py", "notes/*/repro/bench.py")
