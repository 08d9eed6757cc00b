"""inference_engine: a paged-KV, continuously batching Llama engine. See README.md beside this file.

Public surface: ``LLM`` and ``SamplingParams`` (import ``gpufolio_projects.inference_engine.llm_engine``;
this package file stays torch-free so the bench module imports without torch).
"""
