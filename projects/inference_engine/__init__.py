"""inference_engine: a paged-KV, continuously batching Llama engine. See README.md beside this file.

Public surface: ``LLM`` and ``SamplingParams``. They load lazily, so importing the package (and ``bench``)
needs no torch.
"""


def __getattr__(name: str):
    if name == "LLM":
        from .llm_engine import LLM
        return LLM
    if name == "SamplingParams":
        from .sampling_params import SamplingParams
        return SamplingParams
    raise AttributeError(name)
