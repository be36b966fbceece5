"""Shared fixtures: paths to the real data the tests run on.

The suite runs on the slices in ``tests/data`` alone; where the project's shared data folder lies
beside the repository (our machines and CI), some tests also run on the whole files.
"""
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
DATA = TESTS / "data"
MOSES_TABLES = DATA / "moses-tables"
#: The project's shared data folder, beside the repository on our machines and on CI.
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


def shared_file(relative: str) -> Path:
    """A file of ../shared/data, or a skip (with the reason) where it is absent, as on a user's clone."""
    path = SHARED_DATA / relative
    if not path.exists():
        pytest.skip(f"{path} is absent: the whole-file check runs only beside the project's shared data")
    return path


@pytest.fixture
def tatoeba_table() -> Path:
    """3,001 consecutive lines of the real en→fr Tatoeba Moses table (alignment, counts, empty fields)."""
    return DATA / "tatoeba.en-fr.3k.gz"
