"""Training the joint model: the CSLM's task and family (NCE, self-normalisation, validation) on the
examples of a word-aligned corpus (:mod:`mosesrnn.bilm.data`), through the one training driver."""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass

from ..cslm.config import MAX_ORDER
from ..cslm.model import CSLM
from ..cslm.task import CSLMFamily, CSLMTask, CSLMTrainConfig, CSLMTrainResult, cslm_result
from ..encdec.direction import SOURCE_TO_TARGET
from ..errors import MosesRNNError
from ..models import JOINT
from ..train.driver import drive
from ..train.loop import LAST
from ..train.validation import validation_record
from .config import JOINT_PRESETS, JOINT_RECIPE, joint_network_config
from .data import BOS, NULL, JointData, load_joint_data
from .model_file import TrainedJoint, load_joint, save_joint
from .orientation import FORWARD, Orientation

__all__ = ["JointTrainConfig", "JointTask", "JointFamily", "FAMILY", "train_joint"]

log = logging.getLogger("mosesrnn")


@dataclass
class JointTrainConfig(CSLMTrainConfig):
    """A joint model's run: the CSLM's options (``corpus`` is the target side) and the source side, the
    alignment, the windows and the source shortlist; see `mosesrnn bilm train --help`."""

    source: str = ""
    alignment: str = ""
    preset: str = "moses"
    source_window: int | None = None  # default: the preset's
    source_vocab_size: int | None = None
    direction: str = SOURCE_TO_TARGET  # target-to-source: the source side predicted from a window of the target
    right_to_left: bool = False  # the predicted side read backwards

    def __post_init__(self):
        Orientation(self.direction, self.right_to_left)  # raises MosesRNNError for an unknown direction
        if self.preset not in JOINT_PRESETS:
            raise MosesRNNError(f"unknown preset {self.preset!r}; choose one of: {', '.join(JOINT_PRESETS)}")
        if not self.source or not self.alignment:
            raise MosesRNNError("a joint model trains on a source file, a target file and their word alignment")
        order, window = self.shape("order"), self.shape("source_window")
        if 2 * window + 1 + order > MAX_ORDER:
            raise MosesRNNError(f"order {order} and source window {window} make n-grams of {2 * window + 1 + order} "
                                f"words (2 x {window} + 1 source words and {order} target words), more than the "
                                f"{MAX_ORDER} Moses' n-gram features hold: lower --order or --source-window")
        super().__post_init__()

    def to_dict(self) -> dict:
        """The plain form, without the orientation when it is the forward model's: a run started before the other
        directions continues (a changed orientation is refused as any changed option)."""
        values = super().to_dict()
        if self.orientation == FORWARD:
            del values["direction"], values["right_to_left"]
        return values

    @property
    def orientation(self) -> Orientation:
        """The side the model predicts and the order it reads it in."""
        return Orientation(self.direction, self.right_to_left)

    def setting(self, name: str):
        """A training option: the one given, else the joint models' recipe (:data:`JOINT_RECIPE`)."""
        given = getattr(self, name)
        return given if given is not None else JOINT_RECIPE[name]

    def shape(self, name: str):
        """A shape option: the one given, else the preset's."""
        given = {"target_shortlist": self.vocab_size, "source_shortlist": self.source_vocab_size}.get(
            name, getattr(self, name, None))
        return given if given is not None else JOINT_PRESETS[self.preset][name]


