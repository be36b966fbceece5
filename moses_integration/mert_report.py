"""Report on mert-moses.pl working directories, finished or stopped, and apply an iteration's weights.

A tuning stopped by a time limit or Ctrl-C prints nothing, but mert-moses.pl has left, for each
iteration K it started (``scripts/training/mert-moses.pl``):

- ``runK.moses.ini``: the ini decoded in iteration K (its tables are the filtered ones under
  ``filtered/``), with that iteration's weights: the initial ones for K = 1, then those the
  optimiser found in iteration K-1;
- ``runK.out``: the dev set's 1-best translations with those weights, once decoded;
- ``runK.mert.log``: the optimiser's log. MERT's holds ``Best point: w1 ... wn => 0.2543``, the
  line mert-moses.pl reads its dev BLEU from; batch MIRA's (kbmira) ``Best BLEU = 0.2543``. That
  is the BLEU, on the n-best lists pooled so far, of the weights that become iteration K+1's;
- ``moses.ini`` at the end: the original ini with the final weights.

So each iteration's weights come with two dev BLEUs: the optimiser's estimate (from the previous
iteration's log) and, given the dev reference, the BLEU of its decoded ``runK.out`` (what
mert-moses.pl's ``--return-best-dev`` compares). :func:`apply_iteration` writes the full
(unfiltered) ini with a chosen iteration's weights.
"""
from __future__ import annotations

import os
import re
from dataclasses import dataclass
from typing import Callable, Sequence

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.moses_ini import MosesIniError, read_ini_text, read_weights, replace_weights
from mosesrnn.io.compressed import atomic_output, read_bytes
from mosesrnn.tuning.bleu import file_bleu

from .route.report import compare_with
from .route.report_file import REPORT_JSON, markdown, read_report

__all__ = ["Iteration", "Tuning", "tuning_dirs", "read_tuning", "choose_iteration", "weights_table",
           "format_tuning", "apply_iteration", "report_work_dir"]

_RUN_INI = re.compile(r"^run(\d+)\.moses\.ini$")
_LOGGED_BLEU = (re.compile(r"Best point:\s*[\s\d.eE+\-]+?\s*=> ([\-\d.]+)"),  # mert
                re.compile(r"Best BLEU = ([\-\d.]+)"))  # kbmira


@dataclass(frozen=True)
class Iteration:
    """Iteration ``number``: its ini and weights, the optimiser's BLEU estimate for them, and the
    BLEU of their decoded dev set (both ×100; None where unknown)."""

    number: int
    ini: str
    weights: dict[str, tuple[float, ...]]
    estimated_bleu: float | None
    dev_bleu: float | None


@dataclass(frozen=True)
class Tuning:
    """One mert-moses.pl working directory: its iterations, and whether it wrote its final moses.ini."""

    path: str
    iterations: tuple[Iteration, ...]
    finished: bool


def _iteration_numbers(directory: str) -> list[int]:
    names = os.listdir(directory)
    return sorted(int(match.group(1)) for match in map(_RUN_INI.match, names) if match)


def _natural(name: str) -> tuple:
    return tuple(int(part) if part.isdigit() else part for part in re.split(r"(\d+)", name))


def _found_tunings(work_dir: str) -> list[str]:
    """``[work_dir]`` if it is a mert-moses.pl working directory, else its subfolders that are (maybe none)."""
    if _iteration_numbers(work_dir):
        return [work_dir]
    return [os.path.join(work_dir, name) for name in sorted(os.listdir(work_dir), key=_natural)
            if os.path.isdir(os.path.join(work_dir, name)) and _iteration_numbers(os.path.join(work_dir, name))]


def tuning_dirs(work_dir: str) -> list[str]:
    """``work_dir`` if it is a mert-moses.pl working directory, else its subfolders that are
    (``run1``, ``run2``, ``baseline-run1``... as ``mosesrnn tune`` makes them)."""
    found = _found_tunings(work_dir)
    if not found:
        raise MosesRNNError(f"{work_dir}: no run*.moses.ini here or in its subfolders: not a mert-moses.pl "
                            "working directory, or it stopped before its first iteration")
    return found


