"""Training the CSLM: the n-grams of a corpus through the shared training loop (:mod:`mosesrnn.train.loop`).

The loss of a minibatch is the mean negative log-likelihood per token plus alpha (log Z)^2, the
self-normalisation penalty of Devlin et al. (2014): the softmax is computed in full (so the
perplexities are exact), and the penalty pulls each context's log-normaliser to 0, so that the raw
output score is the log-probability — what Moses' NeuralLM reads. (NCE, NPLM's own method, needs
no full softmax but only approximates both; on a 15,000-word shortlist the full softmax is
affordable on a CPU.) Adam (lr 1e-3) on minibatches of random n-grams; early stopping on the
validation NLL.
"""
from __future__ import annotations

import logging
import os
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import MosesRNNError
from ..models import CSLM as CSLM_KIND
from ..runtime.devices import resolve_device
from ..text.codec import Codec
from ..text.tokenizers import MosesWords
from ..text.vocab import PAD_ID, UNK_ID
from ..train.driver import drive
from ..train.loop import BEST, LAST, RunConfig, Validation, adam
from ..train.validation import target_counts, unigram_perplexity, validation_record
from .config import LM_PLAIN_RECIPE, LM_PRESETS, LM_RECIPES, lm_config
from .data import LMData, load_lm_data
from .model import CSLM
from .model_file import load_cslm, save_cslm
from .scoring import ngram_stats

__all__ = ["CSLMTrainConfig", "CSLMTrainResult", "CSLMTask", "CSLMFamily", "FAMILY", "cslm_result", "train_cslm",
           "LM_LOSS", "LM_NCE_LOSS"]

log = logging.getLogger("mosesrnn")

LM_LOSS = "mean NLL per token (nats) + self_norm * mean (log Z)^2"
LM_NCE_LOSS = "NCE: mean over tokens of -log s(target) - sum over the k shared noise words of log (1 - s(noise))"
_FREE_ON_RESUME = {"output_dir", "max_updates", "max_time", "device", "threads", "quiet", "resume", "patience"}


@dataclass
class CSLMTrainConfig(RunConfig):
    """Everything a CSLM training run needs; see `mosesrnn lm train --help` for each option."""

    output_dir: str
    corpus: str
    valid: str | None = None
    valid_share: float = 0.01
    preset: str = "moses"
    order: int | None = None  # default: the preset's
    vocab_size: int | None = None  # default: the preset's shortlist
    embed_dim: int | None = None
    hidden_dims: tuple[int, ...] | None = None
    self_norm: float = 0.1
    # how it trains; None: the preset's recipe (LM_RECIPES), see `setting`
    batch_size: int | None = None
    learning_rate: float | None = None
    warmup: int | None = None  # updates of linear learning-rate warm-up
    lr_decay: str | None = None  # none | linear | cosine, to min_lr x the rate at max_updates or max_time
    min_lr: float = 0.0
    dropout: float | None = None  # on the embeddings and the hidden layer, in training only
    estimator: str | None = None  # softmax (full, + self-normalisation penalty) | nce (noise_samples shared)
    noise_samples: int | None = None
    output_bias: str | None = None  # uniform (-log V) | unigram (log of the training unigram distribution)
    valid_every: int = 2000
    patience: int = 5
    max_updates: int | None = None
    max_time: float | None = None
    clip_norm: float | None = None
    device: str = "auto"
    threads: int | None = None
    seed: int = 1
    encoding: str = "utf-8"
    resume: str = "auto"
    quiet: bool = False
    model_info: dict = field(default_factory=dict)

    def __post_init__(self):
        if self.preset not in LM_PRESETS:
            raise MosesRNNError(f"unknown preset {self.preset!r}; choose one of: {', '.join(LM_PRESETS)}")
        if self.setting("estimator") not in ("softmax", "nce") or self.setting("output_bias") not in ("uniform",
                                                                                                     "unigram"):
            raise MosesRNNError(f"unknown estimator {self.estimator!r} or output_bias {self.output_bias!r}")
        if not 0 <= self.setting("dropout") < 1 or self.setting("noise_samples") < 1 or self.setting("batch_size") < 1:
            raise MosesRNNError("dropout must be in [0, 1), noise_samples and batch_size positive")

    def setting(self, name: str):
        """A training option: the one given, else the preset's recipe's (:data:`LM_RECIPES`)."""
        given = getattr(self, name)
        return given if given is not None else LM_RECIPES.get(self.preset, LM_PLAIN_RECIPE)[name]


@dataclass
class CSLMTrainResult:
    """What a run did; ``best`` is the best validation's record (None before the first)."""

    updates: int
    stop_reason: str
    best: dict | None
    unigram_ppl: float
    parameters: int
    ngrams_per_second: float
    best_path: str
    last_path: str

    def summary(self) -> str:
        """One line: the best model file, its validation perplexity against the unigram model's, log Z, the stop."""
        best = self.best
        scores = (f"validation perplexity {best['valid_ppl']:.2f} per token (unigram {self.unigram_ppl:.2f}), log Z "
                  f"{best['log_z_mean']:+.3f} ± {best['log_z_std']:.3f}" if best else "not validated yet")
        return f"{self.best_path}: {scores}, {self.updates} updates, {self.stop_reason}"


