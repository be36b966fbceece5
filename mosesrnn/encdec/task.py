"""Training the RNN Encoder-Decoder as in Cho et al. (2014), Sec. 4.1.1.

The paper's recipe: Adadelta (rho = 0.95, eps = 1e-6) on minibatches of 64 randomly drawn unique
phrase pairs (``--preset paper``; the ``small`` preset trains with Adam and a schedule, faster to a
perplexity, see :data:`RECIPES`). The
loss is the mean over the batch of each pair's summed token negative log-likelihood (nats per
pair, EOS included); with ``self_norm`` (alpha > 0, ``--self-norm``) each pair adds alpha times the sum
of (log Z_t)^2 over its positions, log Z_t = log sum_j exp(g_j . s_t) the softmax normaliser, which
pushes log Z towards 0 so that a scorer may skip it (Devlin et al. 2014; the CSLM's penalty, per
position). Every ``valid_every`` updates the held-out pairs are scored (NLL per pair,
perplexity per token and per Moses word + EOS, which compares across segmentations; with
``self_norm`` also the mean and spread of log Z over the predicted positions). The loop
itself — minibatches, validation, ``best.pt``/``last.pt``, exact resume, signals, the log — is
:mod:`mosesrnn.train.loop`, shared with the CSLM; this module is the encoder-decoder's task.
"""
from __future__ import annotations

import hashlib
import logging
import math
import os
from dataclasses import dataclass, field

import numpy as np
import torch

from ..errors import MosesRNNError
from ..formats.phrase_table import count_scores
from ..io.model_store import model_kind
from ..models import ENCODER_DECODER
from ..runtime.devices import resolve_device
from ..runtime.progress import Progress
from ..text.subwords import load_vocab_dir, save_vocab_dir
from ..train.distributed import ranks_from_environment
from ..train.driver import drive
from ..train.loop import BEST, LAST, RunConfig, Validation, adam
from ..train.validation import target_counts, unigram_log_probs, unigram_perplexity, validation_record
from .config import EOS_ID, OPTIMIZERS, PAD_ID, PLAIN_RECIPE, RECIPES, ModelConfig, model_config, preset_shortlist
from .data import PairSet, TrainingData, load_corpus, load_table
from .direction import SOURCE_TO_TARGET, orient
from .model import EncoderDecoder, build_model
from .model_file import load_encoder_decoder, save_encoder_decoder
from .scoring import autocast, evaluate, evaluate_log_z, word_perplexity

__all__ = ["EncoderDecoderTrainConfig", "EncoderDecoderTrainResult", "EncoderDecoderTask", "EncoderDecoderFamily",
           "FAMILY", "train_encoder_decoder", "unigram_baseline", "LOSS_DEFINITION", "SELF_NORM_LOSS"]

log = logging.getLogger("mosesrnn")

LOSS_DEFINITION = "mean over the batch of the summed token NLL of each pair (nats per pair, EOS included)"
SELF_NORM_LOSS = ("mean over the batch of the summed token NLL of each pair + self_norm x the sum of (log Z)^2 "
                  "over its positions (nats per pair, EOS included)")
VOCAB_DIR = "vocab"
RESUME_MODES = ("auto", "require", "never")
# Options that may differ between a run and its resumption.
_FREE_ON_RESUME = {"output_dir", "vocab_dir", "max_updates", "max_time", "device", "threads", "dtype", "bf16",
                   "quiet", "resume", "patience", "valid_batch_size"}


