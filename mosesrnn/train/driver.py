"""The one training driver of every model family: a run from its config to its best model file.

A family gives what is its own — how it reads its data (with the vocabularies of a run being
continued), its :class:`~mosesrnn.train.loop.Task`, the recipe it trains with and the lines that
describe the run — and the driver does the rest once: torch's threads (the config's, for the run alone),
rank and device, the saved state to continue (:func:`~mosesrnn.train.loop.begin_run`), the loop's settings,
the log's start record, the run, and the closing line.
"""
from __future__ import annotations

import logging
import os
import time
from dataclasses import dataclass, fields
from typing import Any, Protocol

import torch

from ..errors import MosesRNNError
from ..io.model_store import model_kind
from ..models import MODEL_KINDS
from ..runtime.cpu import cpu_threads
from . import distributed
from .loop import BEST, LAST, Loop, LoopResult, LoopSettings, Task, begin_run

__all__ = ["Family", "Outcome", "drive", "check_family", "config_from_options"]

log = logging.getLogger("mosesrnn")


class Family(Protocol):
    """What a model family gives the driver (see :mod:`mosesrnn.encdec.task`, :mod:`mosesrnn.cslm.task`)."""

    #: options that may differ between a run and its continuation (the output folder, limits, device...)
    free_on_resume: frozenset[str]
    #: the loss curve's unit (NLL per pair, per token)
    plot_unit: str
    #: the kind of model file it writes (:data:`~mosesrnn.models.MODEL_KINDS`)
    kind: str

    def check_resume(self, config) -> None:
        """Raise MosesRNNError when the options contradict the run saved in the output folder."""

    def load_data(self, config, resumed: bool, writes: bool) -> Any:
        """Read the run's data; ``resumed``: with the vocabularies of the saved run; ``writes``: this
        process saves what the run's folder keeps of them."""

    def build_task(self, config, data, resumed: bool, device: str) -> Task:
        """The task of the loop; ``resumed``: its network continues the saved ``last.pt``."""

    def recipe(self, config) -> dict:
        """How it trains, resolved (the options given, else the preset's): logged and recorded."""

    def describe(self, config, task, data) -> str:
        """One log line on the model, the device and the recipe."""


@dataclass
class Outcome:
    """A finished (or stopped) run: the loop's result, the task (its model and baseline) and the loop's files."""

    result: LoopResult
    task: Task
    data: Any
    loop: Loop

    @property
    def best(self) -> dict | None:
        """The best validation's record (None before the first validation)."""
        return self.result.best.record if self.result.best else None


def drive(family: Family, config, should_stop=None) -> Outcome:
    """Train (or continue) ``config``'s run of ``family`` into ``config.output_dir``.

    ``config`` is the family's :class:`~mosesrnn.train.loop.RunConfig`; its recipe options are read
    through ``config.setting(name)``. ``should_stop(updates)`` is asked before every update.
    """
    with cpu_threads(config.threads):  # the run's, and the caller's again after it
        return _run(family, config, should_stop)


def _run(family: Family, config, should_stop) -> Outcome:
    check_family(config.output_dir, family.kind)
    ranks, device, state = begin_run(config, family.free_on_resume)
    resumed = state is not None
    if resumed:
        family.check_resume(config)
    loading = time.monotonic()
    data = family.load_data(config, resumed, ranks.main)
    log.info("data read in %.0f s", time.monotonic() - loading)
    task = family.build_task(config, data, resumed, device)
    recipe = family.recipe(config)
    settings = LoopSettings(batch_size=recipe.get("batch_size", getattr(config, "batch_size", 64)),
                            valid_every=config.valid_every, patience=config.patience,
                            max_updates=config.max_updates, max_time=config.max_time, clip_norm=config.clip_norm,
                            warmup=recipe["warmup"], decay=recipe["lr_decay"], min_lr=config.min_lr,
                            bucket_window=recipe.get("bucket_window", 0), seed=config.seed, quiet=config.quiet,
                            plot_unit=family.plot_unit, ranks=ranks)
    loop = Loop(task, settings, config.output_dir, config.to_dict(), state)
    log.info("%s; %d threads", family.describe(config, task, data), torch.get_num_threads())
    parameters = sum(p.numel() for p in task.network.parameters())
    loop.log.write("start", resumed=loop.resumed, update=loop.updates, parameters=parameters,
                   loss=task.loss_definition, data=data.description, unigram_ppl=task.unigram_ppl,
                   config=config.to_dict(), recipe=recipe)
    result = loop.run(should_stop)
    distributed.finish(ranks, task.network)
    log.info("stopped (%s) after %d updates: %s; %.0f %s/s", result.stop_reason, result.updates,
             result.best.summary if result.best else "not validated yet", result.examples_per_second, task.unit)
    return Outcome(result, task, data, loop)


def check_family(output_dir: str, kind: str) -> None:
    """Raise MosesRNNError when ``output_dir`` holds the model of another family than ``kind``: neither continuing
    it nor starting over (``--restart``, which would replace its best.pt) is what was meant."""
    for name in (BEST, LAST):
        path = os.path.join(output_dir, name)
        if not os.path.isfile(path):
            continue
        try:
            found = model_kind(path)
        except ValueError:  # not a model file at all: the run's own reading of it says so
            continue
        if found != kind:
            raise MosesRNNError(f"{output_dir} holds {MODEL_KINDS[found]}, in {name}: this run trains "
                                f"{MODEL_KINDS[kind].split(' (')[0]}, which would replace it: give it another "
                                f"output folder")


def config_from_options(cls, options: dict, **derived):
    """The run config ``cls`` (a dataclass) from a command's options: each option of a field's name is
    taken as given, ``derived`` values (converted by the command) win, and ``resume`` None is "auto".

    One call instead of a constructor call that copies every option by hand."""
    names = {f.name for f in fields(cls)}
    values = {name: value for name, value in options.items() if name in names}
    values.update(derived)
    if "resume" in names and values.get("resume") is None:
        values["resume"] = "auto"
    return cls(**values)