class CSLMTask:
    """The CSLM as a task of the training loop: its network, Adam, the penalised NLL, validation."""

    unit, loss_name = "n-grams", "loss per token"
    unknown_id = UNK_ID  # the predicted words' <unk>
    validation_keys = ("valid_nll", "valid_ppl", "log_z_mean", "log_z_std")

    def __init__(self, config: CSLMTrainConfig, data: LMData, model: CSLM | None = None, device: str | None = None):
        """``model``: the network of the run being continued; None starts a fresh one."""
        self.config, self.data = config, data
        self.device = torch.device(device or resolve_device(config.device))
        if model is not None:
            self.model = model
        else:
            torch.manual_seed(config.seed)
            self.model = self.new_model()
        # the training targets' unigram distribution: NCE's noise, and the output bias' start if asked
        counts = target_counts(data.train.targets(), self.model.config.vocab_size)
        self.noise = torch.from_numpy(counts / counts.sum()).float().to(self.device)  # (V,)
        if model is None and config.setting("output_bias") == "unigram":
            with torch.no_grad():  # log sum exp(bias) = 0: the model starts at the unigram model, self-normalised
                self.model.output.bias.copy_(torch.from_numpy(np.log((counts + 1e-3) / (counts + 1e-3).sum())))
        self.loss_definition = LM_NCE_LOSS if config.setting("estimator") == "nce" else LM_LOSS
        self.model.to(self.device).train()
        self.network = self.model
        self.train_size = len(data.train)
        self.unigram_ppl = self.baseline()
        self.validated_on = self.validation_text()

    def validation_text(self) -> dict:
        """What the model validates on, as its file records it (:func:`~mosesrnn.train.validation.validation_record`):
        ``--valid``, else the share of the corpus held out."""
        return validation_record(self.config.valid, self.config.encoding, share=self.config.valid_share)

    def new_model(self) -> CSLM:
        """A fresh network of the config's preset and shape."""
        config = self.config
        return CSLM(lm_config(config.preset, len(self.data.vocabulary), order=config.order, embed_dim=config.embed_dim,
                              hidden_dims=config.hidden_dims, self_norm=config.self_norm))

    def baseline(self) -> float:
        """The validation perplexity of the training targets' add-one unigram model, over the words that can be
        predicted: not ``<pad>`` (never a target) nor ``<s>`` (a target of no n-gram)."""
        return self._unigram_perplexity(len(self.data.vocabulary), never=(PAD_ID,))

    def _unigram_perplexity(self, size: int, never: tuple[int, ...]) -> float:
        """The unigram baseline over ``size`` words, two of which are never predicted (``never`` among them)."""
        return unigram_perplexity(target_counts(self.data.train.targets(), size), self.data.valid.targets(), size - 2,
                                  never=never)

    def optimizer(self) -> torch.optim.Optimizer:
        """Adam with the configured learning rate."""
        return adam(self.model.parameters(), self.config.setting("learning_rate"))

    def loss(self, index: np.ndarray) -> torch.Tensor:
        """Mean NLL per token plus alpha times the mean squared log-normaliser (``softmax``), or NCE's loss."""
        context, targets = self.data.train.batch(index, self.device)
        if self.config.setting("estimator") == "nce":
            return self._nce_loss(context, targets)
        scores = self.network(context, self.config.setting("dropout"))  # (B, V)
        score, log_z = scores.gather(1, targets[:, None])[:, 0], scores.logsumexp(1)
        return (log_z - score).mean() + self.model.config.self_norm * log_z.square().mean()

    def _nce_loss(self, context: torch.Tensor, targets: torch.Tensor) -> torch.Tensor:
        """Noise-contrastive estimation (Mnih & Teh 2012; NPLM's): the raw score is taken as log p (log Z = 0)
        and trained to tell each target from k words of the unigram noise q; the k noise words are drawn
        once per minibatch and shared by its rows (one (B, B + k) matmul instead of the (B, V) softmax)."""
        k = self.config.setting("noise_samples")
        noise = torch.multinomial(self.noise, k, replacement=True)  # (k,)
        scores = self.network(context, self.config.setting("dropout"), words=torch.cat([targets, noise]))  # (B, B + k)
        rows = torch.arange(len(targets), device=targets.device)
        log_kq = torch.log(self.noise * k)  # (V,)
        target_logit = scores[rows, rows] - log_kq[targets]  # (B,)
        noise_logit = scores[:, len(targets):] - log_kq[noise]  # (B, k)
        return -(torch.nn.functional.logsigmoid(target_logit)
                 + torch.nn.functional.logsigmoid(-noise_logit).sum(1)).mean()

    def data_fingerprint(self) -> str:
        """The n-grams' count and a hash of their tokens (the ranks of a torchrun run compare it)."""
        return self.data.train.fingerprint()

    def validate(self) -> Validation:
        """Exact perplexity of the held-out text, and how far log Z strays from 0."""
        self.model.eval()
        stats = ngram_stats(self.model, self.data.valid, unknown=self.unknown_id)
        self.model.train()
        record = {"valid_nll": stats.nll, "valid_ppl": stats.perplexity, "log_z_mean": stats.log_z_mean,
                  "log_z_std": stats.log_z_std, "unigram_ppl": self.unigram_ppl}
        return Validation(stats.nll, record, f"validation perplexity {stats.perplexity:.2f} per token (unigram "
                                             f"{self.unigram_ppl:.2f}); log Z {stats.log_z_mean:+.3f} ± "
                                             f"{stats.log_z_std:.3f}")

    def info(self) -> dict:
        """The model file's facts besides the loop's."""
        return {"preset": self.config.preset, "unigram_ppl": self.unigram_ppl, "data": self.data.description,
                "loss": self.loss_definition, "train_ngrams": len(self.data.train),
                "valid_ngrams": len(self.data.valid), "validation": self.validated_on,
                "coverage": self.data.coverage, **self.config.model_info}

    def save_model(self, path: str, info: dict) -> None:
        """A self-contained CSLM file."""
        save_cslm(path, self.model, Codec(MosesWords(), self.data.vocabulary), info)


