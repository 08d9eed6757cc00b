"""The repro bench of this note: upstream vs patched in one run (bench.py)."""
