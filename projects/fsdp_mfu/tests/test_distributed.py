"""2 and 4 ranks on the gloo backend (CPU): single, ddp, fsdp2 and (at 4) HSDP on a 2x2 mesh compute the same
losses and gradients, and a DCP checkpoint resumes to the same losses — in fp32 on a tiny model, so differences are summation order only.
The rank bodies live in _dist_workers.py (spawned processes import them by name)."""
from __future__ import annotations

import os
import tempfile

import pytest

pytest.importorskip("torch")

from gpufolio_projects.fsdp_mfu.tests._dist_workers import equivalence, resume, spawn  # noqa: E402


def test_single_ddp_fsdp2_same_losses_and_grads():
    spawn(equivalence)


@pytest.mark.slow  # four ranks on two cores: about 40 s
def test_four_ranks_ddp_fsdp2_hsdp_same_losses_and_grads():
    spawn(equivalence, world=4)


def test_dcp_resume_reproduces_losses():
    with tempfile.TemporaryDirectory() as d:
        spawn(resume, os.path.join(d, "ckpt"))
