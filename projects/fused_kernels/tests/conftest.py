"""Without a GPU the Triton kernels run through the interpreter, which must be switched on before triton
compiles anything (conftest loads before the test modules import the kernels). With a GPU, the same tests
and the ``gpu``-marked ones run compiled kernels; set TRITON_INTERPRET=1 yourself to force the interpreter."""
import os

import pytest
import torch

HAS_CUDA = torch.cuda.is_available()
if not HAS_CUDA:
    os.environ.setdefault("TRITON_INTERPRET", "1")


def pytest_collection_modifyitems(config, items):
    """GPU tests skip (rather than error) where there is no CUDA, so a plain `pytest` run stays green."""
    if not HAS_CUDA:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
