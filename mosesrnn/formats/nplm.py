"""NPLM's text model format (Vaswani et al. 2013; rsennrich/nplm ``src/model.cpp``), which Moses'
``NeuralLM`` feature reads.

A file is sections, each a header line, its lines, and a blank line::

    \\config            version 1, ngram_size, input/output_vocab_size, input_embedding_dimension,
                        num_hidden, output_embedding_dimension, activation_function
    \\vocab             one word a line; the line number is the word's id (input and output alike)
    \\input_embeddings  V rows of E values (tab-separated)
    \\hidden_weights 1  rows of the first hidden layer, (n-1)E values each; \\hidden_biases 1 one a line
    \\hidden_weights 2  the second hidden layer (1 x 1 zeros when there is none); \\hidden_biases 2
    \\output_weights    V rows of H values; \\output_biases one a line
    \\end

NPLM's network has at most two hidden layers: ``num_hidden`` units, then
``output_embedding_dimension`` units, all rectified. With one hidden layer, ``num_hidden`` is 0 and
the layer's size is the ``output_embedding_dimension`` (what Moses' own NPLM training scripts write).

**The trap** (seen on a real build, and tested with the real binary in ``tests/test_cslm.py``):
``neuralLM`` decides whether to skip the second hidden layer when it is constructed, before a file
is read, so ``testNeuralLM`` and Moses, which construct then ``read()``, evaluate a two-layer file
with one layer: wrongly. Only one-hidden-layer models are therefore exported (:func:`check_exportable`).
"""
from __future__ import annotations

from typing import IO, TYPE_CHECKING, Sequence

import numpy as np

from ..io.compressed import atomic_text_output
from ..text.vocab import PAD

if TYPE_CHECKING:  # the format writes a CSLM's weights; it needs no model code to do so
    from ..cslm.model import CSLM

__all__ = ["NPLM_PAD", "nplm_words", "check_exportable", "write_nplm", "read_nplm", "export_nplm"]

#: NPLM's name for the padding token of short n-grams, our ``<pad>``.
NPLM_PAD = "<null>"


def nplm_words(itos: Sequence[str]) -> list[str]:
    """The vocabulary as NPLM names it: ``<pad>`` is ``<null>``."""
    return [NPLM_PAD if word == PAD else word for word in itos]


def check_exportable(model: CSLM) -> None:
    """Raise ValueError for a shape that Moses' NeuralLM would evaluate wrongly (two hidden layers)."""
    hidden = model.config.hidden_dims
    if len(hidden) != 1:
        raise ValueError(f"the model has {len(hidden)} hidden layers ({', '.join(map(str, hidden))} units): NPLM "
                         "as Moses loads it evaluates only the first of two hidden layers (it decides before reading "
                         "the file), so it would score this model wrongly. Export a one-hidden-layer model (`mosesrnn "
                         "lm train --preset moses` or `small`); use this one on n-best lists (`mosesrnn nbest --lm`)")


def _matrix(out: IO[str], rows: np.ndarray) -> None:
    for row in np.atleast_2d(rows):
        out.write("\t".join(format(float(value), ".9g") for value in row))
        out.write("\n")
    out.write("\n")


def write_nplm(out: IO[str], model: CSLM, itos: Sequence[str]) -> None:
    """Write ``model`` (one or two hidden layers) and its vocabulary ``itos`` in NPLM's format to a text stream.

    One hidden layer is written as NPLM's ``num_hidden 0`` form. Callers that mean the file for Moses
    check :func:`check_exportable` first.
    """
    config = model.config
    if len(config.hidden_dims) > 2:
        raise ValueError(f"NPLM holds at most two hidden layers, not {len(config.hidden_dims)}")
    layers = [(layer.weight.detach().double().cpu().numpy(), layer.bias.detach().double().cpu().numpy())
              for layer in model.hidden]
    num_hidden = 0 if len(layers) == 1 else config.hidden_dims[0]
    second = layers[1] if len(layers) == 2 else (np.zeros((1, 1)), np.zeros(1))
    out.write("\\config\nversion 1\n")
    out.write(f"ngram_size {config.order}\ninput_vocab_size {config.vocab_size}\noutput_vocab_size "
              f"{config.vocab_size}\ninput_embedding_dimension {config.embed_dim}\nnum_hidden {num_hidden}\n"
              f"output_embedding_dimension {config.hidden_dims[-1]}\nactivation_function rectifier\n\n")
    out.write("\\vocab\n" + "".join(word + "\n" for word in nplm_words(itos)) + "\n")
    sections = [("input_embeddings", model.embed.weight.detach().double().cpu().numpy()),
                ("hidden_weights 1", layers[0][0]), ("hidden_biases 1", layers[0][1][:, None]),
                ("hidden_weights 2", second[0]), ("hidden_biases 2", second[1][:, None]),
                ("output_weights", model.output.weight.detach().double().cpu().numpy()),
                ("output_biases", model.output.bias.detach().double().cpu().numpy()[:, None])]
    for name, values in sections:
        out.write(f"\\{name}\n")
        _matrix(out, values)
    out.write("\\end\n")


def read_nplm(lines: IO[str]) -> tuple[dict, list[str], dict[str, np.ndarray]]:
    """The config, vocabulary and matrices of an NPLM text file (what :func:`write_nplm` writes)."""
    config: dict = {}
    vocab: list[str] = []
    matrices: dict[str, np.ndarray] = {}
    section = None
    rows: list[list[float]] = []
    for line in lines:
        line = line.rstrip("\n")
        if line.startswith("\\"):
            section, rows = line[1:], []
            if section == "end":
                break
            continue
        if not line:
            if section not in (None, "config", "vocab"):
                matrices[section] = np.array(rows, dtype=np.float64)
            section = None
            continue
        if section == "config":
            key, value = line.split()
            config[key] = value if key == "activation_function" else int(value)
        elif section == "vocab":
            vocab.append(line)
        elif section is not None:
            rows.append([float(value) for value in line.split("\t")])
    return config, vocab, matrices


def export_nplm(model: CSLM, itos: Sequence[str], path: str) -> None:
    """Write a one-hidden-layer model to ``path`` for Moses' NeuralLM (atomically; ``.gz`` not allowed:
    NPLM reads plain text). Raises ValueError for a shape NPLM misevaluates (:func:`check_exportable`)."""
    if path.endswith(".gz"):
        raise ValueError(f"{path}: NPLM reads plain text files: give the model a name without .gz")
    check_exportable(model)
    with atomic_text_output(path) as out:
        write_nplm(out, model, itos)
