from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

from gpufolio_projects.fsdp_mfu.data import (  # noqa: E402
    BatchSpec,
    SyntheticBatches,
    TextBatches,
    is_val,
    load_stdlib_bytes,
    stdlib_files,
)


@pytest.fixture(scope="module")
def streams():
    return load_stdlib_bytes()


def test_stdlib_split_is_deterministic_and_disjoint(streams, tmp_path):
    train, val = streams
    assert train.numel() > 10 * val.numel() > 0
    again_train, again_val = load_stdlib_bytes()
    assert torch.equal(train, again_train) and torch.equal(val, again_val)
    # the split is a function of the relative path only
    assert is_val("json/decoder.py") == is_val("json/decoder.py")
    files = stdlib_files()
    assert files == sorted(files) and all("site-packages" not in p.parts for p in files)


def test_batches_depend_on_step_only_and_ranks_tile_the_global_batch(streams):
    train, _ = streams
    full = TextBatches(train, BatchSpec(6, 33), seed=1)
    x, y = full.batch(5)
    assert x.shape == (6, 33) and torch.equal(x[:, 1:], y[:, :-1])
    assert torch.equal(full.batch(5)[0], x) and not torch.equal(full.batch(6)[0], x)
    parts = [TextBatches(train, BatchSpec(6, 33, r, 3), seed=1).batch(5)[0] for r in range(3)]
    assert torch.equal(torch.cat(parts), x)
    syn = [SyntheticBatches(256, BatchSpec(4, 16, r, 2), seed=2).batch(0) for r in range(2)]
    assert torch.equal(torch.cat([s[0] for s in syn]), SyntheticBatches(256, BatchSpec(4, 16), 2).batch(0)[0])


def test_batch_spec_refuses_uneven_split():
    with pytest.raises(ValueError):
        BatchSpec(5, 16, 0, 2)
