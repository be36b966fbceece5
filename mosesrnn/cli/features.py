"""The options that choose and build feature columns, shared by ``score`` and ``nbest``: they become one
:class:`~mosesrnn.features.options.FeatureOptions`, which the command hands to the API."""
from __future__ import annotations

import functools
from dataclasses import fields

import click

from ..encdec.direction import DIRECTIONS
from ..errors import MosesRNNError
from ..features.options import NORMALIZERS, UNK_SIDES, FeatureOptions
from ..features.registry import FEATURES, default_features, parse_feature_names
from ..models import MODEL_OPTIONS, kind_of
from .common import DEVICE, DTYPE, THREADS
from .paths import INPUT_FOLDER, model_of

__all__ = ["feature_options", "model_options", "with_options", "check_feature_names"]


def check_feature_names(ctx, param, value):
    """``--features rnn,unk`` checked before any file is opened (a usage error)."""
    try:
        return None if value is None else parse_feature_names(value)
    except MosesRNNError as error:
        raise click.BadParameter(str(error)) from None


def _labels(ctx, param, value):
    """``--label rnn=RNN1`` (repeatable) as ``(feature, name)`` pairs."""
    pairs = []
    for text in value:
        feature, equals, name = text.partition("=")
        if not equals:
            raise click.BadParameter(f"{text!r} is not FEATURE=NAME (e.g. rnn=RNN1)")
        pairs.append((feature.strip(), name.strip()))
    return tuple(pairs)


def model_options(whole_sentences: bool, rescoring: bool = False) -> list:
    """The options of the model registry (:data:`~mosesrnn.models.MODEL_OPTIONS`) as click options, each a model
    file in the role of its kind: those whose features score whole sentences only (n-best lists: ``nbest``,
    ``tune``), or (``whole_sentences`` False) those whose features score phrase pairs too; ``rescoring``: with
    ``tune``'s help."""
    chosen = [option for option in MODEL_OPTIONS.values() if _whole_sentences(option) == whole_sentences]
    return [click.option(*option.flags, option.name, type=model_of(kind_of(option.name).kind),
                         help=(rescoring and option.rescoring_help) or option.help) for option in chosen]


def _whole_sentences(option) -> bool:
    """Whether every feature that reads the model option's file scores whole sentences (n-best lists only)."""
    return not any(FEATURES[name].tables for name in option.features)


def with_options(*options):
    """A decorator adding the click ``options`` to a command, in this order (as many decorators would)."""
    def decorate(command):
        for option in reversed(options):
            command = option(command)
        return command

    return decorate


def _options(encoding: str, sentences: bool) -> list:
    names = [name for name, spec in FEATURES.items() if spec.tables or sentences]
    sentence_options = [
        *model_options(whole_sentences=True),
        click.option("--label", "labels", multiple=True, callback=_labels, metavar="FEATURE=NAME",
                     help="The name of a feature's group in the list (repeatable), e.g. --label rnn=RNN1 to add a "
                          "second model's scores beside the first's RNN0."),
    ] if sentences else []
    return sentence_options + [
        *model_options(whole_sentences=False),
        click.option("--vocab", type=INPUT_FOLDER,
                     help="Directory with the word shortlists from `mosesrnn vocab` (for unk without -m, or "
                          "with a subword model, which has none)."),
        click.option("--features", callback=check_feature_names,
                     help="Comma-separated features to add, in this order [default: "
                     f"{','.join(default_features({'model'}))} with -m, "
                     f"{','.join(default_features({'model', 'reverse_model'}))} with --reverse-model too, else "
                     f"{','.join(default_features())}"
                     + (f"; {','.join(default_features({'model', 'lm'}))} with -m and --lm" if sentences else "")
                     + "]. " + "; ".join(f"{name}: {FEATURES[name].summary}" for name in names) + f". {encoding}"),
        click.option("--unk-side", type=click.Choice(UNK_SIDES), default="both", show_default=True,
                     help="Which words the unk feature counts."),
        click.option("--direction", type=click.Choice(DIRECTIONS),
                     help="Score p(target | source) (source-to-target) or p(source | target); must match the "
                          "model [default: the model's]."),
        click.option("--length-normalize", is_flag=True,
                     help="Divide log p by the predicted tokens (words + EOS); off, as in the paper."),
        click.option("--normalizer", type=click.Choice(NORMALIZERS), default="exact", show_default=True,
                     help="exact: log p, with the softmax normaliser at every position. skip: the raw score "
                          "without it, several times faster, for a model trained with `train --self-norm` "
                          "(log p + the sum of log Z, which such training keeps near 0; refused for another "
                          "model)."),
        DEVICE,
        DTYPE,
        click.option("--batch-tokens", type=click.IntRange(1),
                     help="Target tokens (rows x longest length) per decoder batch [default: 4096 on a CPU, "
                          "32768 on a GPU]."),
        THREADS,
        click.option("--compile/--no-compile", "compile", default=False, show_default=True,
                     help="Run the rnn columns' recurrent steps compiled (torch.compile; CUDA graphs on a GPU). "
                          "Values move by float rounding (under 1e-5 nats); off, they are the eager path's."),
    ]


def feature_options(encoding: str, sentences: bool = False):
    """Add the feature options to a click command, which then receives them as ``features: FeatureOptions``.

    ``encoding`` tells in ``--help`` how the values are written (e^v in a phrase table, raw in an n-best list);
    ``sentences``: the command scores whole sentences (n-best lists), so the sentence options (--lm,
    --bilm, --label) join.
    """
    sentence_fields = {"labels", *(option.name for option in MODEL_OPTIONS.values() if _whole_sentences(option))}
    names = [f.name for f in fields(FeatureOptions) if sentences or f.name not in sentence_fields]

    def decorate(command):
        @functools.wraps(command)
        def collect(*args, **kwargs):
            options = FeatureOptions(**{name: kwargs.pop(name) for name in names})
            return command(*args, features=options, **kwargs)

        return with_options(*_options(encoding, sentences))(collect)

    return decorate
