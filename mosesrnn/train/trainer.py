"""Training the RNN Encoder-Decoder as in Cho et al. (2014), Sec. 4.1.1.

Adadelta (rho = 0.95, eps = 1e-6) on minibatches of 64 randomly drawn unique phrase pairs. The
loss is the mean over the batch of each pair's summed token negative log-likelihood (nats per
pair, EOS included). Every ``valid_every`` updates the held-out pairs are scored (NLL per pair,
perplexity per token and per Moses word + EOS, which compares across segmentations), ``last.pt``
and the training state are saved, ``best.pt`` when the validation NLL improves, and training
stops after ``patience`` validations without improvement.

A run is resumable exactly: ``state.pt`` holds the optimizer state, the RNG states, the update
count and the data position (epoch, index into that epoch's seeded permutation), so N updates in
one go and N/2 + resume + N/2 give the same weights. SIGINT/SIGTERM stop the run at the end of
the current update and save ``last.pt`` and the state.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import sys
import threading
import time
from contextlib import contextmanager, nullcontext
from dataclasses import asdict, dataclass, field

import numpy as np
import torch
from tqdm import tqdm

from ..devices import resolve_device
from ..direction import SOURCE_TO_TARGET, orient
from ..files import atomic_file
from ..formats.phrase_table import count_scores
from ..models.config import EOS_ID, PAD_ID, model_config, preset_shortlist
from ..models.encdec import EncoderDecoder, build_model
from ..models.model_file import load_trained_model, save_trained_model
from ..text.subwords import load_vocab_dir, save_vocab_dir
from .data import PairSet, Shuffler, TrainingData, load_corpus, load_table
from .log import TrainLog

__all__ = ["TrainConfig", "TrainResult", "train", "evaluate", "unigram_perplexity", "word_perplexity",
           "LOSS_DEFINITION"]

log = logging.getLogger("mosesrnn")

LOSS_DEFINITION = "mean over the batch of the summed token NLL of each pair (nats per pair, EOS included)"
BEST, LAST, STATE, VOCAB_DIR = "best.pt", "last.pt", "state.pt", "vocab"
STATE_VERSION = 1
RESUME_MODES = ("auto", "require", "never")
# Options that may differ between a run and its resumption.
_FREE_ON_RESUME = {"output_dir", "vocab_dir", "max_updates", "max_time", "device", "threads", "bf16",
                   "quiet", "resume", "patience", "valid_batch_size"}


@dataclass
class TrainConfig:
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
    clip_norm: float | None = None
    valid_every: int = 1000
    valid_batch_size: int = 256
    patience: int = 10
    max_updates: int | None = None
    max_time: float | None = None  # seconds of training in this invocation
    device: str = "auto"
    threads: int | None = None
    bf16: bool = False
    seed: int = 1
    model_overrides: dict = field(default_factory=dict)
    resume: str = "auto"
    quiet: bool = False

    def __post_init__(self):
        if (self.table is None) == (self.corpus is None):
            raise ValueError("give exactly one of a phrase table or a corpus (source and target file)")
        if self.resume not in RESUME_MODES:
            raise ValueError(f"resume must be one of {', '.join(RESUME_MODES)}, not {self.resume!r}")
        for name in ("batch_size", "valid_every", "valid_batch_size", "patience"):
            if getattr(self, name) < 1:
                raise ValueError(f"{name} must be positive, got {getattr(self, name)}")
        if self.clip_norm is not None and not self.clip_norm > 0:
            raise ValueError(f"clip_norm must be positive, got {self.clip_norm}")

    def to_dict(self) -> dict:
        """Plain, JSON-compatible values (stored in the state and the log)."""
        return json.loads(json.dumps(asdict(self)))


@dataclass
class TrainResult:
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


def unigram_perplexity(train: PairSet, valid: PairSet, vocab_size: int) -> float:
    """Per-token perplexity on ``valid`` of a target-word unigram model estimated on ``train``.

    Add-one smoothing over the target vocabulary: UNK, EOS and the shortlist (PAD never occurs).
    """
    counts = np.bincount(train.trg_ids, minlength=vocab_size).astype(np.float64)  # (K,)
    counts[EOS_ID] += len(train)
    log_p = np.log(counts + 1.0) - math.log(counts.sum() - counts[PAD_ID] + vocab_size - 1)
    total = log_p[valid.trg_ids].sum() + len(valid) * log_p[EOS_ID]
    return math.exp(-total / valid.target_tokens())


def word_perplexity(nll_per_pair: float, pairs: int, output_words: int) -> float:
    """Perplexity per Moses word: exp(total NLL / (output words + one EOS per pair)).

    The same normaliser for every tokenizer, so word and subword models compare."""
    return math.exp(nll_per_pair * pairs / (output_words + pairs))


def _autocast(device: torch.device, bf16: bool):
    """bfloat16 autocast (fp32 master weights) when asked, else nothing."""
    return torch.autocast(device_type=device.type, dtype=torch.bfloat16) if bf16 else nullcontext()


@torch.no_grad()
def evaluate(model: EncoderDecoder, pairs: PairSet, batch_size: int = 256,
             device: torch.device = torch.device("cpu"), bf16: bool = False) -> tuple[float, float]:
    """(NLL per pair in nats, per-token perplexity) of ``pairs``, batched by similar lengths."""
    was_training = model.training
    model.eval()
    lengths = np.diff(pairs.src_offsets) * 1000 + np.diff(pairs.trg_offsets)
    order = np.argsort(lengths, kind="stable")
    total = 0.0
    for start in range(0, len(order), batch_size):
        with _autocast(device, bf16):
            log_p = model.log_prob(*pairs.batch(order[start:start + batch_size], device))  # (B,)
        total -= float(log_p.double().sum())
    model.train(was_training)
    return total / len(pairs), math.exp(total / pairs.target_tokens())


def _rng_state() -> dict:
    """The torch, numpy and python RNG states as tensors, lists and numbers (weights_only-safe)."""
    name, keys, pos, has_gauss, gauss = np.random.get_state()
    version, internal, gauss_next = random.getstate()
    return {"torch": torch.get_rng_state(), "numpy": [name, keys.tolist(), pos, has_gauss, gauss],
            "python": [version, list(internal), gauss_next]}


def _set_rng_state(state: dict) -> None:
    torch.set_rng_state(state["torch"])
    name, keys, pos, has_gauss, gauss = state["numpy"]
    np.random.set_state((name, np.array(keys, dtype=np.uint32), pos, has_gauss, gauss))
    version, internal, gauss_next = state["python"]
    random.setstate((version, tuple(internal), gauss_next))


def _atomic_torch_save(obj: dict, path: str) -> None:
    with atomic_file(path) as stream:
        torch.save(obj, stream)


@contextmanager
def _stop_on_signals(flag: threading.Event):
    """Set ``flag`` on SIGINT/SIGTERM (a second signal interrupts at once); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        if flag.is_set():
            raise KeyboardInterrupt
        log.warning("signal %d: stopping after this update and saving (again to quit at once)", signum)
        flag.set()

    previous = {sig: signal.signal(sig, handler) for sig in (signal.SIGINT, signal.SIGTERM)}
    try:
        yield
    finally:
        for sig, old in previous.items():
            signal.signal(sig, old)


