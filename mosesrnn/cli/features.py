"""The options that choose and build feature columns, shared by ``score`` and ``nbest``."""
from __future__ import annotations

import functools
import logging
from dataclasses import dataclass, fields

import click

from ..devices import resolve_device
from ..direction import DIRECTIONS
from ..features.registry import FEATURES, Feature, FeatureOptions, build_features, default_features, parse_feature_names
from ..features.unk import UNK_SIDES
from .common import DEVICE, THREADS

__all__ = ["FeatureRequest", "feature_options"]

log = logging.getLogger("mosesrnn")


@dataclass(frozen=True)
class FeatureRequest:
    """What the command line asked for: which features, and how to compute them."""

    model_path: str | None
    reverse_model_path: str | None
    vocab_dir: str | None
    features: str | None
    unk_side: str
    direction: str | None
    length_normalize: bool
    device: str
    dtype: str
    batch_tokens: int
    threads: int | None

    def __post_init__(self):
        self.names()  # a bad --features is a usage error, found before any file is opened

    def names(self) -> tuple[str, ...]:
        """The features asked for, or the defaults; raises click.BadParameter for a bad ``--features``."""
        try:
            return (parse_feature_names(self.features) if self.features
                    else default_features(self.model_path is not None, self.reverse_model_path is not None))
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--features") from None

    def inputs(self) -> list[str]:
        """The files and folders the features read (for the command's :class:`~mosesrnn.job.Job`)."""
        return [path for path in (self.model_path, self.reverse_model_path, self.vocab_dir) if path]

    def build(self) -> tuple[list[Feature], FeatureOptions]:
        """The feature objects, in the order asked, and the options they were built from.

        Raises ValueError for what the library refuses.
        """
        names = self.names()
        if self.threads:
            import torch  # here, so that `mosesrnn --help` and the other commands start quickly
            torch.set_num_threads(self.threads)
        options = FeatureOptions(model=self.model_path, reverse_model=self.reverse_model_path,
                                 vocab=self.vocab_dir, unk_side=self.unk_side,
                                 direction=self.direction, device=resolve_device(self.device), dtype=self.dtype,
                                 batch_tokens=self.batch_tokens, length_normalize=self.length_normalize)
        if not self.features and self.model_path and self.vocab_dir is None:
            names = _subword_defaults(names, options)
        return build_features(names, options), options


def _subword_defaults(names: tuple[str, ...], options: FeatureOptions) -> tuple[str, ...]:
    """The default columns less ``unk`` for a subword model without word shortlists (it has no UNK)."""
    from ..features.unk import has_word_shortlists

    if "unk" not in names or has_word_shortlists(options.trained_model("unk")):
        return names
    log.info("subword model: no unk column (no word shortlists; give --vocab DIR to count words outside them)")
    return tuple(name for name in names if name != "unk")


def _options(encoding: str) -> list:
    return [
        click.option("-m", "--model", "model_path", type=click.Path(dir_okay=False, exists=True),
                     help="A model file from `mosesrnn train` (for the rnn feature; its shortlists serve unk)."),
        click.option("--reverse-model", "reverse_model_path", type=click.Path(dir_okay=False, exists=True),
                     help="A second model, trained in the other direction (`train --direction "
                          "target-to-source`), for the rnn-rev feature: both directions in one pass."),
        click.option("--vocab", "vocab_dir", type=click.Path(file_okay=False, exists=True),
                     help="Directory with the word shortlists from `mosesrnn vocab` (for unk without -m, or "
                          "with a subword model, which has none)."),
        click.option("--features", help="Comma-separated features to add, in this order [default: "
                     f"{','.join(default_features(True))} with -m, {','.join(default_features(True, True))} with "
                     f"--reverse-model too, else {','.join(default_features(False))}]. "
                     + "; ".join(f"{name}: {spec.summary}" for name, spec in FEATURES.items()) + f". {encoding}"),
        click.option("--unk-side", type=click.Choice(UNK_SIDES), default="both", show_default=True,
                     help="Which words the unk feature counts."),
        click.option("--direction", type=click.Choice(DIRECTIONS),
                     help="Score p(target | source) (source-to-target) or p(source | target); must match the "
                          "model [default: the model's]."),
        click.option("--length-normalize", is_flag=True,
                     help="Divide log p by the predicted tokens (words + EOS); off, as in the paper."),
        DEVICE,
        click.option("--dtype", type=click.Choice(["fp32", "bf16"]), default="fp32", show_default=True,
                     help="bf16 autocast for the matmuls (fast on GPUs and CPUs with AMX; slow elsewhere)."),
        click.option("--batch-tokens", default=4096, show_default=True, type=click.IntRange(1),
                     help="Target tokens (rows x longest length) per decoder batch."),
        THREADS,
    ]


def feature_options(encoding: str):
    """Add the feature options to a click command, which then receives them as ``request: FeatureRequest``.

    ``encoding`` tells in ``--help`` how the values are written (e^v in a phrase table, raw in an n-best list).
    """
    names = [f.name for f in fields(FeatureRequest)]

    def decorate(command):
        @functools.wraps(command)
        def collect(*args, **kwargs):
            request = FeatureRequest(**{name: kwargs.pop(name) for name in names})
            return command(*args, request=request, **kwargs)

        for option in reversed(_options(encoding)):
            collect = option(collect)
        return collect

    return decorate
