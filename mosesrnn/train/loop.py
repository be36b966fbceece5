"""One training loop for every kind of model: the RNN Encoder-Decoder and the CSLM alike.

The loop knows nothing of the model. A :class:`Task` gives it the network, its optimizer, the
loss of a minibatch of examples (indices into the task's training data) and a validation; the
loop draws the minibatches (a seeded permutation per epoch), updates, validates every
``valid_every`` updates, keeps ``best.pt`` (lowest validation NLL) and ``last.pt`` through the
task, and stops at ``max_updates``, ``max_time``, after ``patience`` validations without
improvement, or on SIGINT/SIGTERM (at the end of the update in progress; a second signal stops at
once).

A run is resumable exactly: ``state.pt`` holds the optimizer state, the RNG states, the counters
and the data position (epoch, index into that epoch's permutation), so N updates in one go and
N/2 + resume + N/2 give the same weights. ``train.jsonl`` gets one record per validation and
``loss.png`` is redrawn from it.
"""
from __future__ import annotations

import json
import logging
import math
import os
import random
import signal
import threading
import time
from contextlib import contextmanager
from dataclasses import asdict, dataclass, field
from typing import Callable, Protocol

import numpy as np
import torch

from ..errors import MosesRNNError
from ..io.model_store import read_state_file, save_file
from ..io.signals import record_signal, signals_deferred
from ..runtime.devices import resolve_device
from ..runtime.progress import Progress
from . import distributed
from .distributed import Ranks, any_rank, broadcast, same_data
from .log import TrainLog
from .shuffler import Shuffler

__all__ = ["RunConfig", "begin_run", "adam", "Task", "Validation", "LoopSettings", "LoopResult", "Loop", "STATE",
           "BEST", "LAST", "load_state", "seed_everything"]

log = logging.getLogger("mosesrnn")

BEST, LAST, STATE = "best.pt", "last.pt", "state.pt"
STATE_VERSION = 1


@dataclass(frozen=True)
class Validation:
    """A validation's result: ``nll`` is what early stopping and ``best.pt`` minimise; ``record`` goes
    into ``train.jsonl`` (and the model file's info); ``summary`` into the log line."""

    nll: float
    record: dict
    summary: str


class Task(Protocol):
    """What the loop needs from one kind of model."""

    #: the network, on its device, in training mode
    model: torch.nn.Module
    #: number of training examples; minibatches are index arrays into them
    train_size: int
    #: what an example is, for logs and records: "pairs", "n-grams"
    unit: str
    #: how the training loss reads in the log line: "NLL per pair"
    loss_name: str
    #: the keys of its validations' records (None in a model file saved before the first validation)
    validation_keys: tuple[str, ...]
    #: what ``loss`` calls: the model, or the loop's DistributedDataParallel around it (several processes)
    network: torch.nn.Module
    #: where the model runs
    device: torch.device

    def data_fingerprint(self) -> str:
        """A short description of the training data; the ranks of a multi-process run must agree on it."""

    def optimizer(self) -> torch.optim.Optimizer:
        """A fresh optimizer over the model's parameters."""

    def loss(self, index: np.ndarray) -> torch.Tensor:
        """The scalar to minimise on the training examples ``index``."""

    def validate(self) -> Validation:
        """Score the held-out data."""

    def info(self) -> dict:
        """Facts stored in the model files besides the loop's (preset, data, ...)."""

    def save_model(self, path: str, info: dict) -> None:
        """Write a self-contained model file (atomically)."""


@dataclass(frozen=True)
class LoopSettings:
    """The options every kind of model trains with; see `mosesrnn train --help`."""

    batch_size: int = 64
    valid_every: int = 1000
    patience: int = 10
    max_updates: int | None = None
    max_time: float | None = None  # seconds of training in this invocation
    clip_norm: float | None = None
    #: learning-rate schedule: linear warm-up over ``warmup`` updates, then ``decay`` ("none", "linear" or
    #: "cosine") from the optimizer's rate down to ``min_lr`` times it at the run's end: ``max_updates``
    #: if given, else the end of this invocation's ``max_time`` (on the clock that stops it, validations
    #: included; a time-based run is not bit-for-bit reproducible, and a resumed one decays anew)
    warmup: int = 0
    decay: str = "none"
    min_lr: float = 0.0
    #: length bucketing: sort the examples by the task's ``lengths`` inside windows of this many
    #: minibatches, then shuffle the minibatches (0: plain random minibatches)
    bucket_window: int = 0
    seed: int = 1
    quiet: bool = False
    plot_unit: str = "pair"  # the loss curve's y axis: NLL per <plot_unit>
    ranks: Ranks = field(default_factory=Ranks)  # the processes of a torchrun run (one: rank 0 of 1)