class _Run:
    """One training run: model, optimizer, data, counters and the files in the output directory."""

    def __init__(self, config: TrainConfig, data: TrainingData, state: dict | None):
        self.config, self.data, self.resumed = config, data, state is not None
        self.device = torch.device(resolve_device(config.device))
        self.path = lambda name: os.path.join(config.output_dir, name)
        self.model = self._model(state).to(self.device).train()
        self.optimizer = torch.optim.Adadelta(self.model.parameters(), lr=1.0, rho=0.95, eps=1e-6)
        state = state or {}
        if state:
            self.optimizer.load_state_dict(state["optimizer"])
            _set_rng_state(state["rng"])
        self.table_scores = count_scores(config.table, config.encoding) if config.table else None
        self.updates, self.pairs = state.get("updates", 0), state.get("pairs", 0)
        self.seconds = state.get("seconds", 0.0)
        self.best_nll, self.best_ppl = state.get("best_nll", math.inf), state.get("best_ppl", math.inf)
        self.best_word_ppl = self._word_ppl(self.best_nll)
        self.bad_validations = state.get("bad_validations", 0)
        self.loss_sum, self.loss_count = state.get("loss_sum", 0.0), state.get("loss_count", 0)
        self.shuffler = Shuffler(len(data.train), config.batch_size, config.seed,
                                 state.get("epoch", 0), state.get("position", 0))
        self.unigram_ppl = unigram_perplexity(data.train, data.valid, self.model.config.trg_vocab_size)
        self.log = TrainLog(self.path("train.jsonl"), self.path("loss.png"), fresh=not self.resumed)
        self.last_valid, self.last_valid_update = state.get("last_valid"), state.get("last_valid_update", -1)

    def _model(self, state: dict | None) -> EncoderDecoder:
        if state is not None:
            trained = load_trained_model(self.path(LAST))
            if trained.info.get("updates") != state["updates"]:
                raise ValueError(f"{self.path(LAST)} and {self.path(STATE)} are from different updates; "
                                 f"start over with --restart")
            return trained.model
        vocabularies = self.data.vocabularies
        sizes = orient(self.config.direction, len(vocabularies.source), len(vocabularies.target))
        torch.manual_seed(self.config.seed)
        return build_model(model_config(self.config.preset, *sizes, **self.config.model_overrides))

    def _word_ppl(self, valid_nll: float) -> float:
        return word_perplexity(valid_nll, len(self.data.valid), self.data.valid_words)

    def step(self) -> float:
        """One Adadelta update on the next minibatch; returns its loss (nats per pair)."""
        index = self.shuffler.next_batch()
        batch = self.data.train.batch(index, self.device)  # src (B,S), src_len, trg (B,T), trg_len
        with _autocast(self.device, self.config.bf16):
            loss = -self.model.log_prob(*batch).mean()
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()
        if self.config.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.model.parameters(), self.config.clip_norm)
        self.optimizer.step()
        value = float(loss.detach())
        if not math.isfinite(value):
            raise ValueError(f"the loss became {value} at update {self.updates + 1}; try --clip-norm 1")
        self.updates, self.pairs = self.updates + 1, self.pairs + len(index)
        self.loss_sum, self.loss_count = self.loss_sum + value, self.loss_count + 1
        return value

    def info(self, valid: tuple[float, float] | None) -> dict:
        """Training facts stored in the model files."""
        return {"preset": self.config.preset, "updates": self.updates, "epoch": self.shuffler.epoch,
                "pairs_seen": self.pairs, "valid_nll": valid and valid[0], "valid_ppl": valid and valid[1],
                "valid_word_ppl": valid and self._word_ppl(valid[0]),
                "unigram_ppl": self.unigram_ppl, "data": self.data.description, "loss": LOSS_DEFINITION,
                "train_pairs": len(self.data.train), "valid_pairs": len(self.data.valid),
                "batch_size": self.config.batch_size, "seed": self.config.seed,
                "training_seconds": round(self.seconds, 1), "coverage": list(self.data.coverage),
                "table_scores": self.table_scores}

    def validate(self) -> None:
        """Score the held-out pairs, log, save last.pt (and best.pt if better) and the state."""
        started = time.monotonic()
        valid_nll, valid_ppl = evaluate(self.model, self.data.valid, self.config.valid_batch_size,
                                        self.device, self.config.bf16)
        improved = valid_nll < self.best_nll
        if improved:
            self.best_nll, self.best_ppl, self.bad_validations = valid_nll, valid_ppl, 0
            self.best_word_ppl = self._word_ppl(valid_nll)
            save_trained_model(self.path(BEST), self.model, self.data.text, self.config.direction,
                               self.info((valid_nll, valid_ppl)))
        else:
            self.bad_validations += 1
        train_nll = self.loss_sum / max(self.loss_count, 1)
        self.loss_sum, self.loss_count = 0.0, 0
        self.last_valid, self.last_valid_update = [valid_nll, valid_ppl], self.updates
        self.log.validation(update=self.updates, epoch=self.shuffler.epoch, pairs=self.pairs,
                            train_nll=train_nll, valid_nll=valid_nll, valid_ppl=valid_ppl,
                            valid_word_ppl=self._word_ppl(valid_nll),
                            unigram_ppl=self.unigram_ppl, best=improved, seconds=round(self.seconds, 1),
                            valid_seconds=round(time.monotonic() - started, 1))
        log.info("update %d (epoch %d, %.0f s): train NLL %.3f per pair; validation NLL %.3f, perplexity %.2f "
                 "per token (unigram %.2f), %.2f per word%s", self.updates, self.shuffler.epoch, self.seconds,
                 train_nll, valid_nll, valid_ppl, self.unigram_ppl, self._word_ppl(valid_nll),
                 ", best so far" if improved else "")
        self.save()

    def save(self) -> None:
        """Write last.pt, then the training state that matches it."""
        save_trained_model(self.path(LAST), self.model, self.data.text, self.config.direction,
                           self.info(self.last_valid))
        _atomic_torch_save({
            "version": STATE_VERSION, "config": self.config.to_dict(),
            "optimizer": self.optimizer.state_dict(),
            "rng": _rng_state(), "updates": self.updates, "pairs": self.pairs, "seconds": self.seconds,
            "epoch": self.shuffler.epoch, "position": self.shuffler.position, "best_nll": self.best_nll,
            "best_ppl": self.best_ppl, "bad_validations": self.bad_validations,
            "loss_sum": self.loss_sum, "loss_count": self.loss_count, "last_valid": self.last_valid,
            "last_valid_update": self.last_valid_update}, self.path(STATE))

    def run(self, stop: threading.Event, should_stop) -> str:
        """Update until a limit, early stopping or a stop request; returns the reason."""
        started, pairs_before, seconds_before = time.monotonic(), self.pairs, self.seconds
        with self._progress_bar() as bar:
            while not (reason := self._limit(started, stop, should_stop)):
                tick = time.monotonic()
                loss = self.step()
                self.seconds += time.monotonic() - tick  # training time, validation excluded
                if self.updates % 10 == 0:
                    speed = (self.pairs - pairs_before) / (self.seconds - seconds_before)
                    bar.set_postfix(loss=f"{loss:.2f}", pairs_s=f"{speed:.0f}", refresh=False)
                bar.update(1)
                if self.updates % self.config.valid_every == 0:
                    self.validate()
        return reason

    def _limit(self, started: float, stop: threading.Event, should_stop) -> str | None:
        if stop.is_set() or (should_stop is not None and should_stop(self.updates)):
            return "interrupted"
        if self.bad_validations >= self.config.patience:
            return "early_stopping"
        if self.config.max_updates is not None and self.updates >= self.config.max_updates:
            return "max_updates"
        if self.config.max_time is not None and time.monotonic() - started >= self.config.max_time:
            return "max_time"
        return None

    def _progress_bar(self) -> tqdm:
        return tqdm(total=self.config.max_updates, initial=self.updates, unit="upd", dynamic_ncols=True,
                    disable=self.config.quiet or not sys.stderr.isatty(), desc="training")


