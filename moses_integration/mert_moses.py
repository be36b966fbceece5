"""Moses' own tuning and decoding, one run at a time: ``mert-moses.pl`` and the ``moses`` decoder.

The pieces :mod:`moses_integration.route` puts together: finding the programs, checking that a
moses.ini can be tuned where mert-moses.pl runs it (absolute paths: it decodes inside its working
directory; the ini loads), one tuning run into its own working directory (continued with
mert-moses.pl's ``--continue`` after its last finished iteration when it was stopped), and a decode
of a test set, 1-best and optionally an n-best list, each written whole or not at all.
"""
from __future__ import annotations

import contextlib
import os
import re
import subprocess
from dataclasses import dataclass
from typing import Callable

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.moses_ini import parse_ini, read_ini_text
from mosesrnn.io.atomic import atomic_file, log_file, program_output
from mosesrnn.io.compressed import read_bytes

from .ini_paths import file_paths, is_relative
from .tools import (
    MOSES_BIN_ENV,
    MosesToolError,
    describe_exit,
    find_program,
    format_command,
    run_command,
    searched_places,
)

__all__ = ["MertSetupError", "MertSettings", "MosesTools", "MERTDIR_PROGRAMS", "find_tools", "mert_command",
           "decode_command", "mertdir_programs_run", "show_weights_command", "relative_paths", "check_ini_loads",
           "run_mert", "decode", "iterations", "decoding_speed"]

SCRIPTS_ENV = "MOSES_SCRIPTS"
# mert-moses.pl dies unless all five are executable in --mertdir.
MERTDIR_PROGRAMS = ("extractor", "mert", "kbmira", "pro", "evaluator")
#: What mert-moses.pl writes when an iteration is done: the file its --continue starts from.
FINISHED_STEP = "finished_step.txt"


class MertSetupError(MosesRNNError):
    """The tuning cannot start: missing programs or files, or a working directory in use."""


@dataclass(frozen=True)
class MertSettings:
    """How mert-moses.pl tunes; ``None`` leaves one of its options at its default."""

    threads: int = 1
    nbest: int | None = None
    maximum_iterations: int | None = None
    batch_mira: bool = False
    return_best_dev: bool = False


@dataclass(frozen=True)
class MosesTools:
    """Paths of the decoder, of mert-moses.pl and of the folder holding the mert programs."""

    moses: str
    mert_moses: str
    mertdir: str


def find_tools(moses_bin: str | None = None, moses_scripts: str | None = None,
               mertdir: str | None = None) -> tuple[MosesTools, list[str]]:
    """Locate the tools; return them (bare names where missing) and one message per missing tool.

    ``moses`` comes from ``moses_bin``/``$MOSES_BIN``/``PATH``; ``mert-moses.pl`` from
    ``moses_scripts``/``$MOSES_SCRIPTS`` (``training/`` or the folder itself) or ``PATH``; the mert
    programs from ``mertdir``, by default the decoder's folder.
    """
    problems = []
    moses = find_program("moses", moses_bin, MOSES_BIN_ENV)
    if moses is None:
        where = searched_places(moses_bin, MOSES_BIN_ENV)
        problems.append(f"moses (the decoder) not found (searched {where}): build Moses and pass "
                        "--moses-bin /path/to/mosesdecoder/bin or set MOSES_BIN")
    script = find_program("mert-moses.pl", moses_scripts, SCRIPTS_ENV, subdirs=("training", ""))
    if script is None:
        where = searched_places(moses_scripts, SCRIPTS_ENV, "--moses-scripts")
        problems.append(f"mert-moses.pl not found (searched {where}): pass --moses-scripts "
                        "/path/to/mosesdecoder/scripts or set MOSES_SCRIPTS")
    mertdir = mertdir or (os.path.dirname(moses) if moses else None)
    if mertdir is not None:
        missing = [p for p in MERTDIR_PROGRAMS if not os.access(os.path.join(mertdir, p), os.X_OK)]
        if missing:
            problems.append(f"{', '.join(missing)} not found in the mertdir {mertdir} (mert-moses.pl needs "
                            f"{', '.join(MERTDIR_PROGRAMS)} there): build Moses with its mert tools "
                            "or pass --mertdir")
    tools = MosesTools(moses or "moses", script or "mert-moses.pl", mertdir or "MERTDIR")
    return tools, problems


def mert_command(tools: MosesTools, settings: MertSettings, dev_src: str, dev_ref: str, ini: str,
                 working_dir: str, resume: bool = False) -> list[str]:
    """The mert-moses.pl command of one run (absolute paths: it changes into its working dir); ``resume``
    continues after the last iteration it finished (its ``--continue``).

    ``settings.threads`` go to the decoder (``--decoder-flags "-threads N"``) and, above 1, to the
    optimiser too (mert-moses.pl's ``--threads N``), which otherwise runs on one core.
    """
    command = [tools.mert_moses, os.path.abspath(dev_src), os.path.abspath(dev_ref), tools.moses,
               os.path.abspath(ini), "--mertdir", tools.mertdir, "--working-dir", os.path.abspath(working_dir),
               "--decoder-flags", f"-threads {settings.threads}"]
    if settings.threads > 1:  # mert-moses.pl's own --threads reach the optimiser (mert)
        command += ["--threads", str(settings.threads)]
    if settings.nbest is not None:
        command += ["--nbest", str(settings.nbest)]
    if settings.maximum_iterations is not None:
        command += ["--maximum-iterations", str(settings.maximum_iterations)]
    if settings.batch_mira:
        command.append("--batch-mira")
    if settings.return_best_dev:
        command.append("--return-best-dev")
    if resume:
        command.append("--continue")
    return command


