"""Issue 42: the refusal paths, run hundreds of times with garbage collections forced at awkward moments, end.

A reader left open by a refusal was closed by whichever garbage collection came next: once that was the one a
starting thread runs in its bootstrap, under the lock that joining the reader's thread takes, and ``make test``
hung for good. Here each round leaves its errors (and what their frames hold) to the garbage collector, then
starts threads with the collection threshold swept so that collections fall inside the start of a thread, a
gzip writer's included. The rounds run in a child process: a deadlock there is ended and reported, with every
thread's stack, instead of hanging the suite. Run as a script, this file is that child. And should a test hang
all the same, the suite's time limit ends the run, with the stacks.
"""
from __future__ import annotations

import faulthandler
import gc
import gzip
import subprocess
import sys
import threading
import warnings
from pathlib import Path

from conftest import write_pytest_ini

ROUNDS = 200
#: The collection thresholds swept: each makes the collection fall at another allocation of a thread's start.
THRESHOLDS = range(1, 25)
#: Far above the few seconds the rounds take, on a loaded machine too.
TIME_LIMIT = 120


def test_the_refusal_paths_end_with_collections_inside_thread_starts(tmp_path):
    run = subprocess.run([sys.executable, __file__, str(tmp_path), str(ROUNDS)], capture_output=True, text=True,
                         timeout=TIME_LIMIT + 30, cwd=Path(__file__).parent.parent)
    assert run.returncode == 0, run.stdout + run.stderr  # a hang: the child's stacks, from faulthandler
    assert run.stdout.strip() == f"{ROUNDS} rounds", run.stdout + run.stderr


def test_a_hung_test_ends_the_run_with_every_threads_stack(tmp_path):
    """setup.cfg's time limit, here 1 s instead of its 1500: the run stops, saying where each thread waits."""
    (tmp_path / "test_hung.py").write_text("import threading\n\n\ndef test_deadlocked():\n"
                                           "    lock = threading.Lock()\n    lock.acquire()\n    lock.acquire()\n")
    write_pytest_ini(tmp_path)
    run = subprocess.run([sys.executable, "-m", "pytest", "-q", "-p", "no:cacheprovider", "-o",
                          "faulthandler_timeout=1", "test_hung.py"], cwd=tmp_path, capture_output=True, text=True,
                         timeout=60)
    assert run.returncode != 0, run.stdout + run.stderr
    assert "Timeout (0:00:01)!" in run.stderr and 'test_hung.py", line 7 in test_deadlocked' in run.stderr, run.stderr


# -- the child -----------------------------------------------------------------------------------------------------

def _tables(folder: Path) -> dict[str, str]:
    """A phrase table, its reordering table, and inputs that each path refuses half-way through."""
    pairs = [f"s{i // 3:03d} ||| t{i:03d} ||| 0.{i % 9 + 1} 0.5 0.{i % 7 + 1} 0.5 2.718 |||\n" for i in range(300)]
    reorderings = [f"s{i // 3:03d} ||| t{i:03d} ||| 0.2 0.3 0.5 0.2 0.3 0.5\n" for i in range(300)]
    contents = {
        "pt.gz": pairs,
        "ro-other.gz": reorderings[:150] + ["s999 ||| other ||| 0.2 0.3 0.5 0.2 0.3 0.5\n"] + reorderings[151:],
        "ro-shorter.gz": reorderings[:150],
        "pt-bad.gz": pairs[:150] + ["s050 ||| broken\n"] + pairs[151:],
        "vocab.gz": ["not a vocabulary\n"] * 300,
        "gap.nbest.gz": [f"{i // 3 * 2} ||| h{i} ||| LM0= -{i} ||| -{i}\n" for i in range(300)],
    }
    paths = {}
    for name, lines in contents.items():
        paths[name] = str(folder / name)
        Path(paths[name]).write_bytes(gzip.compress("".join(lines).encode("utf-8")))
    return paths


def _refusals(paths: dict[str, str], out: Path) -> list[BaseException]:
    """Run each refusal path once; return the errors, whose frames hold what the paths left."""
    from mosesrnn.formats.phrase_table import count_scores
    from mosesrnn.pipeline.prune import Ranking, Selection, run_prune_job
    from mosesrnn.text.vocab import Vocabulary
    from mosesrnn.tuning.rerank import rerank

    def prune(table: str, reordering: str) -> None:
        run_prune_job(table, str(out / "pt.gz"), Ranking("column 2", column=2), Selection(top=1),
                    reordering=reordering, reordering_output=str(out / "ro.gz"))

    attempts = [lambda: prune(paths["pt.gz"], paths["ro-other.gz"]),
                lambda: prune(paths["pt.gz"], paths["ro-shorter.gz"]),
                lambda: prune(paths["pt-bad.gz"], paths["ro-other.gz"]),
                lambda: Vocabulary.load(paths["vocab.gz"]),
                lambda: list(rerank(paths["gap.nbest.gz"], {"LM0": (1.0,)}))]
    errors = []
    for attempt in attempts:
        try:
            attempt()
        except ValueError as error:
            errors.append(error)
    count_scores(paths["pt.gz"])  # a head read: the rest of the table is left
    assert len(errors) == len(attempts), errors
    return errors


def _start_thread_at(threshold: int, out: Path) -> None:
    """Start a thread, then a gzip writer's, with the youngest generations collected at ``threshold`` allocations."""
    from mosesrnn.io.compressed import atomic_output

    thread = threading.Thread(target=lambda: None)
    saved = gc.get_threshold()
    gc.collect(0)
    gc.set_threshold(threshold, 0)
    try:
        thread.start()
        with atomic_output(str(out / "written.gz")) as stream:
            stream.write(b"x\n")
    finally:
        gc.set_threshold(*saved)
    thread.join()


def _main(folder: Path, rounds: int) -> None:
    faulthandler.dump_traceback_later(TIME_LIMIT, exit=True)
    unraisable = []
    sys.unraisablehook = unraisable.append  # e.g. "cannot join current thread": a reader closed by its own thread
    warnings.simplefilter("error", ResourceWarning)  # a Reader collected unclosed
    paths, out = _tables(folder), folder / "out"
    out.mkdir()
    gc.collect()
    gc.freeze()  # the collections below look at what the rounds made only
    for number in range(rounds):
        errors = _refusals(paths, out)
        gc.collect(0)  # what the errors hold moves to an older generation, alive
        del errors  # and is garbage there, for the next collection of that generation
        _start_thread_at(THRESHOLDS[number % len(THRESHOLDS)], out)
    gc.collect()
    if unraisable:
        raise AssertionError(f"{len(unraisable)} errors in finalisers, the first: {unraisable[0].exc_value!r} in "
                             f"{unraisable[0].object!r}")
    print(f"{rounds} rounds")


if __name__ == "__main__":
    _main(Path(sys.argv[1]), int(sys.argv[2]))