def _load_state(config: TrainConfig) -> dict | None:
    """The saved training state to resume from, following ``config.resume``; None to start afresh."""
    path = os.path.join(config.output_dir, STATE)
    if config.resume == "never" or not os.path.exists(path):
        if config.resume == "require":
            raise FileNotFoundError(f"{path}: no training state to resume from")
        return None
    state = torch.load(path, map_location="cpu", weights_only=True)
    if state.get("version") != STATE_VERSION:
        raise ValueError(f"{path}: unsupported training state version {state.get('version')}")
    saved, current = state["config"], config.to_dict()
    changed = sorted(k for k in current if k not in _FREE_ON_RESUME and saved.get(k) != current[k])
    if changed:
        raise ValueError(f"{path}: cannot resume with different {', '.join(changed)} "
                         f"(use --restart to start over)")
    log.info("resuming from %s at update %d (epoch %d)", path, state["updates"], state["epoch"])
    return state


def _load_data(config: TrainConfig, resumed: bool) -> TrainingData:
    """Read the pairs with the vocabularies of the run (saved in the output directory)."""
    vocab_dir = os.path.join(config.output_dir, VOCAB_DIR) if resumed else config.vocab_dir
    vocabularies, tokenizers = load_vocab_dir(vocab_dir) if vocab_dir else (None, None)
    options = dict(direction=config.direction, vocabularies=vocabularies,
                   vocab_size=config.vocab_size or preset_shortlist(config.preset), max_len=config.max_len,
                   valid_share=config.valid_share, valid_size=config.valid_size, encoding=config.encoding)
    quiet = config.quiet or not sys.stderr.isatty()
    if tokenizers:
        options["tokenizers"] = tokenizers  # word shortlists or SentencePiece models, as the directory holds
    options["progress"] = lambda items: tqdm(items, desc="reading", unit="pairs", unit_scale=True,
                                             mininterval=1.0, disable=quiet)
    data = load_table(config.table, **options) if config.table else load_corpus(*config.corpus, **options)
    save_vocab_dir(os.path.join(config.output_dir, VOCAB_DIR), data.text)
    return data