@dataclass
class LoopResult:
    """What a run did: updates, the stop reason (max_updates | max_time | early_stopping | interrupted),
    the best validation, speed, and whether it continued a saved run."""

    updates: int
    epoch: int
    stop_reason: str
    best: Validation | None
    examples_per_second: float
    resumed: bool


class RunConfig:
    """What the configs of training runs share (each is a dataclass): their plain form."""

    def to_dict(self) -> dict:
        """Plain, JSON-compatible values (stored in the state and the log)."""
        return json.loads(json.dumps(asdict(self)))


def begin_run(config, free: set[str]) -> tuple[Ranks, str, dict | None]:
    """Start a training run of ``config`` (a :class:`RunConfig` with ``output_dir``, ``resume``, ``device``
    and ``seed``): this process' rank and device (joining a torchrun run), the output folder, and the saved
    state to continue (None: a fresh run, seeded). Returns ``(ranks, device, state)``."""
    ranks = distributed.ranks_from_environment()
    device = distributed.start(ranks, resolve_device(config.device))
    os.makedirs(config.output_dir, exist_ok=True)
    state = load_state(config.output_dir, config.resume, config.to_dict(), free)
    if state is None:
        seed_everything(config.seed)
    return ranks, device, state


def adam(parameters, rate: float) -> torch.optim.Optimizer:
    """Adam with its fused kernel where torch has one for the parameters' device (CPU since torch 2.4:
    the same update, fewer passes over the weights), else the plain one."""
    parameters = list(parameters)
    try:
        return torch.optim.Adam(parameters, lr=rate, fused=True)
    except (RuntimeError, TypeError):
        return torch.optim.Adam(parameters, lr=rate)


def seed_everything(seed: int) -> None:
    """Seed torch, numpy and Python's generator (a fresh run; a resumed one restores them)."""
    torch.manual_seed(seed)
    np.random.seed(seed)
    random.seed(seed)


def load_state(output_dir: str, resume: str, config: dict, free: set[str]) -> dict | None:
    """The saved state of ``output_dir`` to continue, following ``resume`` (auto | require | never).

    Raises MosesRNNError when the saved run's config differs from ``config`` outside ``free``, and
    FileNotFoundError when ``resume`` is "require" and there is no state.
    """
    path = os.path.join(output_dir, STATE)
    if resume == "never" or not os.path.exists(path):
        if resume == "require":
            raise FileNotFoundError(f"{path}: no training state to resume from")
        return None
    state = read_state_file(path, STATE_VERSION)
    saved = state.get("config", {})
    changed = sorted(k for k in config if k not in free and saved.get(k) != config[k])
    if changed:
        raise MosesRNNError(f"{path}: cannot resume with different {', '.join(changed)} (use --restart to start over)")
    log.info("resuming from %s at update %d (epoch %d)", path, state["updates"], state["epoch"])
    return state


