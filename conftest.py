"""The suite's one interpreter switch. Without CUDA, Triton kernels run under the interpreter: TRITON_INTERPRET=1,
which triton reads when a kernel is defined, so it is set here, before any test module imports a kernel (nox's
tests session sets it for the whole CPU run anyway). With a GPU and no TRITON_INTERPRET, kernels compile and the
``gpu``-marked tests run; set TRITON_INTERPRET=1 yourself to force the interpreter there. Processes the tests
start inherit it, except fsdp_mfu's gloo ranks (tests/_dist_workers.spawn takes it out: they run PyTorch ops only,
and with it the DCP test aborted in teardown about half the time)."""
import os


def _has_cuda() -> bool:
    try:
        import torch
    except ImportError:
        return False
    return torch.cuda.is_available()


if "TRITON_INTERPRET" not in os.environ and not _has_cuda():
    os.environ["TRITON_INTERPRET"] = "1"