def train(config: TrainConfig, should_stop=None) -> TrainResult:
    """Train (or resume) a model into ``config.output_dir``; see the module docstring.

    ``should_stop(updates)`` is asked before every update; True stops the run as an interrupt
    would. Raises ValueError, FileNotFoundError or PhraseTableError for bad input.
    """
    if config.threads:
        torch.set_num_threads(config.threads)
    os.makedirs(config.output_dir, exist_ok=True)
    state = _load_state(config)
    if state is None:
        torch.manual_seed(config.seed)
        np.random.seed(config.seed)
        random.seed(config.seed)
    loading = time.monotonic()
    data = _load_data(config, state is not None)
    log.info("%s: %d training and %d validation pairs (%d skipped), %.1f MB in memory, read in %.0f s; "
             "shortlists cover %.1f%% / %.1f%% of the words", data.description, len(data.train),
             len(data.valid), data.dropped, (data.train.nbytes + data.valid.nbytes) / 1e6,
             time.monotonic() - loading, 100 * data.coverage[0], 100 * data.coverage[1])
    run = _Run(config, data, state)
    log.info("model: %s preset, %s encoder, %d parameters, %s, device %s%s, %d threads; loss: %s", config.preset,
             run.model.config.encoder, run.model.num_parameters(), config.direction, run.device,
             " (bf16 autocast)" if config.bf16 else "",
             torch.get_num_threads(), LOSS_DEFINITION)
    log.info("unigram baseline: validation perplexity %.1f per token; %.2f output tokens per word",
             run.unigram_ppl, data.valid.target_tokens() / max(data.valid_words + len(data.valid), 1))
    run.log.write("start", resumed=run.resumed, update=run.updates, parameters=run.model.num_parameters(),
                  loss=LOSS_DEFINITION, data=data.description, train_pairs=len(data.train),
                  valid_pairs=len(data.valid), unigram_ppl=run.unigram_ppl, config=config.to_dict())
    return _finish(run, should_stop)


