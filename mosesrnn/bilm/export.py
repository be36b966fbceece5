"""The joint model for Moses' ``BilingualNPLM``: its network as NPLM's arrays, its two vocabulary files,
and every check of the export in one place.

``mosesrnn bilm export -m bilm/best.pt -o bilm.nplm`` writes ``bilm.nplm`` (NPLM's text format: an
input vocabulary of the target then the source words, the target words as output),
``bilm.nplm.target`` and ``bilm.nplm.source`` (one word a line, ``<unk>`` first: the files
``target_vocab=`` and ``source_vocab=`` name), and ``bilm.nplm.json``, which records the windows
``moses-ini --bilm`` writes into the feature line. Refused: a model that is not self-normalised
(Moses reads its raw scores) and one of another direction or reading order (BilingualNPLM runs only
the forward model).
"""
from __future__ import annotations

import json
import os
from dataclasses import dataclass

from ..cslm.export import check_self_normalised
from ..errors import MosesRNNError
from ..formats.nplm import NPLMNetwork, write_nplm_file
from ..io.compressed import atomic_text_output
from .config import EXPORT_FILES
from .model_file import TrainedJoint, load_joint
from .orientation import FORWARD

__all__ = ["JointExport", "joint_network", "export_joint"]


@dataclass(frozen=True)
class JointExport:
    """An exported joint model: the NPLM file, its windows and its vocabulary files (paths as given)."""

    path: str
    order: int
    source_window: int
    target_vocab: str
    source_vocab: str


def joint_network(model: TrainedJoint) -> NPLMNetwork:
    """The joint model as NPLM's arrays: inputs are the target then the source words, outputs the target words."""
    def array(tensor):
        return tensor.detach().double().cpu().numpy()

    network, vocabulary = model.network, model.vocabulary
    return NPLMNetwork(network.config.order, [*vocabulary.target, *vocabulary.source], list(vocabulary.target),
                       array(network.embed.weight),
                       [(array(layer.weight), array(layer.bias)) for layer in network.hidden],
                       array(network.output.weight), array(network.output.bias))


def export_joint(model_path: str, output: str) -> JointExport:
    """Write the joint model file ``model_path`` for Moses: ``output`` (NPLM) and its companions
    (:data:`EXPORT_FILES`). Raises MosesRNNError for a ``.gz`` name, a model that is not self-normalised, or one
    that is not source-to-target, left-to-right."""
    model = load_joint(model_path)
    if model.orientation != FORWARD:
        raise MosesRNNError(f"{model_path} is a {model.orientation.describe()} joint model: Moses' BilingualNPLM runs "
                            f"only the source-to-target, left-to-right one in the decoder; use this one as an n-best "
                            f"feature (mosesrnn nbest --{model.orientation.feature} {model_path})")
    check_self_normalised(model.info, model_path)
    write_nplm_file(output, joint_network(model))
    target_suffix, source_suffix, _ = EXPORT_FILES
    export = JointExport(output, model.order, model.source_window, output + target_suffix, output + source_suffix)
    for path, words in ((export.target_vocab, model.vocabulary.target), (export.source_vocab, model.vocabulary.source)):
        with atomic_text_output(path) as out:
            out.write("".join(word + "\n" for word in words))
    with atomic_text_output(output + ".json") as out:
        json.dump({"order": export.order, "source_window": export.source_window,
                   "target_vocab": os.path.basename(export.target_vocab),
                   "source_vocab": os.path.basename(export.source_vocab)}, out, indent=1)
        out.write("\n")
    return export