def mertdir_programs_run(settings: MertSettings) -> tuple[str, ...]:
    """The programs of the mertdir that mert-moses.pl runs with ``settings`` (it needs all five there, but runs
    these): ``extractor`` each iteration, then ``kbmira`` with batch MIRA, else ``mert``; ``evaluator`` to find the
    best dev iteration (``return_best_dev``). ``pro`` runs only with options mosesrnn never passes."""
    return ("extractor", "kbmira" if settings.batch_mira else "mert") + (("evaluator",) if settings.return_best_dev
                                                                          else ())


#: What the decoder adds to each n-best hypothesis for a feature that reads its word alignment (the joint model):
#: the phrases' source and target spans, and the word links.
WORD_ALIGNMENT_FLAGS = ("-include-segmentation-in-n-best", "-print-alignment-info-in-n-best")


def decode_command(tools: MosesTools, ini: str, threads: int, source: str, nbest_list: str | None = None,
                   nbest_size: int = 100, word_alignments: bool = False, distinct: bool = False) -> list[str]:
    """The decoder command translating ``source`` with ``ini`` (1-best on stdout; with ``nbest_list``, the
    ``nbest_size`` best of each sentence to that file too — with ``distinct``, the best of distinct translations,
    Moses' ``distinct`` n-best lists, where a plain list repeats a translation once per derivation —, with
    ``word_alignments`` each hypothesis' segmentation and word alignment in it)."""
    command = [tools.moses, "-f", ini, "-threads", str(threads), "-input-file", source]
    if nbest_list:
        command += ["-n-best-list", nbest_list, str(nbest_size)] + (["distinct"] if distinct else [])
        command += list(WORD_ALIGNMENT_FLAGS if word_alignments else ())
    return command


def show_weights_command(tools: MosesTools, ini: str) -> list[str]:
    """The command that loads ``ini`` and prints its weights: a cheap check that it loads."""
    return [tools.moses, "-f", ini, "-show-weights"]


def relative_paths(ini: str) -> list[str]:
    """``file:line: path=X`` for each relative file path of ``ini`` (see
    :func:`~moses_integration.ini_paths.file_paths`).

    mert-moses.pl runs the decoder inside its working directory, where such paths do not resolve.
    Paths with ``$`` placeholders are left alone.
    """
    lines = parse_ini(read_ini_text(ini))
    return [f"{ini}:{found.line.number}: {found.token}" for found in file_paths(lines) if is_relative(found.path)]


def check_ini_loads(tools: MosesTools, ini: str) -> None:
    """Raise :class:`MertSetupError` with the decoder's last words unless ``moses -f INI -show-weights`` works."""
    command = show_weights_command(tools, ini)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        raise MertSetupError(f"moses cannot load {ini} ({format_command(command)}: "
                             f"{describe_exit(done.returncode)}):\n{tail}")


def iterations(working_dir: str) -> int:
    """How many iterations mert-moses.pl has started in ``working_dir`` (its ``runK.moses.ini`` files)."""
    if not os.path.isdir(working_dir):
        return 0
    return sum(1 for name in os.listdir(working_dir) if name.startswith("run") and name.endswith(".moses.ini"))


def run_mert(tools: MosesTools, settings: MertSettings, dev_src: str, dev_ref: str, ini: str, working_dir: str,
             log: Callable[[str], None]) -> str:
    """Tune ``ini`` into ``working_dir`` (its log beside it, ``WORKING_DIR.log``); returns the tuned moses.ini.

    A run stopped after a finished iteration continues from there (``--continue``); one stopped before
    its first starts again.
    """
    tuned = os.path.join(working_dir, "moses.ini")
    resume = os.path.isfile(os.path.join(working_dir, FINISHED_STEP))
    command = mert_command(tools, settings, dev_src, dev_ref, ini, working_dir, resume)
    log(f"{'continuing' if resume else 'running'}: {format_command(command)} > {working_dir}.log 2>&1")
    with log_file(working_dir + ".log") as out:
        try:
            run_command(command, stdout=out, stderr=subprocess.STDOUT)
        except MosesToolError as error:
            raise MosesToolError(f"{error}\nsee {working_dir}.log; the iterations done so far: mosesrnn mert-report "
                                 f"{working_dir}") from None
    if not os.path.isfile(tuned):
        raise MosesToolError(f"{tuned} was not written; see {working_dir}.log")
    return tuned


def decode(tools: MosesTools, ini: str, threads: int, source: str, output: str, nbest_list: str | None = None,
           nbest_size: int = 100, word_alignments: bool = False, distinct: bool = False) -> None:
    """Translate ``source`` into ``output`` (1-best, one line each) and, given ``nbest_list``, its n-best list
    (:func:`decode_command`); the decoder's log goes to ``OUTPUT.log``. Each file appears whole or not at all."""
    with contextlib.ExitStack() as stack:
        listing = stack.enter_context(program_output(nbest_list)) if nbest_list else None
        out = stack.enter_context(atomic_file(output))
        err = stack.enter_context(log_file(output + ".log"))
        run_command(decode_command(tools, ini, threads, source, listing, nbest_size, word_alignments, distinct),
                    stdout=out, stderr=err)


def decoding_speed(log: str) -> float | None:
    """Sentences per second of a decode, from Moses' per-sentence ``Translation took X seconds total`` lines
    of its log (None when there are none). Several decoding threads write into one log, so a line may be cut by
    another's (``took 0.0650.000 seconds``): such a line is left out, not read as a number."""
    times = [float(m) for m in re.findall(rb"Translation took (\d+(?:\.\d+)?) seconds total", read_bytes(log))]
    return len(times) / sum(times) if times and sum(times) else None