@dataclass
class EncoderDecoderTrainConfig(RunConfig):
    """Everything a training run needs; see `mosesrnn train --help` for each option."""

    output_dir: str
    table: str | None = None
    corpus: tuple[str, str] | None = None
    preset: str = "small"
    direction: str = SOURCE_TO_TARGET
    vocab_dir: str | None = None
    vocab_size: int | None = None  # default: the preset's shortlist
    max_len: int | None = None
    encoding: str = "utf-8"
    valid_share: float = 0.01
    valid_size: int | None = None  # overrides valid_share
    batch_size: int = 64
    optimizer: str | None = None  # default: the preset's recipe (RECIPES)
    learning_rate: float | None = None  # default: the optimizer's in the recipe
    clip_norm: float | None = None
    # the schedule, data order and bias start; None: the preset's recipe (RECIPES), see `setting`
    warmup: int | None = None  # updates of linear learning-rate warm-up
    lr_decay: str | None = None  # none | linear | cosine, to min_lr x the rate at max_updates or max_time
    min_lr: float = 0.0
    bucket_window: int | None = None  # sort pairs by length inside windows of this many minibatches (0: off)
    output_bias: str | None = None  # zero | unigram: the softmax bias starts at the log unigram distribution
    self_norm: float | None = None  # alpha of the (log Z)^2 penalty per position; None (or 0): off
    valid_every: int = 1000
    valid_batch_size: int = 256
    patience: int = 10
    max_updates: int | None = None
    max_time: float | None = None  # seconds of training in this invocation
    device: str = "auto"
    threads: int | None = None
    dtype: str = "fp32"  # fp32 | bf16 (autocast, fp32 master weights)
    seed: int = 1
    model_overrides: dict = field(default_factory=dict)
    resume: str = "auto"
    quiet: bool = False

    def __post_init__(self):
        if (self.table is None) == (self.corpus is None):
            raise MosesRNNError("give exactly one of a phrase table or a corpus (source and target file)")
        if self.resume not in RESUME_MODES:
            raise MosesRNNError(f"resume must be one of {', '.join(RESUME_MODES)}, not {self.resume!r}")
        for name in ("batch_size", "valid_every", "valid_batch_size", "patience"):
            if getattr(self, name) < 1:
                raise MosesRNNError(f"{name} must be positive, got {getattr(self, name)}")
        if self.clip_norm is not None and not self.clip_norm > 0:
            raise MosesRNNError(f"clip_norm must be positive, got {self.clip_norm}")
        if self.dtype not in ("fp32", "bf16"):
            raise MosesRNNError(f"dtype must be fp32 or bf16 for training, not {self.dtype!r}")
        if self.lr_decay not in (None, "none", "linear", "cosine") or self.output_bias not in (None, "zero", "unigram"):
            raise MosesRNNError(f"unknown lr_decay {self.lr_decay!r} or output_bias {self.output_bias!r}")
        if self.optimizer is not None and self.optimizer not in OPTIMIZERS:
            raise MosesRNNError(f"optimizer must be one of {', '.join(OPTIMIZERS)}, not {self.optimizer!r}")
        if self.self_norm is not None and not self.self_norm >= 0:
            raise MosesRNNError(f"self_norm must be 0 or more, got {self.self_norm}")
        if not self.self_norm:  # 0 is off: the run's config (and its resume check) as without the option
            self.self_norm = None

    def setting(self, name: str):
        """The value of a recipe option: the one given, else the preset's recipe's, else the plain default
        (no warm-up, decay or bucketing, the bias at 0, the optimizer's own rate). A recipe holds for its
        optimizer: with another one (``--optimizer``) the plain defaults apply."""
        given = getattr(self, name)
        if given is not None:
            return given
        recipe = RECIPES.get(self.preset, {})
        if name == "optimizer":
            return recipe.get("optimizer", PLAIN_RECIPE["optimizer"])
        if self.setting("optimizer") != recipe.get("optimizer"):  # another optimizer: none of the recipe
            recipe = {}
        if name == "learning_rate":
            return recipe.get("learning_rate", OPTIMIZERS[self.setting("optimizer")])
        return recipe.get(name, PLAIN_RECIPE[name])


@dataclass
class EncoderDecoderTrainResult:
    """What a run did; paths point to the files in the output directory."""

    updates: int
    epoch: int
    stop_reason: str  # max_updates | max_time | early_stopping | interrupted
    best_valid_nll: float
    best_valid_ppl: float
    unigram_ppl: float
    parameters: int
    train_pairs: int
    valid_pairs: int
    pairs_per_second: float
    resumed: bool
    best_path: str
    last_path: str
    best_valid_word_ppl: float  # per Moses word + EOS: comparable across tokenizers


def _target_counts(train: PairSet, vocab_size: int) -> np.ndarray:
    """How often ``train`` predicts each target id, float64 (K,): its words, and EOS once a pair (PAD never: the
    add-one model gives it the probability of an unseen word, which keeps the sum of the others below 1)."""
    counts = target_counts(train.trg_ids, vocab_size)  # (K,)
    counts[EOS_ID] += len(train)
    counts[PAD_ID] = 0
    return counts


def unigram_baseline(train: PairSet, valid: PairSet, vocab_size: int) -> float:
    """Per-token perplexity on ``valid`` (its words and EOS) of the add-one unigram model of ``train``'s targets
    over the target vocabulary but PAD (:func:`~mosesrnn.train.validation.unigram_perplexity`)."""
    return unigram_perplexity(_target_counts(train, vocab_size), valid.trg_ids, vocab_size - 1, ends=len(valid),
                              end_id=EOS_ID)


