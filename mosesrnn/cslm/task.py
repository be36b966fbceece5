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

import hashlib
import logging
import os
import time
from dataclasses import dataclass, field

import numpy as np
import torch

from ..runtime.devices import resolve_device
from ..text.codec import Codec
from ..text.tokenizers import MosesWords
from ..train.loop import BEST, LAST, Loop, LoopSettings, RunConfig, Validation, begin_run
from .config import LM_PRESETS, lm_config
from .data import LMData, load_lm_data, unigram_perplexity
from .model import CSLM
from .model_file import load_language_model, save_language_model
from .scoring import ngram_stats

__all__ = ["LMTrainConfig", "LMTrainResult", "CSLMTask", "train_lm", "LM_LOSS"]

log = logging.getLogger("mosesrnn")

LM_LOSS = "mean NLL per token (nats) + self_norm * mean (log Z)^2"
_FREE_ON_RESUME = {"output_dir", "max_updates", "max_time", "device", "threads", "quiet", "resume", "patience"}


@dataclass
class LMTrainConfig(RunConfig):
    """Everything a CSLM training run needs; see `mosesrnn lm train --help` for each option."""

    output_dir: str
    corpus: str
    valid: str | None = None
    valid_share: float = 0.01
    preset: str = "small"
    order: int | None = None  # default: the preset's
    vocab_size: int | None = None  # default: the preset's shortlist
    embed_dim: int | None = None
    hidden_dims: tuple[int, ...] | None = None
    self_norm: float = 0.1
    batch_size: int = 128
    learning_rate: float = 1e-3
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
            raise ValueError(f"unknown preset {self.preset!r}; choose one of: {', '.join(LM_PRESETS)}")


@dataclass
class LMTrainResult:
    """What a run did; ``best`` is the best validation's record (None before the first)."""

    updates: int
    stop_reason: str
    best: dict | None
    unigram_ppl: float
    parameters: int
    ngrams_per_second: float
    best_path: str
    last_path: str


class CSLMTask:
    """The CSLM as a task of the training loop: its network, Adam, the penalised NLL, validation."""

    unit, loss_name = "n-grams", "loss per token"
    validation_keys = ("valid_nll", "valid_ppl", "log_z_mean", "log_z_std")

    def __init__(self, config: LMTrainConfig, data: LMData, model: CSLM | None = None, device: str | None = None):
        """``model``: the network of the run being continued; None starts a fresh one."""
        self.config, self.data = config, data
        self.device = torch.device(device or resolve_device(config.device))
        self.codec = Codec(MosesWords(), data.vocabulary)
        if model is not None:
            self.model = model
        else:
            torch.manual_seed(config.seed)
            self.model = CSLM(lm_config(config.preset, len(data.vocabulary), order=config.order,
                                        embed_dim=config.embed_dim, hidden_dims=config.hidden_dims,
                                        self_norm=config.self_norm))
        self.model.to(self.device).train()
        self.network = self.model
        self.train_size = len(data.train)
        self.unigram_ppl = unigram_perplexity(data.train, data.valid, len(data.vocabulary))

    def optimizer(self) -> torch.optim.Optimizer:
        """Adam with the configured learning rate."""
        return torch.optim.Adam(self.model.parameters(), lr=self.config.learning_rate)

    def loss(self, index: np.ndarray) -> torch.Tensor:
        """Mean NLL per token plus alpha times the mean squared log-normaliser."""
        context, targets = self.data.train.batch(index, self.device)
        scores = self.network(context)  # (B, V)
        score, log_z = scores.gather(1, targets[:, None])[:, 0], scores.logsumexp(1)
        return (log_z - score).mean() + self.model.config.self_norm * log_z.square().mean()

    def data_fingerprint(self) -> str:
        """The n-grams' count and a hash of their tokens (the ranks of a torchrun run compare it)."""
        digest = hashlib.blake2b(self.data.train.tokens.tobytes(), digest_size=8).hexdigest()
        return f"{len(self.data.train)} training n-grams, tokens {digest}"

    def validate(self) -> Validation:
        """Exact perplexity of the held-out text, and how far log Z strays from 0."""
        self.model.eval()
        stats = ngram_stats(self.model, self.data.valid)
        self.model.train()
        record = {"valid_nll": stats.nll, "valid_ppl": stats.perplexity, "log_z_mean": stats.log_z_mean,
                  "log_z_std": stats.log_z_std, "unigram_ppl": self.unigram_ppl}
        return Validation(stats.nll, record, f"validation perplexity {stats.perplexity:.2f} per token (unigram "
                                             f"{self.unigram_ppl:.2f}); log Z {stats.log_z_mean:+.3f} ± "
                                             f"{stats.log_z_std:.3f}")

    def info(self) -> dict:
        """The model file's facts besides the loop's."""
        return {"preset": self.config.preset, "unigram_ppl": self.unigram_ppl, "data": self.data.description,
                "loss": LM_LOSS, "train_ngrams": len(self.data.train), "valid_ngrams": len(self.data.valid),
                "coverage": self.data.coverage, **self.config.model_info}

    def save_model(self, path: str, info: dict) -> None:
        """A self-contained CSLM file."""
        save_language_model(path, self.model, self.codec, info)


