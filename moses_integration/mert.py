"""Re-tune a Moses system with mert-moses.pl several times and compare BLEU on a test set.

MERT is unstable: tuning the same system twice gives different weights and BLEU scores. Clark et
al. (2011) recommend at least three tuning runs and reporting the mean and the spread, so we
run ``mert-moses.pl`` ``runs`` times, each into a fresh working directory (it reuses a stale
``filtered/`` and caches feature names in ``features.list``, which would hide a rescored table or
a changed num-features), decode the test set with every tuned moses.ini and report BLEU as
mean ± standard deviation, for the new system and for a baseline tuned the same way.
"""
from __future__ import annotations

import os
import statistics
import subprocess
import sys
from dataclasses import dataclass
from typing import Callable, Sequence

from sacrebleu.metrics import BLEU

from mosesrnn.locks import lock_path

from .ini_paths import file_paths, is_relative
from .ini_text import read_ini_text
from .moses_ini import parse_ini, read_weights
from .tools import (
    MOSES_BIN_ENV,
    MosesToolError,
    describe_exit,
    find_program,
    format_command,
    run_command,
    searched_places,
)

__all__ = ["MertSetupError", "MertOptions", "MosesTools", "TuningRun", "MERTDIR_PROGRAMS", "BLEU_TOKENIZERS",
           "find_tools", "plan_runs", "mert_command", "decode_command", "show_weights_command",
           "relative_paths", "corpus_bleu", "mean_std", "format_weights", "format_bleu", "tune"]

SCRIPTS_ENV = "MOSES_SCRIPTS"
BLEU_TOKENIZERS = tuple(BLEU.TOKENIZERS)
# mert-moses.pl dies unless all five are executable in --mertdir.
MERTDIR_PROGRAMS = ("extractor", "mert", "kbmira", "pro", "evaluator")


LOCK_NAME = os.path.basename(lock_path("work", folder=True))  # the lock of a running mosesrnn command


class MertSetupError(ValueError):
    """The tuning cannot start: missing programs or files, or a working directory in use."""


@dataclass(frozen=True)
class MertOptions:
    """What to tune and how; ``None`` leaves a mert-moses.pl option at its default."""

    dev_src: str
    dev_ref: str
    ini: str
    work_dir: str
    runs: int = 3
    threads: int = 1
    nbest: int | None = None
    maximum_iterations: int | None = None
    batch_mira: bool = False
    return_best_dev: bool = False
    test_src: str | None = None
    test_ref: str | None = None
    baseline: str | None = None
    tokenize: str = "13a"


@dataclass(frozen=True)
class MosesTools:
    """Paths of the decoder, of mert-moses.pl and of the folder holding the mert programs."""

    moses: str
    mert_moses: str
    mertdir: str


@dataclass(frozen=True)
class TuningRun:
    """One tuning of ``ini`` into ``working_dir``; ``system`` is ``new`` or ``baseline``."""

    system: str
    index: int
    ini: str
    working_dir: str

    @property
    def log(self) -> str:
        """mert-moses.pl's output, beside (not inside) its working directory."""
        return self.working_dir + ".log"

    @property
    def tuned_ini(self) -> str:
        """The moses.ini mert-moses.pl writes at the end: the input ini with tuned weights."""
        return os.path.join(self.working_dir, "moses.ini")

    @property
    def hypothesis(self) -> str:
        """The decoded test set."""
        return os.path.join(self.working_dir, "test.hyp")


def _stderr(message: str) -> None:
    print(message, file=sys.stderr, flush=True)


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


def plan_runs(options: MertOptions) -> list[TuningRun]:
    """The tuning runs: ``run1..K`` for the new system, ``baseline-run1..K`` for the baseline."""
    systems = [("new", options.ini, "run")]
    if options.baseline:
        systems.append(("baseline", options.baseline, "baseline-run"))
    return [TuningRun(system, k, ini, os.path.join(options.work_dir, f"{prefix}{k}"))
            for system, ini, prefix in systems for k in range(1, options.runs + 1)]


def mert_command(tools: MosesTools, options: MertOptions, run: TuningRun) -> list[str]:
    """The mert-moses.pl command of one run (absolute paths: it changes into its working dir).

    ``options.threads`` go to the decoder (``--decoder-flags "-threads N"``) and, above 1, to the
    optimiser too (mert-moses.pl's ``--threads N``), which otherwise runs on one core.
    """
    command = [tools.mert_moses, os.path.abspath(options.dev_src), os.path.abspath(options.dev_ref),
               tools.moses, os.path.abspath(run.ini), "--mertdir", tools.mertdir,
               "--working-dir", os.path.abspath(run.working_dir),
               "--decoder-flags", f"-threads {options.threads}"]
    if options.threads > 1:  # mert-moses.pl's own --threads reach the optimiser (mert)
        command += ["--threads", str(options.threads)]
    if options.nbest is not None:
        command += ["--nbest", str(options.nbest)]
    if options.maximum_iterations is not None:
        command += ["--maximum-iterations", str(options.maximum_iterations)]
    if options.batch_mira:
        command.append("--batch-mira")
    if options.return_best_dev:
        command.append("--return-best-dev")
    return command