class JointTask(CSLMTask):
    """The CSLM's task on a joint model's examples: its network reads target and source ids."""

    unknown_id = 0  # the target <unk>, first of the target words as BilingualNPLM wants it

    def new_model(self):
        """A fresh network of the preset's shape over both vocabularies."""
        config, vocabulary = self.config, self.data.vocabulary
        return CSLM(joint_network_config(config.shape("order"), config.shape("source_window"), len(vocabulary.target),
                                         vocabulary.input_size, config.shape("embed_dim"), config.shape("hidden_dims"),
                                         config.self_norm))

    def baseline(self) -> float:
        """The validation perplexity of the training targets' unigram model."""
        vocabulary = self.data.vocabulary  # <null> and <s> are never predicted (the CSLM's <pad> and <s>)
        return self._unigram_perplexity(len(vocabulary.target), never=tuple(vocabulary.target_ids([NULL, BOS])))

    def validation_text(self) -> dict:
        """The share of the sentence pairs held out: a joint model reads no ``--valid`` file."""
        return validation_record(share=self.config.valid_share)

    def info(self) -> dict:
        """The CSLM's facts, the windows and the orientation."""
        return {**super().info(), "order": self.config.shape("order"),
                "source_window": self.config.shape("source_window"), **self.config.orientation.to_dict()}

    def save_model(self, path: str, info: dict) -> None:
        """A self-contained joint model file."""
        save_joint(path, TrainedJoint(self.model, self.config.shape("order"), self.config.shape("source_window"),
                                          self.data.vocabulary, info, orientation=self.config.orientation))


class JointFamily(CSLMFamily):
    """The joint model for the training driver: the CSLM's, with its own data, task and files."""

    name = "joint model"
    kind = JOINT

    def saved_model(self, config: JointTrainConfig, resumed: bool) -> TrainedJoint | None:
        """The run's ``last.pt`` when it continues, else None."""
        return load_joint(os.path.join(config.output_dir, LAST)) if resumed else None

    def load_data(self, config: JointTrainConfig, resumed: bool, writes: bool = True) -> JointData:
        """The aligned corpus' examples with the vocabularies of the run (a resumed run keeps its own)."""
        saved = self.saved_model(config, resumed)
        if saved and (saved.order, saved.source_window) != (config.shape("order"), config.shape("source_window")):
            raise MosesRNNError(f"{config.output_dir}: the saved run has order {saved.order} and source window "
                                f"{saved.source_window}: continue with those, or start over with --restart")
        if saved and saved.orientation != config.orientation:  # the forward one is not in to_dict(): checked here
            raise MosesRNNError(f"{config.output_dir}: the saved run is {saved.orientation.describe()}: continue with "
                                f"that, or start over with --restart")
        data = load_joint_data(config.source, config.corpus, config.alignment, window=config.shape("source_window"),
                               order=config.shape("order"), target_size=config.shape("target_shortlist"),
                               source_size=config.shape("source_shortlist"), valid_share=config.valid_share,
                               batch_size=config.setting("batch_size"), encoding=config.encoding,
                               vocabulary=saved.vocabulary if saved else None, orientation=config.orientation)
        data.continued = saved.network if saved else None
        log.info("%s: %d training and %d validation n-grams; the %d-word target list covers %.1f%% of the words",
                 data.description, len(data.train), len(data.valid), len(data.vocabulary.target), 100 * data.coverage)
        return data

    def build_task(self, config: JointTrainConfig, data: JointData, resumed: bool, device: str) -> JointTask:
        """The joint model's task, continuing the saved network when ``resumed``."""
        return JointTask(config, data, data.continued, device)

    def describe(self, config: JointTrainConfig, task: JointTask, data: JointData) -> str:
        """The model line of the log."""
        shape = task.model.config
        return (f"joint model ({config.orientation.describe()}): {config.preset} preset, "
                f"{config.shape('order') - 1} words of history and {2 * config.shape('source_window') + 1} words "
                f"of the other side, {len(data.vocabulary.target)} target and "
                f"{len(data.vocabulary.source)} source words, {shape.embed_dim}-dim embeddings, hidden "
                f"{'+'.join(map(str, shape.hidden_dims))}, {task.model.num_parameters()} parameters, device "
                f"{task.device}; " + ", ".join(f"{k} {v}" for k, v in self.recipe(config).items())
                + f"; loss: {task.loss_definition}")


#: The joint model family of the training driver.
FAMILY = JointFamily()


def train_joint(config: JointTrainConfig, should_stop=None) -> CSLMTrainResult:
    """Train (or resume) a joint model into ``config.output_dir``."""
    return cslm_result(drive(FAMILY, config, should_stop))