class EncoderDecoderTask:
    """The RNN Encoder-Decoder as a task of the training loop (:mod:`mosesrnn.train.loop`): its
    model, Adadelta (rho 0.95, eps 1e-6), the mean per-pair NLL of a minibatch, and validation
    against a unigram baseline."""

    unit = "pairs"

    def __init__(self, config: EncoderDecoderTrainConfig, data: TrainingData, resumed: bool, device: str | None = None):
        self.config, self.data = config, data
        self.loss_name = "loss per pair" if config.self_norm else "NLL per pair"
        # self-normalised training adds the penalty and log Z's statistics (a run without it keeps its files)
        self.loss_definition = SELF_NORM_LOSS if config.self_norm else LOSS_DEFINITION
        self.validation_keys = ("valid_nll", "valid_ppl", "valid_word_ppl") + (
            ("log_z_mean", "log_z_std") if config.self_norm else ())
        self.device = torch.device(device or resolve_device(config.device))
        self.model = self._model(resumed).to(self.device).train()
        self.network = self.model
        self.train_size = len(data.train)
        self.table_scores = count_scores(config.table, config.encoding) if config.table else None
        vocab_size = self.model.config.trg_vocab_size
        self.unigram_ppl = unigram_baseline(data.train, data.valid, vocab_size)
        if config.setting("output_bias") == "unigram" and not resumed and hasattr(self.model.decoder, "G_l"):
            with torch.no_grad():  # p(y) at the start = the add-one unigram distribution of the targets
                self.model.decoder.G_l.bias.copy_(torch.from_numpy(
                    unigram_log_probs(_target_counts(data.train, vocab_size), vocab_size - 1)))
        # the length of each training pair, for length bucketing (source first, then target)
        self.lengths = np.diff(data.train.src_offsets) * 1024 + np.diff(data.train.trg_offsets)

    def _model(self, resumed: bool) -> EncoderDecoder:
        path = os.path.join(self.config.output_dir, LAST)
        if resumed:
            return load_encoder_decoder(path).model
        vocabularies = self.data.vocabularies
        sizes = orient(self.config.direction, len(vocabularies.source), len(vocabularies.target))
        torch.manual_seed(self.config.seed)
        return build_model(model_config(self.config.preset, *sizes, **self.config.model_overrides))

    def recipe(self) -> tuple[str, float]:
        """The optimizer and learning rate: the options', else the preset's recipe."""
        return self.config.setting("optimizer"), self.config.setting("learning_rate")

    def optimizer(self) -> torch.optim.Optimizer:
        """Adadelta (rho 0.95, eps 1e-6) as in the paper (Sec. 4.1.1), or Adam."""
        name, rate = self.recipe()
        if name == "adadelta":
            return torch.optim.Adadelta(self.model.parameters(), lr=rate, rho=0.95, eps=1e-6)
        return adam(self.model.parameters(), rate)

    def loss(self, index: np.ndarray) -> torch.Tensor:
        """The mean over the minibatch of each pair's summed token NLL (+ ``self_norm`` times the sum of
        (log Z)^2 over its positions, when asked).

        Computed in the scorer's order (:meth:`~mosesrnn.encdec.decoder.C14Decoder.sequence_log_prob`: the
        GRU on the rows still going, the output layer on real positions only), the same equations as
        the padded order and 1.5x faster to train on the Tatoeba table's phrase pairs.
        """
        batch = self.data.train.batch(index, self.device)  # src (B,S), src_len, trg (B,T), trg_len
        with autocast(self.device, self.config.dtype):
            if self.config.self_norm:
                terms = self.network(*batch, terms=True)  # (B,) each
                return (self.config.self_norm * terms.log_z_sq - terms.log_p).mean()
            return -self.network(*batch).mean()

    def data_fingerprint(self) -> str:
        """The pairs' count and a hash of their ids (the ranks of a torchrun run compare it)."""
        train = self.data.train
        digest = hashlib.blake2b(digest_size=8)
        for array in (train.src_ids, train.src_offsets, train.trg_ids, train.trg_offsets):
            digest.update(array.tobytes())
        return f"{len(train)} training pairs, ids {digest.hexdigest()}"

    def validate(self) -> Validation:
        """NLL per pair, perplexity per token and per Moses word of the held-out pairs (exact: with the
        normaliser); self-normalised training adds log Z's mean and spread."""
        if self.config.self_norm:
            stats = evaluate_log_z(self.model, self.data.valid, self.config.valid_batch_size, self.device,
                                   self.config.dtype)
            nll, ppl = stats.nll, stats.perplexity
        else:
            nll, ppl = evaluate(self.model, self.data.valid, self.config.valid_batch_size, self.device,
                                self.config.dtype)
        word_ppl = word_perplexity(nll, len(self.data.valid), self.data.valid_words)
        record = {"valid_nll": nll, "valid_ppl": ppl, "valid_word_ppl": word_ppl, "unigram_ppl": self.unigram_ppl}
        summary = (f"validation NLL {nll:.3f}, perplexity {ppl:.2f} per token (unigram {self.unigram_ppl:.2f}), "
                   f"{word_ppl:.2f} per word")
        if self.config.self_norm:
            record.update(log_z_mean=stats.log_z_mean, log_z_std=stats.log_z_std)
            summary += f"; log Z {stats.log_z_mean:+.3f} ± {stats.log_z_std:.3f}"
        return Validation(nll, record, summary)

    def info(self) -> dict:
        """The model file's facts besides the loop's."""
        optimizer, rate = self.recipe()
        return {"preset": self.config.preset, "optimizer": optimizer, "learning_rate": rate,
                "unigram_ppl": self.unigram_ppl, "data": self.data.description,
                "loss": self.loss_definition, "train_pairs": len(self.data.train), "valid_pairs": len(self.data.valid),
                "coverage": list(self.data.coverage), "table_scores": self.table_scores,
                "validation": validation_record(share=self.config.valid_share, size=self.config.valid_size),
                # trained self-normalised (alpha); with the validation's log_z_mean and log_z_std, what
                # `score --normalizer skip` checks
                **({"self_norm": self.config.self_norm} if self.config.self_norm else {})}

    def save_model(self, path: str, info: dict) -> None:
        """A self-contained model file with the run's codecs and direction."""
        save_encoder_decoder(path, self.model, self.data.text, self.config.direction, info)