def decode_command(tools: MosesTools, ini: str, threads: int, source: str) -> list[str]:
    """The decoder command translating ``source`` with ``ini`` (output on stdout)."""
    return [tools.moses, "-f", ini, "-threads", str(threads), "-input-file", source]


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


def _input_problems(options: MertOptions) -> list[str]:
    problems = []
    if options.runs < 1 or options.threads < 1:
        problems.append("--runs and --threads must be at least 1")
    if (options.test_src is None) != (options.test_ref is None):
        problems.append("give both --test-src and --test-ref, or neither")
    files = (options.dev_src, options.dev_ref, options.ini, options.baseline, options.test_src,
             options.test_ref)
    problems += [f"{path}: no such file" for path in files if path is not None and not os.path.isfile(path)]
    if os.path.isdir(options.work_dir) and set(os.listdir(options.work_dir)) - {LOCK_NAME}:
        problems.append(f"{options.work_dir} is not empty: tune into a fresh working directory (a stale "
                        "filtered/ or features.list would hide the changed features)")
    for ini in filter(None, (options.ini, options.baseline)):
        relative = relative_paths(ini) if os.path.isfile(ini) else []
        problems += [f"{where} is relative, but mert-moses.pl decodes inside its working directory: "
                     "use an absolute path" for where in relative]
        if relative:
            problems.append(f"to make every path of {ini} absolute: mosesrnn moses-ini {ini} --absolute-paths "
                            "--relative-to DIR -o NEW.ini, DIR being where they are relative to")
    return problems


def _check_ini_loads(tools: MosesTools, ini: str) -> None:
    command = show_weights_command(tools, ini)
    done = subprocess.run(command, capture_output=True, text=True, check=False)
    if done.returncode != 0:
        tail = "\n".join(done.stderr.splitlines()[-15:])
        raise MertSetupError(f"moses cannot load {ini} ({format_command(command)}: "
                             f"{describe_exit(done.returncode)}):\n{tail}")


def _tune_one(tools: MosesTools, options: MertOptions, run: TuningRun, log: Callable[[str], None]) -> None:
    command = mert_command(tools, options, run)
    log(f"tuning {run.system} run {run.index}: {format_command(command)} > {run.log} 2>&1")
    with open(run.log, "w", encoding="utf-8") as out:
        try:
            run_command(command, stdout=out, stderr=subprocess.STDOUT)
        except MosesToolError as error:
            raise MosesToolError(f"{error}\nsee {run.log}; the iterations done so far: mosesrnn mert-report "
                                 f"{run.working_dir}") from None
        except KeyboardInterrupt:
            log(f"interrupted; the iterations done so far: mosesrnn mert-report {options.work_dir}")
            raise
    if not os.path.isfile(run.tuned_ini):
        raise MosesToolError(f"{run.tuned_ini} was not written; see {run.log}")


def _decode(tools: MosesTools, options: MertOptions, run: TuningRun, log: Callable[[str], None]) -> None:
    command = decode_command(tools, run.tuned_ini, options.threads, options.test_src)
    log(f"decoding the test set: {format_command(command, run.hypothesis)}")
    with open(run.hypothesis, "w", encoding="utf-8") as out, open(run.working_dir + ".test.log", "w") as err:
        run_command(command, stdout=out, stderr=err)


def corpus_bleu(hypothesis: str, reference: str, tokenize: str = "13a") -> tuple[float, str]:
    """sacreBLEU of a hypothesis file against one reference file, and its signature."""
    with open(hypothesis, encoding="utf-8") as stream:
        hyps = stream.read().splitlines()
    with open(reference, encoding="utf-8") as stream:
        refs = stream.read().splitlines()
    if len(hyps) != len(refs):
        raise ValueError(f"{hypothesis} has {len(hyps)} lines but {reference} has {len(refs)}")
    metric = BLEU(tokenize=tokenize, force=tokenize == "none")  # "none": tokenised text on purpose
    return metric.corpus_score(hyps, [refs]).score, str(metric.get_signature())