class Loop:
    """One run of a task: counters, minibatches, validation, files (see the module docstring)."""

    def __init__(self, task: Task, settings: LoopSettings, output_dir: str, config: dict, state: dict | None):
        self.task, self.settings, self.config, self.ranks = task, settings, config, settings.ranks
        self.output_dir = output_dir
        self.path = lambda name: os.path.join(output_dir, name)
        self.resumed = state is not None
        state = state or {}
        if self.ranks.world > 1:
            same_data(self.ranks, task.data_fingerprint())
            from torch.nn.parallel import DistributedDataParallel
            task.network = DistributedDataParallel(task.model)
        self.optimizer = task.optimizer()
        self.base_rates = [group["lr"] for group in self.optimizer.param_groups]
        self.started = None  # when this invocation's updates began (the time-based decay's clock)
        if state:
            self.optimizer.load_state_dict(state["optimizer"])
            _set_rng_state(state["rng"])
        self.updates, self.examples = state.get("updates", 0), state.get("pairs", 0)
        self.seconds = state.get("seconds", 0.0)
        self.best: Validation | None = _validation(state.get("best"))
        self.last: Validation | None = _validation(state.get("last"))
        self.bad_validations = state.get("bad_validations", 0)
        self.loss_sum, self.loss_count = state.get("loss_sum", 0.0), state.get("loss_count", 0)
        self.last_valid_update = state.get("last_valid_update", -1)
        # one global minibatch of world x batch_size examples; each rank trains on its share
        lengths = getattr(task, "lengths", None) if settings.bucket_window else None
        self.shuffler = Shuffler(task.train_size, settings.batch_size * self.ranks.world, settings.seed,
                                 state.get("epoch", 0), state.get("position", 0), lengths=lengths,
                                 window=settings.bucket_window)
        self.log = TrainLog(self.path("train.jsonl"), self.path("loss.png"), fresh=not self.resumed,
                            unit=settings.plot_unit, writes=self.ranks.main)

    # -- one update and one validation ---------------------------------------------------------------

    def step(self) -> float:
        """One update on the next minibatch; returns its loss."""
        index = self.shuffler.next_batch()
        loss = self.task.loss(self.ranks.share(index))
        self.optimizer.zero_grad(set_to_none=True)
        loss.backward()  # DistributedDataParallel averages the gradients of the ranks here
        if self.settings.clip_norm:
            torch.nn.utils.clip_grad_norm_(self.task.model.parameters(), self.settings.clip_norm)
        factor = self.rate_factor()
        for group, rate in zip(self.optimizer.param_groups, self.base_rates):
            group["lr"] = rate * factor
        self.optimizer.step()
        value = float(loss.detach()) if self.ranks.world == 1 else _mean_over_ranks(loss.detach())
        if not math.isfinite(value):
            advice = ("" if self.settings.clip_norm else "--clip-norm 1 or ") + "a lower --learning-rate"
            raise MosesRNNError(f"the loss became {value} at update {self.updates + 1}: try {advice}")
        self.updates, self.examples = self.updates + 1, self.examples + len(index)
        self.loss_sum, self.loss_count = self.loss_sum + value, self.loss_count + 1
        return value

    def rate_factor(self) -> float:
        """The schedule's multiplier of the learning rate for the coming update (see :class:`LoopSettings`)."""
        settings = self.settings
        factor = min(1.0, (self.updates + 1) / settings.warmup) if settings.warmup else 1.0
        if settings.decay == "none":
            return factor
        if settings.max_updates is not None:
            progress = self.updates / settings.max_updates
        elif settings.max_time is not None and self.started is not None:
            # the clock --max-time stops on: this invocation's, so a resumed run decays over its own --max-time
            progress = (time.monotonic() - self.started) / settings.max_time
        else:
            return factor  # no end to decay towards
        progress = min(max(progress, 0.0), 1.0)
        shape = 1 - progress if settings.decay == "linear" else 0.5 * (1 + math.cos(math.pi * progress))
        return factor * (settings.min_lr + (1 - settings.min_lr) * shape)

    def info(self, validation: Validation | None) -> dict:
        """Training facts stored in the model files: the loop's, the validation's and the task's."""
        loop = {"updates": self.updates, "epoch": self.shuffler.epoch, "pairs_seen": self.examples,
                "batch_size": self.settings.batch_size, "seed": self.settings.seed,
                "training_seconds": round(self.seconds, 1)}
        valid = validation.record if validation else dict.fromkeys(self.task.validation_keys)
        return {**self.task.info(), **loop, **valid}

    def validate(self) -> None:
        """Validate, log, save last.pt (and best.pt if better) and the state."""
        started = time.monotonic()
        validation = broadcast(self.ranks, self.task.validate() if self.ranks.main else None)
        improved = self.best is None or validation.nll < self.best.nll
        if improved:
            self.best, self.bad_validations = validation, 0
            if self.ranks.main:
                self.task.save_model(self.path(BEST), self.info(validation))
        else:
            self.bad_validations += 1
        train_loss = self.loss_sum / max(self.loss_count, 1)
        self.loss_sum, self.loss_count = 0.0, 0
        self.last, self.last_valid_update = validation, self.updates
        self.log.validation(update=self.updates, epoch=self.shuffler.epoch, pairs=self.examples,
                            train_nll=train_loss, **validation.record, best=improved,
                            seconds=round(self.seconds, 1), valid_seconds=round(time.monotonic() - started, 1))
        if self.ranks.main:
            log.info("update %d (epoch %d, %.0f s): train %s %.3f; %s%s", self.updates, self.shuffler.epoch,
                     self.seconds, self.task.loss_name, train_loss, validation.summary,
                     ", best so far" if improved else "")
        self.save()

    @signals_deferred()  # a second Ctrl-C waits until last.pt and its state are both whole
    def save(self) -> None:
        """Write last.pt, then the training state that matches it (rank 0 alone)."""
        if not self.ranks.main:
            return
        self.task.save_model(self.path(LAST), self.info(self.last))
        save_file(self.path(STATE), {
            "version": STATE_VERSION, "config": self.config, "optimizer": self.optimizer.state_dict(),
            "rng": _rng_state(), "updates": self.updates, "pairs": self.examples, "seconds": self.seconds,
            "epoch": self.shuffler.epoch, "position": self.shuffler.position,
            "best": _plain(self.best), "last": _plain(self.last), "bad_validations": self.bad_validations,
            "loss_sum": self.loss_sum, "loss_count": self.loss_count,
            "last_valid_update": self.last_valid_update})

    # -- the run -------------------------------------------------------------------------------------

    def run(self, should_stop: Callable[[int], bool] | None = None) -> LoopResult:
        """Update until a limit, early stopping or a stop request, then leave consistent files.

        ``should_stop(updates)`` is asked before every update; True stops as an interrupt would.
        """
        stop, examples_before, seconds_before = threading.Event(), self.examples, self.seconds
        with _stop_on_signals(stop), distributed.peers_alive(self.ranks, self.output_dir):
            reason = self._updates(stop, should_stop)
        if self.last_valid_update != self.updates:
            if reason in ("max_updates", "max_time"):
                self.validate()  # so that best.pt and the log reflect the end of the run
            else:
                self.save()  # interrupted: the state as it is, to resume exactly
                if self.ranks.main and not os.path.exists(self.path(BEST)):  # stopped before a validation:
                    self.task.save_model(self.path(BEST), self.info(None))  # still a usable model
        speed = (self.examples - examples_before) / max(self.seconds - seconds_before, 1e-9)
        self.log.write("end", reason=reason, update=self.updates, pairs_per_second=speed)
        return LoopResult(self.updates, self.shuffler.epoch, reason, self.best, speed, self.resumed)

    def _updates(self, stop: threading.Event, should_stop) -> str:
        started, examples_before, seconds_before = time.monotonic(), self.examples, self.seconds
        self.started = started
        with self._progress_bar() as bar:
            while not (reason := self._limit(started, stop, should_stop)):
                tick = time.monotonic()
                loss = self.step()
                self.seconds += time.monotonic() - tick  # training time, validation excluded
                postfix = None
                if self.updates % 10 == 0:
                    speed = (self.examples - examples_before) / max(self.seconds - seconds_before, 1e-9)
                    postfix = f"loss {loss:.2f}, {speed:.0f} {self.task.unit}/s"
                bar.update(1, postfix)
                if self.updates % self.settings.valid_every == 0:
                    self.validate()
        return reason

    def _limit(self, started: float, stop: threading.Event, should_stop) -> str | None:
        settings = self.settings
        interrupted = stop.is_set() or (should_stop is not None and should_stop(self.updates))
        if any_rank(self.ranks, interrupted, self.task.device):  # a signal reaches each rank at its own time
            return "interrupted"
        if settings.max_time is not None and self.ranks.world > 1:  # rank 0's clock decides for all
            return broadcast(self.ranks, self._limit_alone(started))
        return self._limit_alone(started)

    def _limit_alone(self, started: float) -> str | None:
        settings = self.settings
        if self.bad_validations >= settings.patience:
            return "early_stopping"
        if settings.max_updates is not None and self.updates >= settings.max_updates:
            return "max_updates"
        if settings.max_time is not None and time.monotonic() - started >= settings.max_time:
            return "max_time"
        return None

    def _progress_bar(self) -> Progress:
        return Progress("training", quiet=self.settings.quiet or not self.ranks.main, unit="updates",
                        total=self.settings.max_updates, initial=self.updates)


def _mean_over_ranks(value: torch.Tensor) -> float:
    import torch.distributed as dist
    dist.all_reduce(value)
    return float(value) / dist.get_world_size()


def _plain(validation: Validation | None) -> list | None:
    return None if validation is None else [validation.nll, validation.record, validation.summary]


def _validation(saved: list | None) -> Validation | None:
    return None if saved is None else Validation(*saved)


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


@contextmanager
def _stop_on_signals(flag: threading.Event):
    """Set ``flag`` on SIGINT/SIGTERM (a second signal interrupts at once); main thread only."""
    if threading.current_thread() is not threading.main_thread():
        yield
        return

    def handler(signum, frame):
        record_signal(signum)
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