class EncoderDecoderFamily:
    """The RNN Encoder-Decoder for the training driver (:func:`mosesrnn.train.driver.drive`)."""

    free_on_resume = frozenset(_FREE_ON_RESUME)
    plot_unit = "pair"
    kind = ENCODER_DECODER

    def check_resume(self, config: EncoderDecoderTrainConfig) -> None:
        """A resumed run keeps its vocabularies: a different ``--vocab`` is refused."""
        _check_vocab_dir(config)

    def load_data(self, config: EncoderDecoderTrainConfig, resumed: bool, writes: bool = True) -> TrainingData:
        """Read the pairs with the vocabularies of the run (saved in the output directory, by the process
        that ``writes``)."""
        vocab_dir = os.path.join(config.output_dir, VOCAB_DIR) if resumed else config.vocab_dir
        vocabularies, tokenizers = load_vocab_dir(vocab_dir) if vocab_dir else (None, None)
        options = dict(direction=config.direction, vocabularies=vocabularies,
                       vocab_size=config.vocab_size or preset_shortlist(config.preset), max_len=config.max_len,
                       valid_share=config.valid_share, valid_size=config.valid_size, encoding=config.encoding)
        if tokenizers:
            options["tokenizers"] = tokenizers  # word shortlists or SentencePiece models, as the directory holds
        with Progress("reading", quiet=config.quiet, unit="pairs") as progress:
            options["progress"] = progress.track
            data = load_table(config.table, **options) if config.table else load_corpus(*config.corpus, **options)
        if writes:
            save_vocab_dir(os.path.join(config.output_dir, VOCAB_DIR), data.text)
        log.info("%s: %d training and %d validation pairs (%d skipped: an empty side%s), %.1f MB in memory; "
                 "shortlists cover %.1f%% / %.1f%% of the words", data.description, len(data.train), len(data.valid),
                 data.dropped, f" or over --max-len {config.max_len}" if config.max_len else "",
                 (data.train.nbytes + data.valid.nbytes) / 1e6, 100 * data.coverage[0], 100 * data.coverage[1])
        return data

    def build_task(self, config: EncoderDecoderTrainConfig, data: TrainingData, resumed: bool,
                   device: str) -> EncoderDecoderTask:
        """The encoder-decoder's task; its unigram baseline is logged."""
        task = EncoderDecoderTask(config, data, resumed, device)
        log.info("unigram baseline: validation perplexity %.1f per token; %.2f output tokens per word",
                 task.unigram_ppl, data.valid.target_tokens() / max(data.valid_words + len(data.valid), 1))
        return task

    def recipe(self, config: EncoderDecoderTrainConfig) -> dict:
        """The optimizer, its rate and schedule, bucketing and the bias start, as resolved."""
        return {name: config.setting(name) for name in ("optimizer", "learning_rate", "warmup", "lr_decay",
                                                        "bucket_window", "output_bias")}

    def describe(self, config: EncoderDecoderTrainConfig, task: EncoderDecoderTask, data: TrainingData) -> str:
        """The model line of the log."""
        recipe, world = self.recipe(config), ranks_from_environment().world
        return (f"model: {config.preset} preset, {task.model.config.encoder} encoder, "
                f"{task.model.num_parameters()} parameters, {config.direction}, device {task.device}"
                f"{' (bf16 autocast)' if config.dtype == 'bf16' else ''}, {recipe['optimizer']} (lr "
                f"{recipe['learning_rate']:g}, warm-up {recipe['warmup']}, decay {recipe['lr_decay']}), batch "
                f"{config.batch_size * world}{f' ({world} processes x {config.batch_size})' if world > 1 else ''}, "
                f"bucketing {recipe['bucket_window']}, output bias {recipe['output_bias']}; loss: "
                f"{task.loss_definition}{f' (self_norm {config.self_norm:g})' if config.self_norm else ''}")


