"""A ``BilingualNPLM`` feature in a moses.ini: the joint model inside the decoder (Moses built ``--with-nplm``).

``mosesrnn bilm export`` writes the model in NPLM's text format with its two vocabulary files and a
``.json`` of its windows; Moses reads it through ``BilingualNPLM name=BilingualNPLM0 order=N
source_window=M path=FILE source_vocab=FILE.source target_vocab=FILE.target``
(``moses/LM/bilingual-lm/BiLM_NPLM.cpp``). ``premultiply`` (the embeddings multiplied into the
first hidden layer once, at load) and a 1,000,000-entry n-gram cache are Moses' defaults, so
the line leaves them out. Its one dense score is the sum over the target words (no ``</s>``) of
the model's natural-log scores. The line goes at the end of ``[feature]`` and
``BilingualNPLM0= W`` at the end of ``[weight]``; every other byte of the file stays as it was.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from mosesrnn.errors import MosesRNNError
from mosesrnn.formats.nplm import read_nplm_config, read_nplm_vocabularies
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.declared import declare_input
from mosesrnn.io.json_file import read_json

from .ini_paths import check_no_space
from .neural_lm import append_feature

__all__ = ["BILINGUAL_LM_NAME", "BilingualLMLine", "bilingual_lm_feature", "read_joint_export", "check_vocabularies",
           "with_bilingual_lm"]

BILINGUAL_LM_NAME = "BilingualNPLM0"  # the name Moses gives the first unnamed BilingualNPLM


@dataclass(frozen=True)
class BilingualLMLine:
    """What was added: the feature's name, its windows, the model path as written, its weight."""

    name: str
    order: int
    source_window: int
    path: str
    weight: float

    def message(self, shown: str) -> str:
        """What ``moses-ini`` says it added to ``shown`` (the output's name)."""
        return (f"{shown}: added BilingualNPLM {self.name} (order {self.order}, source window "
                f"{self.source_window}) reading {self.path}, weight {self.weight!r}; Moses must be built "
                f"--with-nplm, and the phrase table must hold word alignments")


def bilingual_lm_feature(order: int, source_window: int, nplm_path: str, source_vocab: str, target_vocab: str,
                         name: str = BILINGUAL_LM_NAME) -> str:
    """The ``[feature]`` line of a BilingualNPLM (the one line every command writes or shows)."""
    return (f"BilingualNPLM name={name} order={order} source_window={source_window} path={nplm_path} "
            f"source_vocab={source_vocab} target_vocab={target_vocab}")


def read_joint_export(nplm_path: str) -> tuple[int, int, str, str]:
    """``(order, source_window, source_vocab, target_vocab)`` of an exported joint model: its ``.json`` (the
    vocabulary paths beside the NPLM file), checked against the NPLM file's n-gram size.

    Raises MosesRNNError for an NPLM file without the files `mosesrnn bilm export` writes beside it."""
    companion = nplm_path + ".json"
    if not os.path.exists(companion):
        raise MosesRNNError(f"{nplm_path}: no {companion} beside it: BilingualNPLM needs the windows and vocabularies "
                            f"that `mosesrnn bilm export` writes with the model (a CSLM goes in with --cslm)")
    facts = read_json(companion, "the record `mosesrnn bilm export` writes")
    if not (isinstance(facts, dict) and all(isinstance(facts.get(key), int) for key in ("order", "source_window"))
            and all(isinstance(facts.get(key), str) for key in ("source_vocab", "target_vocab"))):
        raise MosesRNNError(f"{companion}: not the record `mosesrnn bilm export` writes (no order, source_window, "
                            f"source_vocab and target_vocab)")
    order, window = facts["order"], facts["source_window"]
    ngram = read_nplm_config(nplm_path)["ngram_size"]
    if ngram != 2 * window + 1 + order:
        raise MosesRNNError(f"{nplm_path}: n-grams of {ngram} words, but {companion} gives order {order} and source "
                            f"window {window} ({2 * window + 1 + order} words): the files are of different exports")
    folder = os.path.dirname(nplm_path)
    return order, window, os.path.join(folder, facts["source_vocab"]), os.path.join(folder, facts["target_vocab"])


def with_bilingual_lm(text: str, ini: str, nplm_path: str, weight: float, absolute: bool
                      ) -> tuple[str, BilingualLMLine]:
    """The moses.ini ``text`` (read from ``ini``) with a BilingualNPLM feature reading the exported joint model
    ``nplm_path`` and its vocabularies (``absolute``: the paths made absolute), which must hold its words
    (:func:`check_vocabularies`)."""
    order, window, source_vocab, target_vocab = read_joint_export(nplm_path)
    check_vocabularies(nplm_path, source_vocab, target_vocab)
    paths = [os.path.abspath(p) if absolute else p for p in (nplm_path, source_vocab, target_vocab)]
    for written in paths:
        check_no_space(written)
    text = append_feature(text, bilingual_lm_feature(order, window, *paths), BILINGUAL_LM_NAME, weight, ini)
    return text, BilingualLMLine(BILINGUAL_LM_NAME, order, window, paths[0], weight)


def check_vocabularies(nplm_path: str, source_vocab: str, target_vocab: str) -> None:
    """Raise MosesRNNError naming the file unless ``target_vocab`` holds the NPLM file's output words and
    ``source_vocab`` its input words after those, line for line.

    BilingualNPLM reads the two files through an unchecked stream and numbers the words by their lines, so a
    missing file, swapped files or another export's would have the decoder score with wrong ids, silently."""
    inputs, outputs = read_nplm_vocabularies(nplm_path)
    expected = {"target": (target_vocab, outputs), "source": (source_vocab, inputs[len(outputs):])}
    for side, (path, words) in expected.items():
        if not os.path.isfile(path):
            raise MosesRNNError(f"{path}: no such file: BilingualNPLM reads the {side} words of {nplm_path} from it "
                                f"(`mosesrnn bilm export` writes it beside the model)")
        declare_input(path)  # the export's .json may name a file beside the model other than its companions
        found = read_lines(path)
        if found != words:
            other = "source" if side == "target" else "target"
            hint = (f"it holds the {other} words: are the two files swapped?" if found == expected[other][1]
                    else "from another export?")
            raise MosesRNNError(f"{path}: not the {len(words)} {side} words of {nplm_path} ({hint}); BilingualNPLM "
                                f"would score with wrong word ids: export the model again")
