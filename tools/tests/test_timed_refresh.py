"""The refresh before every timed repetition: new values in the same storage where only tensor values changed,
the whole entry replaced where anything else did (never new tensors beside stale lengths), and a CUDA-graph case
(fixed storage) refused by name only when an entry really cannot be refreshed in place."""
from __future__ import annotations

from collections import namedtuple
from types import SimpleNamespace

import pytest

torch = pytest.importorskip("torch")

from gpufolio.check import pristine_copy  # noqa: E402
from gpufolio.worker import _refresh_in_place  # noqa: E402

Batch = namedtuple("Batch", "tokens lengths")


def _case(make):
    return SimpleNamespace(make_inputs=make, outputs_in_inputs=(), mutable_inputs=())


def test_tensor_values_are_copied_into_the_same_storage_and_unchanged_scalars_are_kept():
    case = _case(lambda g: {"x": torch.randn(5, generator=g), "eps": 1e-6, "n": 5})
    gen = torch.Generator().manual_seed(0)
    inputs = case.make_inputs(gen)
    x = inputs["x"]
    before = x.clone()
    for fixed in (False, True):  # a CUDA-graph case with a scalar beside its tensors is refreshed, not refused
        _refresh_in_place(case, inputs, gen, fixed_storage=fixed)
        assert inputs["x"] is x and not torch.equal(x, before)
        assert inputs["eps"] == 1e-6 and inputs["n"] == 5
        before = x.clone()


def test_an_entry_whose_lengths_changed_beside_same_shaped_tensors_is_replaced_whole():
    lengths = iter([[3, 1], [2, 2]])
    case = _case(lambda g: {"batch": Batch(torch.randn(2, 3, generator=g), next(lengths))})
    gen = torch.Generator().manual_seed(0)
    inputs = case.make_inputs(gen)
    _refresh_in_place(case, inputs, gen, fixed_storage=False)
    assert inputs["batch"].lengths == [2, 2]  # the new tokens come with their own lengths


def test_a_cuda_graph_case_is_refused_by_name_when_more_than_tensor_values_change():
    sizes = iter([4, 6])
    case = _case(lambda g: {"x": torch.randn(next(sizes), generator=g)})
    gen = torch.Generator().manual_seed(0)
    inputs = case.make_inputs(gen)
    with pytest.raises(ValueError, match="make_inputs changed 'x'"):
        _refresh_in_place(case, inputs, gen, fixed_storage=True)


def test_a_namedtuple_input_gets_its_pristine_copy():
    inputs = {"batch": Batch(torch.randn(2, 3), [3, 1])}
    copy = pristine_copy(_case(None), inputs)["batch"]
    assert isinstance(copy, Batch) and copy.lengths == [3, 1]
    assert torch.equal(copy.tokens, inputs["batch"].tokens) and copy.tokens is not inputs["batch"].tokens