def _logged_bleu(log: str) -> float | None:
    try:
        text = read_bytes(log).decode("utf-8", errors="replace")
    except FileNotFoundError:
        return None
    for pattern in _LOGGED_BLEU:
        found = pattern.findall(text)
        if found:
            return 100 * float(found[-1])
    return None


def _decoded_bleu(hypothesis: str, dev_ref: str | None, tokenize: str) -> float | None:
    if dev_ref is None or not os.path.isfile(hypothesis):
        return None
    try:
        return file_bleu(hypothesis, dev_ref, tokenize)[0]
    except ValueError:  # decoding was stopped part way: fewer lines than the reference
        return None


def read_tuning(directory: str, dev_ref: str | None = None, tokenize: str = "none") -> Tuning:
    """Read every iteration of the mert-moses.pl working ``directory``; with ``dev_ref``, score
    each complete ``runK.out`` against it with sacreBLEU (``tokenize``)."""
    iterations = []
    for k in _iteration_numbers(directory):
        ini = os.path.join(directory, f"run{k}.moses.ini")
        estimate = _logged_bleu(os.path.join(directory, f"run{k - 1}.mert.log")) if k > 1 else None
        decoded = _decoded_bleu(os.path.join(directory, f"run{k}.out"), dev_ref, tokenize)
        iterations.append(Iteration(k, ini, read_weights(ini), estimate, decoded))
    return Tuning(directory, tuple(iterations), os.path.isfile(os.path.join(directory, "moses.ini")))


def choose_iteration(tuning: Tuning, which: str) -> Iteration:
    """Iteration ``which``: a number, ``last``, or ``best`` (the highest decoded dev BLEU if any
    is known, else the highest estimate; the earliest on a tie)."""
    if which == "last":
        return tuning.iterations[-1]
    if which == "best":
        for attribute in ("dev_bleu", "estimated_bleu"):
            scored = [it for it in tuning.iterations if getattr(it, attribute) is not None]
            if scored:
                return max(scored, key=lambda it: (getattr(it, attribute), -it.number))
        raise MosesRNNError(f"{tuning.path}: no dev BLEU known (no run*.mert.log with a score; give the dev "
                            "reference with --dev-ref), so no best iteration: name one")
    numbers = {it.number: it for it in tuning.iterations}
    if not which.isdigit() or int(which) not in numbers:
        raise MosesRNNError(f"{tuning.path}: no iteration {which!r}; choose best, last or one of "
                            f"{', '.join(map(str, numbers))}")
    return numbers[int(which)]


def weights_table(tuned: dict[str, dict[str, tuple[float, ...]]], extra_rows: Sequence[Sequence[str]] = ()) -> str:
    """A table of tuned weights, one row per weight (``Name`` or ``Name[i]``), one column per run or
    iteration; ``extra_rows`` (a label and one cell per column, e.g. BLEU) go at the bottom."""
    runs = list(tuned)
    names = list(dict.fromkeys(name for weights in tuned.values() for name in weights))
    rows = [["weight", *runs]]
    for name in names:
        size = max(len(weights.get(name, ())) for weights in tuned.values())
        for i in range(size):
            label = f"{name}[{i}]" if size > 1 else name
            rows.append([label, *(_cell(tuned[run].get(name, ()), i) for run in runs)])
    rows += [list(row) for row in extra_rows]
    widths = [max(len(row[c]) for row in rows) for c in range(len(rows[0]))]
    return "\n".join("  ".join(cell.ljust(w) for cell, w in zip(row, widths)).rstrip() for row in rows)


def _cell(values: tuple[float, ...], i: int) -> str:
    return f"{values[i]:.6g}" if i < len(values) else "-"