def _finish(run: _Run, should_stop) -> TrainResult:
    """Run the loop, then leave consistent last.pt/best.pt/state files whatever stopped it."""
    stop, pairs_before, seconds_before = threading.Event(), run.pairs, run.seconds
    with _stop_on_signals(stop):
        reason = run.run(stop, should_stop)
    if run.last_valid_update != run.updates:
        if reason in ("max_updates", "max_time"):
            run.validate()  # so that best.pt and the log reflect the end of the run
        else:
            run.save()  # interrupted: the state as it is, to resume exactly
            if not os.path.exists(run.path(BEST)):  # stopped before the first validation: still a usable model
                save_trained_model(run.path(BEST), run.model, run.data.text, run.config.direction, run.info(None))
    speed = (run.pairs - pairs_before) / max(run.seconds - seconds_before, 1e-9)
    run.log.write("end", reason=reason, update=run.updates, pairs_per_second=speed)
    log.info("stopped (%s) after %d updates, epoch %d: best validation NLL %.3f per pair, perplexity %.2f "
             "per token (unigram %.2f), %.2f per word; %.0f pairs/s", reason, run.updates, run.shuffler.epoch,
             run.best_nll, run.best_ppl, run.unigram_ppl, run.best_word_ppl, speed)
    return TrainResult(run.updates, run.shuffler.epoch, reason, run.best_nll, run.best_ppl, run.unigram_ppl,
                       run.model.num_parameters(), len(run.data.train), len(run.data.valid), speed,
                       run.resumed, run.path(BEST), run.path(LAST), run.best_word_ppl)
