"""Shared fixtures: paths to the real data the tests run on.

The suite runs on the slices in ``tests/data`` alone; where the project's shared data folder lies
beside the repository (our machines and CI), some tests also run on the whole files.
"""
import os
import shutil
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


def built_program(name: str, env: str = "MOSES_BIN", default: str = "~/moses/mosesdecoder/bin") -> str:
    """A program of a Moses (or NPLM) build: in ``$env``, then ``default`` (where build-moses.sh puts it), then
    PATH; or a skip saying how to get one, as on a machine without Moses."""
    for folder in (os.environ.get(env), os.path.expanduser(default)):
        if folder and os.access(os.path.join(folder, name), os.X_OK):
            return os.path.join(folder, name)
    found = shutil.which(name)
    if found is None:
        pytest.skip(f"{name} not found (${env}, {default}, PATH): build NPLM and Moses --with-nplm with "
                    f"build-moses.sh to run this check")
    return found


@pytest.fixture
def tatoeba_table() -> Path:
    """3,001 consecutive lines of the real en→fr Tatoeba Moses table (alignment, counts, empty fields)."""
    return DATA / "tatoeba.en-fr.3k.gz"
