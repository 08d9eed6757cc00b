"""On a GPU box without jsonschema the store still writes records (checking the schema's required keys); the full
schema check happens wherever they are loaded with jsonschema (CI loads every committed record)."""
import sys

import pytest
from gpufolio import store
from made_records import RA, rec


@pytest.fixture
def no_jsonschema(monkeypatch):
    monkeypatch.setitem(sys.modules, "jsonschema", None)  # import jsonschema raises ImportError
    store._validator.cache_clear()
    yield
    store._validator.cache_clear()


def test_records_are_written_and_read_without_jsonschema(no_jsonschema, tmp_path):
    path = tmp_path / f"{RA}.jsonl"
    store.append(path, rec(RA))
    assert [r["run_id"] for r in store.read_file(path).records] == [RA]


def test_a_missing_required_key_is_still_refused(no_jsonschema, tmp_path):
    bad = rec(RA)
    del bad["timing"]
    with pytest.raises(store.RecordError, match="'timing' is a required property"):
        store.append(tmp_path / "x.jsonl", bad)
