"""NPLM's text model format (Vaswani et al. 2013; rsennrich/nplm ``src/model.cpp``), which Moses'
``NeuralLM`` feature reads.

A file is sections, each a header line, its lines, and a blank line::

    \\config            version 1, ngram_size, input/output_vocab_size, input_embedding_dimension,
                        num_hidden, output_embedding_dimension, activation_function
    \\vocab             one word a line; the line number is the word's id (input and output alike), or
    \\input_vocab, \\output_vocab  the two vocabularies, where they differ (a joint model's input is
                        its target and source words, its output the target words)
    \\input_embeddings  V rows of E values (tab-separated)
    \\hidden_weights 1  rows of the first hidden layer, (n-1)E values each; \\hidden_biases 1 one a line
    \\hidden_weights 2  the second hidden layer (1 x 1 zeros when there is none); \\hidden_biases 2
    \\output_weights    V rows of H values; \\output_biases one a line
    \\end

NPLM's network has at most two hidden layers: ``num_hidden`` units, then
``output_embedding_dimension`` units, all rectified. With one hidden layer, ``num_hidden`` is 0 and
the layer's size is the ``output_embedding_dimension`` (what Moses' own NPLM training scripts write).

**NPLM's hidden-layer bug** (``moses_integration/fix-nplm.sh``, which patches and rebuilds NPLM and
Moses): ``neuralNetwork`` decides whether to skip the second hidden layer before the file is read, from
a default model's uninitialised ``num_hidden``, so an unfixed NPLM evaluates either shape wrongly
depending on what the heap held: two layers in a fresh process (``testNeuralLM``), one layer in Moses
with a KenLM loaded first. ``tests/test_cslm.py`` shows both with the real binaries, made deterministic
by glibc's ``MALLOC_PERTURB_``; ``tune`` checks the decoder the same way before it tunes
(``moses_integration/nplm_check.py``).

The format holds plain arrays (:class:`NPLMNetwork`); each model family turns its model into one
(``mosesrnn/cslm/export.py``, ``mosesrnn/bilm/export.py``), so this module knows no model code.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import IO, Sequence

import numpy as np

from ..errors import MosesRNNError
from ..io.compressed import atomic_text_output, read_head
from .text_file import text_lines

__all__ = ["NPLM_NULL", "NPLMNetwork", "write_nplm", "read_nplm", "read_nplm_config",
           "read_nplm_vocabularies", "write_nplm_file"]

#: NPLM's name for the padding of short n-grams (our ``<pad>``).
NPLM_NULL = "<null>"


@dataclass
class NPLMNetwork:
    """An NPLM network as plain arrays: ``order`` inputs (the last one the predicted word's), rectified
    hidden layers ``(weights (out, in), biases (out,))``, first to last, and the output layer."""

    order: int
    input_words: Sequence[str]
    output_words: Sequence[str]
    input_embeddings: np.ndarray  # (input vocabulary, E)
    hidden: Sequence[tuple[np.ndarray, np.ndarray]]
    output_weights: np.ndarray  # (output vocabulary, H)
    output_biases: np.ndarray  # (output vocabulary,)

    def __post_init__(self):
        if not 1 <= len(self.hidden) <= 2:
            raise MosesRNNError(f"NPLM holds one or two hidden layers, not {len(self.hidden)}")
        if len(self.input_words) != len(self.input_embeddings) or len(self.output_words) != len(self.output_weights):
            raise MosesRNNError("an NPLM network needs one input embedding a word and one output row a word")


def _matrix(out: IO[str], rows: np.ndarray) -> None:
    for row in np.atleast_2d(rows):
        out.write("\t".join(format(float(value), ".9g") for value in row))
        out.write("\n")
    out.write("\n")


def _words(out: IO[str], section: str, words: Sequence[str]) -> None:
    out.write(f"\\{section}\n" + "".join(word + "\n" for word in words) + "\n")


def write_nplm(out: IO[str], network: NPLMNetwork) -> None:
    """Write ``network`` in NPLM's text format to a text stream.

    One hidden layer is written as NPLM's ``num_hidden 0`` form.
    """
    layers = list(network.hidden)
    num_hidden = 0 if len(layers) == 1 else len(layers[0][1])
    second = layers[1] if len(layers) == 2 else (np.zeros((1, 1)), np.zeros(1))
    out.write("\\config\nversion 1\n")
    out.write(f"ngram_size {network.order}\ninput_vocab_size {len(network.input_words)}\noutput_vocab_size "
              f"{len(network.output_words)}\ninput_embedding_dimension {network.input_embeddings.shape[1]}\n"
              f"num_hidden {num_hidden}\noutput_embedding_dimension {len(layers[-1][1])}\n"
              f"activation_function rectifier\n\n")
    if list(network.input_words) == list(network.output_words):
        _words(out, "vocab", network.input_words)
    else:
        _words(out, "input_vocab", network.input_words)
        _words(out, "output_vocab", network.output_words)
    sections = [("input_embeddings", network.input_embeddings),
                ("hidden_weights 1", layers[0][0]), ("hidden_biases 1", np.asarray(layers[0][1])[:, None]),
                ("hidden_weights 2", second[0]), ("hidden_biases 2", np.asarray(second[1])[:, None]),
                ("output_weights", network.output_weights),
                ("output_biases", np.asarray(network.output_biases)[:, None])]
    for name, values in sections:
        out.write(f"\\{name}\n")
        _matrix(out, values)
    out.write("\\end\n")


def read_nplm(lines: IO[str]) -> NPLMNetwork:
    """The network of an NPLM text file (what :func:`write_nplm` writes, NPLM's own files alike)."""
    config: dict = {}
    vocab: dict[str, list[str]] = {}
    matrices: dict[str, np.ndarray] = {}
    section = None
    rows: list = []
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("\\"):
            section, rows = line[1:], []
            if section == "end":
                break
            continue
        if not line:
            if section in ("vocab", "input_vocab", "output_vocab"):
                vocab[section] = rows
            elif section not in (None, "config"):
                matrices[section] = np.array(rows, dtype=np.float64)
            section = None
            continue
        if section == "config":
            key, value = line.split()
            config[key] = value if key == "activation_function" else int(value)
        elif section in ("vocab", "input_vocab", "output_vocab"):
            rows.append(line)
        elif section is not None:
            rows.append([float(value) for value in line.split("\t")])
    hidden = [(matrices["hidden_weights 1"], matrices["hidden_biases 1"][:, 0])]
    if config.get("num_hidden", 0):
        hidden.append((matrices["hidden_weights 2"], matrices["hidden_biases 2"][:, 0]))
    return NPLMNetwork(config["ngram_size"], vocab.get("input_vocab", vocab.get("vocab", [])),
                       vocab.get("output_vocab", vocab.get("vocab", [])), matrices["input_embeddings"], hidden,
                       matrices["output_weights"], matrices["output_biases"][:, 0])


def read_nplm_config(path: str) -> dict:
    """The ``\\config`` section of an NPLM file (``ngram_size``, the vocabulary sizes...), read from its head.

    Raises MosesRNNError for a file that is not an NPLM text file (a mosesrnn model file named as such, with the
    command that exports one)."""
    head = read_head(path, 4096)
    if head.startswith(b"PK\x03\x04"):
        raise MosesRNNError(f"{path} is a mosesrnn model file (PyTorch); Moses reads NPLM's text format: write it with "
                            f"`mosesrnn lm export -m {path} -o MODEL.nplm` (a joint model: `mosesrnn bilm export`)")
    lines = head.decode("utf-8", errors="replace").splitlines()
    if not lines or lines[0] != "\\config":
        raise MosesRNNError(f"{path} is not an NPLM model file (it does not start with \\config): write one with "
                            f"`mosesrnn lm export` or `mosesrnn bilm export`")
    config: dict = {}
    for line in lines[1:]:
        if not line:
            break
        key, _, value = line.partition(" ")
        config[key] = int(value) if value.isdigit() else value
    if not isinstance(config.get("ngram_size"), int):
        raise MosesRNNError(f"{path}: an NPLM file without ngram_size in its \\config section")
    return config


def read_nplm_vocabularies(path: str) -> tuple[list[str], list[str]]:
    """The input and output words of an NPLM file (its ``\\vocab``, or its ``\\input_vocab`` and ``\\output_vocab``),
    read up to its ``\\input_embeddings`` only. A section starts after a blank line, so a word may start with ``\\``."""
    sections: dict[str, list[str]] = {}
    words, after_blank = None, True
    with text_lines(path) as lines:
        for _, line in lines:
            if after_blank and line.startswith("\\"):
                if line == "\\input_embeddings":
                    break
                words = sections.setdefault(line[1:], [])
            elif line and words is not None:
                words.append(line)
            after_blank = not line
    inputs = sections.get("input_vocab", sections.get("vocab", []))
    return inputs, sections.get("output_vocab", sections.get("vocab", []))


def write_nplm_file(path: str, network: NPLMNetwork) -> None:
    """Write ``network`` to ``path`` for Moses (atomically): refused for a ``.gz`` name (NPLM reads plain
    text)."""
    if path.endswith(".gz"):
        raise MosesRNNError(f"{path}: NPLM reads plain text files: give the model a name without .gz")
    with atomic_text_output(path) as out:
        write_nplm(out, network)
