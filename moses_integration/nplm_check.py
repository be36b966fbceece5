"""Whether the decoder's NPLM features read their model files or the heap: a check before tuning.

An NPLM without the fix of ``fix-nplm.sh`` decides whether to skip its second hidden layer from
uninitialised memory, so Moses' ``NeuralLM`` and ``BilingualNPLM`` values depend on what the heap held:
right in one moses.ini, silently wrong in another (a KenLM loaded first makes a one-hidden-layer model
score every n-gram by its predicted word alone). glibc fills each new allocation with the complement of
``MALLOC_PERTURB_``'s low byte, so two short decodes, one where allocations start as zeros and one where
they do not, give the same features only where NPLM evaluates its file.
"""
from __future__ import annotations

import itertools
import os
import subprocess
from typing import Sequence

from mosesrnn.formats.moses_ini import declared_features, parse_ini, read_ini_text
from mosesrnn.formats.nbest import NbestEntry, read_nbest
from mosesrnn.formats.text_file import text_lines
from mosesrnn.io.compressed import atomic_text_output

from .mert_moses import MertSetupError, MosesTools, decode_command
from .tools import describe_exit, format_command

__all__ = ["NPLM_FEATURES", "HEAPS", "nplm_feature_names", "heap_disagreements", "check_nplm_reads_its_files"]

#: Moses' feature types that evaluate an NPLM file.
NPLM_FEATURES = ("NeuralLM", "BilingualNPLM")
#: MALLOC_PERTURB_ values under which glibc's new allocations hold 0x00 and 0x5a bytes.
HEAPS = ("255", "165")
#: Dev sentences decoded (1-best) under each heap.
CHECKED_SENTENCES = 2


def nplm_feature_names(ini: str) -> list[str]:
    """The names Moses gives the NPLM features of ``ini``."""
    return [feature.name for feature in declared_features(parse_ini(read_ini_text(ini)))
            if feature.type in NPLM_FEATURES]


def heap_disagreements(first: Sequence[NbestEntry], second: Sequence[NbestEntry], names: Sequence[str]) -> list[str]:
    """How two decodes of the same sentences differ in their best hypotheses' ``names`` features (or in the
    hypotheses themselves); empty when they agree to Moses' printed precision."""
    problems = []
    best = [{entry.sentence_id: entry for entry in reversed(entries)} for entries in (first, second)]
    for sentence in sorted(best[0].keys() | best[1].keys()):
        a, b = best[0].get(sentence), best[1].get(sentence)
        if a is None or b is None or a.hypothesis != b.hypothesis:
            problems.append(f"sentence {sentence}: {a and a.hypothesis!r} against {b and b.hypothesis!r}")
            continue
        values = [dict(entry.features) for entry in (a, b)]
        for name in names:
            x, y = values[0].get(name, ()), values[1].get(name, ())
            if len(x) != len(y) or any(abs(u - v) > 1e-4 * (1 + abs(u)) for u, v in zip(x, y)):
                problems.append(f"sentence {sentence}, {name}= {' '.join(map(str, x))} against {' '.join(map(str, y))}")
    return problems


def check_nplm_reads_its_files(tools: MosesTools, ini: str, source: str, folder: str) -> None:
    """Raise :class:`MertSetupError` when the NPLM features of ``ini`` score the first sentences of ``source``
    differently under two heaps (:data:`HEAPS`): the decoder's NPLM lacks the fix. The decodes' input and 1-best
    lists are left in ``folder`` (made if needed). Nothing to do for an ini without NPLM features."""
    names = nplm_feature_names(ini)
    if not names:
        return
    os.makedirs(folder, exist_ok=True)
    sentences = os.path.join(folder, "input")
    with text_lines(source) as lines, atomic_text_output(sentences) as out:
        out.writelines(text + "\n" for _, text in itertools.islice(lines, CHECKED_SENTENCES))
    decodes = []
    for heap in HEAPS:
        listing = os.path.join(folder, f"heap{heap}.nbest")
        command = decode_command(tools, ini, 1, sentences, listing, 1)
        done = subprocess.run(command, capture_output=True, text=True, check=False,
                              env={**os.environ, "MALLOC_PERTURB_": heap})
        if done.returncode != 0:
            tail = "\n".join(done.stderr.splitlines()[-15:])
            raise MertSetupError(f"moses cannot decode with {ini} (MALLOC_PERTURB_={heap} "
                                 f"{format_command(command)}: {describe_exit(done.returncode)}):\n{tail}")
        with read_nbest(listing) as entries:
            decodes.append(list(entries))
    problems = heap_disagreements(*decodes, names)
    if problems:
        raise MertSetupError(
            f"{ini}: Moses' {', '.join(names)} values change with what the heap held, not with the model file "
            f"(the first {CHECKED_SENTENCES} sentences of {source}, decoded with MALLOC_PERTURB_={HEAPS[0]} and "
            f"{HEAPS[1]}: {'; '.join(problems[:3])}). This Moses' NPLM decides whether to skip a hidden layer from "
            f"uninitialised memory, so tuning would tune wrong scores. Fix it and run again: "
            f"moses_integration/fix-nplm.sh PREFIX (patches NPLM, rebuilds Moses; PREFIX as given to build-moses.sh)")
