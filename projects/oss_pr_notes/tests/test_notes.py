"""The committed notes pass gpufolio.prnotes' rules (the rules themselves are tested in tools/tests/prnotes)."""
from gpufolio.prnotes import validate_all


def test_committed_notes_are_valid():
    assert validate_all() == []