class CSLMFamily:
    """The CSLM for the training driver (:func:`mosesrnn.train.driver.drive`)."""

    free_on_resume = frozenset(_FREE_ON_RESUME)
    plot_unit = "token"
    name = "CSLM"
    kind = CSLM_KIND

    def check_resume(self, config: CSLMTrainConfig) -> None:
        """Nothing beyond the config: a resumed run keeps its vocabulary (read from its last.pt)."""

    def saved_model(self, config: CSLMTrainConfig, resumed: bool):
        """The run's ``last.pt`` when it continues (its network and vocabulary), else None."""
        return load_cslm(os.path.join(config.output_dir, LAST)) if resumed else None

    def load_data(self, config: CSLMTrainConfig, resumed: bool, writes: bool = True) -> LMData:
        """The corpus' n-grams with the shortlist of the run (a resumed run keeps its vocabulary, so its ids)."""
        preset = LM_PRESETS[config.preset]
        saved = self.saved_model(config, resumed)
        data = load_lm_data(config.corpus, order=config.order or preset["order"],
                            vocab_size=config.vocab_size or preset["shortlist"], valid=config.valid,
                            valid_share=config.valid_share, batch_size=config.setting("batch_size"),
                            encoding=config.encoding, vocabulary=saved.codec.vocabulary if saved else None)
        data.continued = saved.model if saved else None
        log.info("%s: %d training and %d validation n-grams; the %d-word shortlist covers %.1f%% of the words",
                 data.description, len(data.train), len(data.valid), len(data.vocabulary), 100 * data.coverage)
        return data

    def build_task(self, config: CSLMTrainConfig, data: LMData, resumed: bool, device: str) -> CSLMTask:
        """The CSLM's task, continuing the saved network when ``resumed``."""
        return CSLMTask(config, data, data.continued, device)

    def recipe(self, config: CSLMTrainConfig) -> dict:
        """The recipe as resolved: the options given, else the preset's (:data:`LM_RECIPES`)."""
        return {name: config.setting(name) for name in LM_PLAIN_RECIPE}

    def describe(self, config: CSLMTrainConfig, task: CSLMTask, data) -> str:
        """The model line of the log."""
        shape = task.model.config
        return (f"{self.name}: {config.preset} preset, {shape.order}-gram, {shape.embed_dim}-dim embeddings, hidden "
                f"{'+'.join(map(str, shape.hidden_dims))}, {task.model.num_parameters()} parameters, device "
                f"{task.device}; " + ", ".join(f"{name} {value}" for name, value in self.recipe(config).items())
                + f"; loss: {task.loss_definition}")


#: The CSLM family of the training driver.
FAMILY = CSLMFamily()


def cslm_result(outcome) -> CSLMTrainResult:
    """The :class:`CSLMTrainResult` of a driver's outcome (the CSLM's and the joint model's)."""
    result, task = outcome.result, outcome.task
    return CSLMTrainResult(result.updates, result.stop_reason, outcome.best, task.unigram_ppl,
                         task.model.num_parameters(), result.examples_per_second, outcome.loop.path(BEST),
                         outcome.loop.path(LAST))


def train_cslm(config: CSLMTrainConfig, should_stop=None) -> CSLMTrainResult:
    """Train (or resume) a CSLM into ``config.output_dir``; see the module docstring."""
    return cslm_result(drive(FAMILY, config, should_stop))
