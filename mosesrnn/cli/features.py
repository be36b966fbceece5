"""The options that choose and build feature columns, shared by ``score`` and ``nbest``."""
from __future__ import annotations

import functools
from dataclasses import dataclass, fields

import click

from ..direction import DIRECTIONS
from ..features.registry import FEATURES, FeatureOptions, default_features
from ..features.selection import feature_names
from ..features.unk import UNK_SIDES
from .common import DEVICE, DTYPE, THREADS

__all__ = ["FeatureRequest", "feature_options"]


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
    lm_path: str | None = None  # n-best lists only

    def __post_init__(self):
        try:  # a bad --features is a usage error, found before any file is opened
            feature_names(self.features, FeatureOptions(model=self.model_path, reverse_model=self.reverse_model_path,
                                                        lm=self.lm_path))
        except ValueError as error:
            raise click.BadParameter(str(error), param_hint="--features") from None


    def keywords(self) -> dict:
        """The options as keyword arguments of :func:`mosesrnn.score_table` and :func:`mosesrnn.score_nbest`
        (torch's threads are set here: the library leaves them to its caller)."""
        if self.threads:
            import torch  # here, so that `mosesrnn --help` and the other commands start quickly
            torch.set_num_threads(self.threads)
        keywords = dict(features=self.features, model=self.model_path, reverse_model=self.reverse_model_path,
                        vocab=self.vocab_dir, unk_side=self.unk_side, direction=self.direction,
                        length_normalize=self.length_normalize, device=self.device, dtype=self.dtype,
                        batch_tokens=self.batch_tokens)
        return {**keywords, "lm": self.lm_path} if self.lm_path else keywords


def _options(encoding: str, sentences: bool) -> list:
    lm = [click.option("--lm", "lm_path", type=click.Path(dir_okay=False, exists=True),
                       help="A CSLM file from `mosesrnn lm train`, for the cslm feature (the hypothesis' "
                            "log-probability under a neural target language model).")] if sentences else []
    names = [name for name, spec in FEATURES.items() if spec.tables or sentences]
    return lm + [
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
                     f"--reverse-model too, else {','.join(default_features(False))}"
                     + (f"; {','.join(default_features(True, False, True))} with -m and --lm" if sentences else "")
                     + "]. " + "; ".join(f"{name}: {FEATURES[name].summary}" for name in names) + f". {encoding}"),
        click.option("--unk-side", type=click.Choice(UNK_SIDES), default="both", show_default=True,
                     help="Which words the unk feature counts."),
        click.option("--direction", type=click.Choice(DIRECTIONS),
                     help="Score p(target | source) (source-to-target) or p(source | target); must match the "
                          "model [default: the model's]."),
        click.option("--length-normalize", is_flag=True,
                     help="Divide log p by the predicted tokens (words + EOS); off, as in the paper."),
        DEVICE,
        DTYPE,
        click.option("--batch-tokens", default=4096, show_default=True, type=click.IntRange(1),
                     help="Target tokens (rows x longest length) per decoder batch."),
        THREADS,
    ]


def feature_options(encoding: str, sentences: bool = False):
    """Add the feature options to a click command, which then receives them as ``request: FeatureRequest``.

    ``encoding`` tells in ``--help`` how the values are written (e^v in a phrase table, raw in an n-best list);
    ``sentences``: the command scores whole sentences (n-best lists), so the sentence features (--lm) join.
    """
    names = [f.name for f in fields(FeatureRequest) if sentences or f.name != "lm_path"]

    def decorate(command):
        @functools.wraps(command)
        def collect(*args, **kwargs):
            request = FeatureRequest(**{name: kwargs.pop(name) for name in names})
            return command(*args, request=request, **kwargs)

        for option in reversed(_options(encoding, sentences)):
            collect = option(collect)
        return collect

    return decorate
