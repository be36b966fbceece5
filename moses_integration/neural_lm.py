"""A ``NeuralLM`` feature in a moses.ini: the CSLM inside the decoder (Moses built ``--with-nplm``).

``mosesrnn lm export`` writes the model in NPLM's text format; Moses reads it through
``NeuralLM name=NeuralLM0 factor=0 order=N path=FILE`` (``moses/LM/NeuralLMWrapper.cpp``), whose
one dense score is the sum of the model's natural-log scores of the target words and ``</s>``
(Moses pads the sentence start with ``<s>``). The line goes at the end of ``[feature]`` and
``NeuralLM0= W`` at the end of ``[weight]``; every other byte of the file stays as it was.
"""
from __future__ import annotations

import os
from dataclasses import dataclass

from mosesrnn.formats.moses_ini import MosesIniError, declared_features, parse_ini, section_values, split_comment
from mosesrnn.formats.nplm import read_nplm_config

from .ini_paths import check_no_space

__all__ = ["NEURAL_LM_NAME", "NeuralLMLine", "nplm_order", "neural_lm_feature", "append_feature", "add_neural_lm",
           "with_neural_lm"]

NEURAL_LM_NAME = "NeuralLM0"  # the name Moses gives the first unnamed NeuralLM


@dataclass(frozen=True)
class NeuralLMLine:
    """What was added: the feature's name, its order, the model path as written, its weight."""

    name: str
    order: int
    path: str
    weight: float

    def message(self, shown: str) -> str:
        """What ``moses-ini`` says it added to ``shown`` (the output's name)."""
        return (f"{shown}: added NeuralLM {self.name} (order {self.order}) reading {self.path}, weight "
                f"{self.weight!r}; Moses must be built --with-nplm")


def nplm_order(path: str) -> int:
    """The n-gram order of an NPLM model file (its ``\\config`` section's ``ngram_size``).

    Raises MosesRNNError for a file that is not an NPLM text file."""
    return read_nplm_config(path)["ngram_size"]


def neural_lm_feature(order: int, nplm_path: str, name: str = NEURAL_LM_NAME) -> str:
    """The ``[feature]`` line of a NeuralLM reading ``nplm_path`` (the one line every command writes or shows)."""
    return f"NeuralLM name={name} factor=0 order={order} path={nplm_path}"


def append_feature(text: str, feature: str, name: str, weight: float, path: str = "moses.ini") -> str:
    """The moses.ini ``text`` with the ``[feature]`` line ``feature`` (named ``name``) after the last feature and
    ``name= weight`` after the last weight; every other byte kept. Pure.

    Raises MosesIniError for a legacy-format file, one without ``[feature]`` or ``[weight]``, or one
    that already has a feature of that name (given, or the one Moses gives an unnamed feature)."""
    kind = feature.split()[0]
    ini = parse_ini(text)
    features, weights = section_values(ini, "feature"), section_values(ini, "weight")
    if not features or not weights:
        raise MosesIniError(path, None, f"no [feature] or [weight] section: a {kind} feature needs the current "
                                        "moses.ini format")
    for declared in declared_features(ini):
        if declared.name == name:
            raise MosesIniError(path, declared.line.number, f"there is already a feature {name}")
    lines = [line.raw for line in ini]
    for last, added in ((features[-1], feature), (weights[-1], f"{name}= {weight!r}")):
        ending = split_comment(last.raw)[2]
        lines[last.number - 1] = last.raw + ("" if ending else "\n") + added + (ending or "\n")
    return "".join(lines)


def add_neural_lm(text: str, nplm_path: str, order: int, weight: float, path: str = "moses.ini",
                  name: str = NEURAL_LM_NAME) -> tuple[str, NeuralLMLine]:
    """The moses.ini ``text`` with a NeuralLM feature reading ``nplm_path`` and its weight (:func:`append_feature`)."""
    text = append_feature(text, neural_lm_feature(order, nplm_path, name), name, weight, path)
    return text, NeuralLMLine(name, order, nplm_path, weight)


def with_neural_lm(text: str, ini: str, nplm_path: str, weight: float, absolute: bool) -> tuple[str, NeuralLMLine]:
    """The moses.ini ``text`` (read from ``ini``) with a NeuralLM feature reading the NPLM file ``nplm_path``,
    its order read from the file (``absolute``: its path made absolute)."""
    order = nplm_order(nplm_path)
    written = os.path.abspath(nplm_path) if absolute else nplm_path
    check_no_space(written)
    return add_neural_lm(text, written, order, weight, ini)
