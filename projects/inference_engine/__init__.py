"""inference_engine: see README.md beside this file."""
