"""CPU tests run the Triton kernels under the interpreter (the root conftest switches it on without CUDA). With
CUDA and no TRITON_INTERPRET, the GPU tests (marked ``gpu``) run and the interpreter tests skip."""
import pytest


@pytest.fixture(autouse=True)
def _seed():
    import torch

    torch.manual_seed(0)