def mean_std(values: Sequence[float]) -> tuple[float, float | None]:
    """Mean and sample standard deviation (None for a single value: no spread to measure)."""
    return statistics.mean(values), (statistics.stdev(values) if len(values) > 1 else None)


def format_weights(tuned: dict[str, dict[str, tuple[float, ...]]], extra_rows: Sequence[Sequence[str]] = ()) -> str:
    """A table of tuned weights, one row per weight (``Name`` or ``Name[i]``), one column per run;
    ``extra_rows`` (a label and one cell per run, e.g. BLEU) go at the bottom."""
    runs = list(tuned)
    names = list(dict.fromkeys(name for weights in tuned.values() for name in weights))
    rows = [["weight", *runs]]
    for name in names:
        size = max(len(weights.get(name, ())) for weights in tuned.values())
        for i in range(size):
            label = f"{name}[{i}]" if size > 1 else name
            cells = [_cell(tuned[run].get(name, ()), i) for run in runs]
            rows.append([label, *cells])
    return _table(rows + [list(row) for row in extra_rows])


def _cell(values: tuple[float, ...], i: int) -> str:
    return f"{values[i]:.6g}" if i < len(values) else "-"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def format_bleu(scores: dict[str, list[float]], signature: str) -> str:
    """BLEU as mean ± std over runs per system, each run's score, and new − baseline."""
    lines = [f"Test BLEU, mean ± sample std over tuning runs (sacreBLEU {signature})"]
    for system, values in scores.items():
        mean, std = mean_std(values)
        spread = f"± {std:.2f}" if std is not None else "(1 run: no spread; use at least 3)"
        runs = ", ".join(f"{v:.2f}" for v in values)
        lines.append(f"  {system:<9} {mean:6.2f} {spread}   runs: {runs}")
    if "baseline" in scores:
        delta = statistics.mean(scores["new"]) - statistics.mean(scores["baseline"])
        lines.append(f"  new − baseline: {delta:+.2f} BLEU (difference of the means)")
    return "\n".join(lines)


def _dry_run(tools: MosesTools, options: MertOptions, runs: list[TuningRun], problems: list[str]) -> str:
    lines = [f"# problem: {problem}" for problem in problems]
    for ini in filter(None, (options.ini, options.baseline)):
        lines.append(format_command(show_weights_command(tools, ini)))
    lines += [f"{format_command(mert_command(tools, options, run))} > {run.log} 2>&1" for run in runs]
    if options.test_src:
        lines += [format_command(decode_command(tools, run.tuned_ini, options.threads, options.test_src),
                                 run.hypothesis) for run in runs]
        lines.append(f"# then sacreBLEU (tokenize={options.tokenize}) of each test.hyp against "
                     f"{options.test_ref}")
    return "\n".join(lines)


def tune(options: MertOptions, moses_bin: str | None = None, moses_scripts: str | None = None,
         mertdir: str | None = None, dry_run: bool = False, log: Callable[[str], None] = _stderr) -> str:
    """Tune ``options.runs`` times (and the baseline as often), then return the report.

    The report lists each run's tuned weights and, given a test set, BLEU as mean ± std per
    system. Everything is checked before the first run: tools, files, the working directory,
    relative table paths, and that each ini loads (``moses -f INI -show-weights``); any problem
    raises :class:`MertSetupError` saying what to install or set. With ``dry_run`` the commands
    are returned instead, after the problems found without running anything.
    """
    runs = plan_runs(options)
    tools, problems = find_tools(moses_bin, moses_scripts, mertdir)
    problems += _input_problems(options)
    if dry_run:
        return _dry_run(tools, options, runs, problems)
    if problems:
        raise MertSetupError("cannot start tuning:\n  " + "\n  ".join(problems))
    for ini in filter(None, (options.ini, options.baseline)):
        _check_ini_loads(tools, ini)
    os.makedirs(options.work_dir, exist_ok=True)
    for run in runs:
        _tune_one(tools, options, run, log)
    report = []
    for system in dict.fromkeys(run.system for run in runs):
        tuned = {f"run{r.index}": read_weights(r.tuned_ini) for r in runs if r.system == system}
        report.append(f"Tuned weights ({system} system)\n{format_weights(tuned)}")
    if options.test_src:
        report.append(_test_bleu(tools, options, runs, log))
    return "\n\n".join(report)


def _test_bleu(tools: MosesTools, options: MertOptions, runs: list[TuningRun],
               log: Callable[[str], None]) -> str:
    scores, signature = {}, ""
    for run in runs:
        _decode(tools, options, run, log)
        score, signature = corpus_bleu(run.hypothesis, options.test_ref, options.tokenize)
        scores.setdefault(run.system, []).append(score)
    return format_bleu(scores, signature)
