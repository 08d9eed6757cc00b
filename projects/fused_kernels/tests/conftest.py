"""Without a GPU the Triton kernels run through the interpreter (the root conftest switches it on). With a GPU,
the same tests and the ``gpu``-marked ones run compiled kernels; set TRITON_INTERPRET=1 yourself to force the
interpreter."""
import pytest
import torch

HAS_CUDA = torch.cuda.is_available()


def pytest_collection_modifyitems(config, items):
    """GPU tests skip (rather than error) where there is no CUDA, so a plain `pytest` run stays green."""
    if not HAS_CUDA:
        skip = pytest.mark.skip(reason="needs a CUDA GPU")
        for item in items:
            if "gpu" in item.keywords:
                item.add_marker(skip)
