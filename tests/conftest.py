"""Shared fixtures: paths to the real data the tests run on."""
from pathlib import Path

import pytest

TESTS = Path(__file__).parent
DATA = TESTS / "data"
#: The project's shared data folder lies beside the repository (as on CI).
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


def shared_file(relative: str) -> Path:
    """A file of ../shared/data; a missing one is an error, not a skip."""
    path = SHARED_DATA / relative
    if not path.exists():
        raise FileNotFoundError(f"{path} is missing: the tests expect ../shared beside the repository")
    return path


@pytest.fixture
def tatoeba_table() -> Path:
    """3,001 consecutive lines of the real en→fr Tatoeba Moses table (alignment, counts, empty fields)."""
    return DATA / "tatoeba.en-fr.3k.gz"
