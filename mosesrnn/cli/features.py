"""The options that choose and build feature columns, shared by ``score`` and ``nbest``: they become one
:class:`~mosesrnn.features.options.FeatureOptions`, which the command hands to the API."""
from __future__ import annotations

import functools
from dataclasses import fields

import click

from ..bilm.orientation import FORWARD, JOINT_FEATURES
from ..encdec.direction import DIRECTIONS
from ..features.options import NORMALIZERS, UNK_SIDES, FeatureOptions
from ..features.registry import FEATURES, default_features, parse_feature_names
from .common import DEVICE, DTYPE, THREADS
from .paths import CSLM_MODEL, INPUT_FOLDER, JOINT_MODEL, MODEL

__all__ = ["feature_options", "joint_model_option"]


def check_feature_names(ctx, param, value):
    """``--features rnn,unk`` checked before any file is opened (a usage error)."""
    try:
        return None if value is None else parse_feature_names(value)
    except ValueError as error:
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


def joint_model_option(orientation):
    """``--bilm`` (the forward joint model), ``--bilm-t2s``...: a joint model file for the feature of that name."""
    if orientation == FORWARD:
        what = ("for the bilm feature (the hypothesis' log-probability given the source; the list must hold Moses' "
                "word alignment)")
    else:
        what = (f"trained {orientation.describe()} (`bilm train"
                + (" --direction target-to-source" if orientation.direction != FORWARD.direction else "")
                + (" --right-to-left" if orientation.right_to_left else "") + f"`), for the {orientation.feature} "
                f"feature (a joint model of another direction, Devlin et al. 2014 Sec. 4)")
    return click.option("--" + orientation.feature, orientation.option, type=JOINT_MODEL,
                        help=f"A joint model file from `mosesrnn bilm train`, {what}.")


def _options(encoding: str, sentences: bool) -> list:
    names = [name for name, spec in FEATURES.items() if spec.tables or sentences]
    sentence_options = [
        click.option("--lm", type=CSLM_MODEL,
                     help="A CSLM file from `mosesrnn lm train`, for the cslm feature (the hypothesis' "
                          "log-probability under a neural target language model)."),
        *map(joint_model_option, JOINT_FEATURES.values()),
        click.option("--label", "labels", multiple=True, callback=_labels, metavar="FEATURE=NAME",
                     help="The name of a feature's group in the list (repeatable), e.g. --label rnn=RNN1 to add a "
                          "second model's scores beside the first's RNN0."),
    ] if sentences else []
    return sentence_options + [
        click.option("-m", "--model", type=MODEL,
                     help="A model file from `mosesrnn train` (for the rnn feature; its shortlists serve unk)."),
        click.option("--reverse-model", type=MODEL,
                     help="A second model, trained in the other direction (`train --direction "
                          "target-to-source`), for the rnn-rev feature: both directions in one pass."),
        click.option("--vocab", type=INPUT_FOLDER,
                     help="Directory with the word shortlists from `mosesrnn vocab` (for unk without -m, or "
                          "with a subword model, which has none)."),
        click.option("--features", callback=check_feature_names,
                     help="Comma-separated features to add, in this order [default: "
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
    sentence_fields = ("lm", "labels", *(o.option for o in JOINT_FEATURES.values()))
    names = [f.name for f in fields(FeatureOptions) if sentences or f.name not in sentence_fields]

    def decorate(command):
        @functools.wraps(command)
        def collect(*args, **kwargs):
            options = FeatureOptions(**{name: kwargs.pop(name) for name in names})
            return command(*args, features=options, **kwargs)

        for option in reversed(_options(encoding, sentences)):
            collect = option(collect)
        return collect

    return decorate