def train_lm(config: LMTrainConfig, should_stop=None) -> LMTrainResult:
    """Train (or resume) a CSLM into ``config.output_dir``; see the module docstring."""
    ranks, device, state = begin_run(config, _FREE_ON_RESUME)
    started = time.monotonic()
    preset = LM_PRESETS[config.preset]
    # a resumed run continues its last.pt, and keeps its vocabulary (so its ids)
    saved = load_language_model(os.path.join(config.output_dir, LAST)) if state else None
    vocabulary = saved.codec.vocabulary if saved else None
    data = load_lm_data(config.corpus, order=config.order or preset["order"],
                        vocab_size=config.vocab_size or preset["shortlist"], valid=config.valid,
                        valid_share=config.valid_share, batch_size=config.batch_size, encoding=config.encoding,
                        vocabulary=vocabulary)
    log.info("%s: %d training and %d validation n-grams, read in %.0f s; the %d-word shortlist covers %.1f%% of "
             "the words", data.description, len(data.train), len(data.valid), time.monotonic() - started,
             len(data.vocabulary), 100 * data.coverage)
    task = CSLMTask(config, data, saved.model if saved else None, device)
    settings = LoopSettings(batch_size=config.batch_size, valid_every=config.valid_every, patience=config.patience,
                            max_updates=config.max_updates, max_time=config.max_time, clip_norm=config.clip_norm,
                            seed=config.seed, quiet=config.quiet, plot_unit="token", ranks=ranks)
    loop = Loop(task, settings, config.output_dir, config.to_dict(), state)
    shape = task.model.config
    log.info("CSLM: %s preset, %d-gram, %d-dim embeddings, hidden %s, %d parameters, device %s, %d threads; loss: %s",
             config.preset, shape.order, shape.embed_dim, "+".join(map(str, shape.hidden_dims)),
             task.model.num_parameters(), task.device, torch.get_num_threads(), LM_LOSS)
    loop.log.write("start", resumed=loop.resumed, update=loop.updates, parameters=task.model.num_parameters(),
                   loss=LM_LOSS, data=data.description, unigram_ppl=task.unigram_ppl, config=config.to_dict())
    result = loop.run(should_stop)
    best = result.best.record if result.best else None
    log.info("stopped (%s) after %d updates: %s; %.0f n-grams/s", result.stop_reason, result.updates,
             result.best.summary if result.best else "not validated yet", result.examples_per_second)
    return LMTrainResult(result.updates, result.stop_reason, best, task.unigram_ppl, task.model.num_parameters(),
                         result.examples_per_second, loop.path(BEST), loop.path(LAST))