#: The encoder-decoder family of the training driver.
FAMILY = EncoderDecoderFamily()


def train_encoder_decoder(config: EncoderDecoderTrainConfig, should_stop=None) -> EncoderDecoderTrainResult:
    """Train (or resume) a model into ``config.output_dir``; see the module docstring.

    ``should_stop(updates)`` is asked before every update; True stops the run as an interrupt
    would. Raises MosesRNNError, FileNotFoundError or PhraseTableError for bad input.
    """
    _check_encoder_of_saved_run(config)
    outcome = drive(FAMILY, config, should_stop)
    task, data, result = outcome.task, outcome.data, outcome.result
    best = outcome.best or dict.fromkeys(task.validation_keys, math.inf)
    return EncoderDecoderTrainResult(result.updates, result.epoch, result.stop_reason, best["valid_nll"],
                                     best["valid_ppl"], task.unigram_ppl, task.model.num_parameters(),
                                     len(data.train), len(data.valid), result.examples_per_second, result.resumed,
                                     outcome.loop.path(BEST), outcome.loop.path(LAST), best["valid_word_ppl"])


def _check_encoder_of_saved_run(config: EncoderDecoderTrainConfig) -> None:
    """Refuse a run of another ``--encoder`` than the model saved in its output folder: it cannot continue that run,
    and ``--restart`` would replace the saved model (a plain difference of model_overrides says neither)."""
    wanted = config.model_overrides.get("encoder", ModelConfig.encoder)
    for name in (BEST, LAST):
        path = os.path.join(config.output_dir, name)
        if config.resume == "never" or not os.path.isfile(path) or model_kind(path) != ENCODER_DECODER:
            continue  # starting over; or no model here, or another family's (the driver says so)
        saved = load_encoder_decoder(path).model.config.encoder
        if saved != wanted:
            raise MosesRNNError(f"{config.output_dir} holds a model of --encoder {saved} ({path}); this run trains "
                                f"--encoder {wanted}, which cannot continue it, and --restart would replace that "
                                f"{saved} model: give this run another output folder")
        return


def _check_vocab_dir(config: EncoderDecoderTrainConfig) -> None:
    """A resumed run keeps its vocabularies (MODEL_DIR/vocab): refuse a --vocab that differs from them."""
    if config.vocab_dir is None:
        return
    saved, given = (load_vocab_dir(folder) for folder in (os.path.join(config.output_dir, VOCAB_DIR),
                                                          config.vocab_dir))
    def fingerprint(vocabularies, tokenizers) -> tuple:
        return (vocabularies.source.digest(), vocabularies.target.digest(), *(t.to_dict() for t in tokenizers))

    if fingerprint(*saved) != fingerprint(*given):
        raise MosesRNNError(f"--vocab {config.vocab_dir} differs from the vocabularies of the run saved in "
                            f"{config.output_dir} ({os.path.join(config.output_dir, VOCAB_DIR)}): continue without "
                            f"--vocab, or start over with --restart")
