"""CPU tests run the Triton kernels under the interpreter, which must be switched on before any kernel module
imports triton: without CUDA, TRITON_INTERPRET=1 is set here (nox sets it for the whole CPU session anyway).
With CUDA and no TRITON_INTERPRET, the GPU tests (marked ``gpu``) run and the interpreter tests skip."""
import os

import pytest

if "TRITON_INTERPRET" not in os.environ:
    try:
        import torch

        _cuda = torch.cuda.is_available()
    except ImportError:
        _cuda = False
    if not _cuda:
        os.environ["TRITON_INTERPRET"] = "1"


@pytest.fixture(autouse=True)
def _seed():
    import torch

    torch.manual_seed(0)