def _bleu_cells(values) -> list[str]:
    return [f"{v:.2f}" if v is not None else "-" for v in values]


def format_tuning(tuning: Tuning) -> str:
    """The weights of each iteration, its dev BLEUs, and which is best."""
    state = "finished (moses.ini written)" if tuning.finished else "stopped before the end (no moses.ini)"
    count = len(tuning.iterations)
    rows = [["dev BLEU, optimiser's estimate", *_bleu_cells(it.estimated_bleu for it in tuning.iterations)]]
    if any(it.dev_bleu is not None for it in tuning.iterations):
        rows.append(["dev BLEU of runK.out", *_bleu_cells(it.dev_bleu for it in tuning.iterations)])
    table = weights_table({f"iter{it.number}": it.weights for it in tuning.iterations}, rows)
    lines = [f"{tuning.path}: {count} iteration{'s' if count != 1 else ''}, {state}", table]
    try:
        best = choose_iteration(tuning, "best")
        lines.append(f"best: iteration {best.number} ({best.ini})")
    except ValueError:
        lines.append("best: unknown (no dev BLEU logged yet)")
    return "\n".join(lines)


def apply_iteration(iteration: Iteration, full_ini: str, output: str) -> None:
    """Write ``output``: the full (unfiltered) ``full_ini`` with ``iteration``'s weights.

    Only the ``[weight]`` lines change (see :func:`~mosesrnn.formats.moses_ini.replace_weights`);
    the output appears atomically. Raises MosesIniError if the iteration's ini holds no weights.
    """
    if not iteration.weights:
        raise MosesIniError(iteration.ini, None, f"no [weight] lines: iteration {iteration.number} has no weights "
                                                 "to apply")
    text = replace_weights(read_ini_text(full_ini), iteration.weights, full_ini)
    with atomic_output(output) as stream:
        stream.write(text.encode("utf-8"))


def report_work_dir(work_dir: str, show: Callable[[str], None], dev_ref: str | None = None, tokenize: str = "none",
                    against: str | None = None, which: str | None = None, full_ini: str | None = None,
                    output: str | None = None) -> Iteration | None:
    """Show (``show``, a text at a time) what ``work_dir`` holds, and apply one of its iterations: what
    ``mosesrnn mert-report`` does.

    For a finished ``mosesrnn tune``, first its report (``report.json`` as Markdown; with ``against``, every
    stage compared with that one instead of the baseline); then every tuning's iterations
    (:func:`format_tuning`, with ``dev_ref`` the BLEU of each decoded dev set). Given ``which`` (a number,
    ``best`` or ``last``), writes ``output``: ``full_ini`` with that iteration's weights
    (:func:`apply_iteration`), and returns the iteration. Raises MosesRNNError for a folder of several
    tunings with ``which``, and ``against`` without a tune report or naming no stage of it.
    """
    report = os.path.join(work_dir, REPORT_JSON)
    if os.path.isfile(report):
        route = read_report(report)
        if against is not None:
            route = compare_with(route, against, tokenize)
        show(markdown(route, against or "baseline"))
    elif against is not None:
        raise MosesRNNError(f"--against compares the stages of a `mosesrnn tune` report: {report} is missing")
    if os.path.isfile(report) and which is None and not _found_tunings(work_dir):
        return None  # a published report (docs/results/NAME): its runs stayed where the tuning ran
    tunings = [read_tuning(directory, dev_ref, tokenize) for directory in tuning_dirs(work_dir)]
    if which is not None and len(tunings) > 1:
        raise MosesRNNError(f"{work_dir} holds {len(tunings)} tunings: --apply to one of them, e.g. {tunings[0].path}")
    show("\n\n".join(format_tuning(tuning) for tuning in tunings))
    if which is None:
        return None
    chosen = choose_iteration(tunings[0], which)
    apply_iteration(chosen, full_ini, output)
    return chosen
