"""The joint model's self-contained model file: weights, network config, windows, vocabularies, facts.

Read and written through the one model-file floor (:mod:`mosesrnn.io.model_store`) with
``"kind": "bilm"``::

    {"format_version": 1, "kind": "bilm", "mosesrnn_version": str, "config": CSLMConfig.to_dict(),
     "windows": {"order": n, "source_window": m}, "state_dict": {name: tensor},
     "vocabulary": JointVocabulary.to_dict(), "info": {training facts},
     "orientation": {"direction": str, "right_to_left": bool}}

A file without ``orientation`` (written before the other directions) holds the forward model.
"""
from __future__ import annotations

from dataclasses import dataclass

from ..cslm.config import CSLMConfig
from ..cslm.model import CSLM
from ..io.model_store import file_digest, load_weights, read_model_file, save_file
from ..models import JOINT
from ..version import __version__
from .data import JointVocabulary
from .orientation import FORWARD, JOINT_FEATURES, Orientation

__all__ = ["FORMAT_VERSION", "TrainedJoint", "save_joint", "load_joint", "orientation_refusal"]

FORMAT_VERSION = 1
_REQUIRED = ("config", "windows", "state_dict", "vocabulary")


@dataclass
class TrainedJoint:
    """A joint model ready to score: the network, its windows, its vocabularies, facts and the file's digest."""

    network: CSLM
    order: int  # target words read, the predicted one included (BilingualNPLM's order)
    source_window: int  # source words on each side of the affiliated one (BilingualNPLM's source_window)
    vocabulary: JointVocabulary
    info: dict
    digest: str = ""
    orientation: Orientation = FORWARD  # which side it predicts, in which order


def save_joint(path: str, model: TrainedJoint) -> None:
    """Write one self-contained joint model file (atomically)."""
    save_file(path, {"format_version": FORMAT_VERSION, "kind": JOINT, "mosesrnn_version": __version__,
                     "config": model.network.config.to_dict(),
                     "windows": {"order": model.order, "source_window": model.source_window},
                     "state_dict": model.network.state_dict(), "vocabulary": model.vocabulary.to_dict(),
                     "info": dict(model.info), "orientation": model.orientation.to_dict()})


def load_joint(path: str, map_location="cpu") -> TrainedJoint:
    """Load a joint model file; raises ModelFileError if it is not one (another kind included)."""
    checkpoint = read_model_file(path, JOINT, FORMAT_VERSION, required=_REQUIRED, map_location=map_location)
    network = load_weights(path, checkpoint, lambda: CSLM(CSLMConfig.from_dict(checkpoint["config"])))
    windows = checkpoint["windows"]
    return TrainedJoint(network, windows["order"], windows["source_window"],
                      JointVocabulary.from_dict(checkpoint["vocabulary"]), checkpoint.get("info", {}),
                      file_digest(path), Orientation.from_dict(checkpoint.get("orientation")))


def orientation_refusal(path: str, option: str) -> str | None:
    """One line refusing the joint model file ``path`` for the option ``option`` (``bilm``, ``bilm_t2s``...) when it
    is of another orientation than the option's feature, else None (the registry's check:
    :data:`~mosesrnn.models.MODELS`)."""
    wanted = next(o for o in JOINT_FEATURES.values() if o.option == option)
    return wanted.refusal(load_joint(path).orientation, path)
