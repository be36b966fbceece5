"""Shared fixtures: paths to the real data the tests run on, a tiny model file, one torch thread, and the guard
against readers left open.

The suite runs on the slices in ``tests/data`` alone; where the project's shared data folder lies
beside the repository (our machines and CI), some tests also run on the whole files.
"""
import configparser
import contextlib
import functools
import gc
import itertools
import os
import shutil
import threading
import time
import warnings
import weakref
from pathlib import Path

import pytest

from mosesrnn.encdec.config import EOS_ID
from mosesrnn.io.gzip_stream import GzipReader, GzipWriter

TESTS = Path(__file__).parent
DATA = TESTS / "data"
MOSES_TABLES = DATA / "moses-tables"
#: The project's shared data folder, beside the repository on our machines and on CI.
SHARED_DATA = TESTS.parent.parent / "shared" / "data"


#: Encoder test pairs (source ids, target ids ending in EOS): sources of 1..9 words, targets of 0..8 words.
ENCODER_PAIRS = [
    ([5], [7, EOS_ID]),
    ([3, 4, 18], [9, 3, 20, EOS_ID]),
    ([6, 1, 7, 8, 9], [EOS_ID]),
    ([4, 4], [5, 6, 7, 8, 9, 10, 11, 12, EOS_ID]),
    ([3, 5, 7, 9, 11, 13, 15, 17, 2], [4, 4, EOS_ID]),
    ([8, 9, 10, 11], [12, 13, 14, 15, 16, EOS_ID]),
]


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


def write_pytest_ini(folder: Path) -> None:
    """The suite's pytest settings (setup.cfg's ``[tool:pytest]``) as ``folder/pytest.ini``, for a run of
    pytest in ``folder`` that checks what the settings do."""
    settings = configparser.ConfigParser()
    settings.read(TESTS.parent / "setup.cfg")
    ini = configparser.ConfigParser()
    ini["pytest"] = {key: value for key, value in settings["tool:pytest"].items() if key != "testpaths"}
    with open(folder / "pytest.ini", "w") as stream:
        ini.write(stream)


@pytest.fixture
def tatoeba_table() -> Path:
    """3,001 consecutive lines of the real en→fr Tatoeba Moses table (alignment, counts, empty fields)."""
    return DATA / "tatoeba.en-fr.3k.gz"


@pytest.fixture(scope="session")
def model_path(tmp_path_factory) -> str:
    """A tiny RNN Encoder-Decoder file (:func:`scoring_helpers.save_tiny_model`), made once for the whole run and
    only read: a test that changes a model file makes its own."""
    from scoring_helpers import save_tiny_model
    return save_tiny_model(str(tmp_path_factory.mktemp("model") / "tiny.pt"))


@pytest.fixture(scope="session", autouse=True)
def one_torch_thread():
    """torch computes on one CPU thread in every test: the numbers do not hang on the machine's cores, and the
    tests run beside other work (a command's --threads, or an API call's, changes it for that run alone)."""
    import torch
    torch.set_num_threads(1)


# -- readers left open --------------------------------------------------------------------------------------------
#: How long the reading and writing threads a test started get to end after it (a closed reader's has ended).
THREAD_GRACE = 2.0
_SERIALS = itertools.count(1)


@pytest.fixture(scope="session")
def _gzip_streams():
    """Every threaded gzip stream (mosesrnn.io.gzip_stream's reader and writer) opened while the tests run, with
    its serial number, held weakly."""
    opened: weakref.WeakKeyDictionary = weakref.WeakKeyDictionary()

    def registering(init):
        @functools.wraps(init)
        def __init__(self, *args, **kwargs):
            init(self, *args, **kwargs)
            opened[self] = next(_SERIALS)
        return __init__

    with pytest.MonkeyPatch.context() as patch:
        for stream in (GzipReader, GzipWriter):
            patch.setattr(stream, "__init__", registering(stream.__init__))
        yield opened


@pytest.fixture(scope="module", autouse=True)
def _young_garbage_only():
    """Freeze the objects alive between tests so that :func:`no_reader_left_open`'s collection only looks at what
    a test made (a full collection of the suite's objects takes 0.1-0.3 s, a test); a module's end collects all."""
    gc.collect()
    gc.freeze()
    yield
    gc.unfreeze()
    gc.collect()


def _reading_thread(thread: threading.Thread) -> bool:
    return thread.name.startswith("mosesrnn-")


@pytest.fixture(autouse=True)
def no_reader_left_open(_gzip_streams, _young_garbage_only):
    """Fail a test that leaves a reader open for the garbage collector to close (see :mod:`mosesrnn.io.readers`).

    After the test: a threaded gzip stream it opened and did not close, or a reading or writing thread (mosesrnn's)
    still running after :data:`THREAD_GRACE`, fails it here; a garbage collection then finalises what it left, so
    that a :class:`~mosesrnn.io.readers.Reader` collected unclosed warns ResourceWarning within this test (an error:
    setup.cfg), and nothing it left is closed later, in another test's thread.
    """
    threads, first = set(threading.enumerate()), next(_SERIALS)
    yield
    deadline = time.monotonic() + THREAD_GRACE
    started = [thread for thread in set(threading.enumerate()) - threads if _reading_thread(thread)]
    for thread in started:
        thread.join(max(0.0, deadline - time.monotonic()))
    left = [f"thread {thread.name} still running" for thread in started if thread.is_alive()]
    streams = [stream for stream, serial in list(_gzip_streams.items()) if serial > first and not stream.closed]
    for stream in streams:
        left.append(f"{type(stream).__name__} over {getattr(stream.raw, 'name', stream.raw)!r} not closed")
        with contextlib.suppress(OSError, ValueError):  # closed here, not by a later test's garbage collection
            stream.close()
    del streams
    with warnings.catch_warnings():
        if left:  # its readers' warnings would say it again
            warnings.simplefilter("ignore", ResourceWarning)
        gc.collect()
    gc.freeze()
    if left:
        pytest.fail("left open (read in a `with` block, see mosesrnn.io.readers): " + "; ".join(left), pytrace=False)
