"""The ``mosesrnn`` command line: one module per command; each parses its options, calls one
library function and turns library errors into a message and an exit status."""
from __future__ import annotations

import signal

import click

from .. import __version__
from .analysis import embed, perplexity, report, topk
from .common import CommandGroup
from .generate import augment, sample, translate
from .lm import lm
from .merge import merge
from .nbest import nbest
from .score import score
from .train import train
from .tuning import mert, rerank
from .vocab import vocab

__all__ = ["main"]


@click.group(cls=CommandGroup, context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="mosesrnn")
def main() -> None:
    """Train the RNN Encoder-Decoder of Cho et al. (2014) on a Moses phrase table and add its
    scores (and an unknown-word penalty) to the table as new feature columns.

    \b
    Typical use:
      mosesrnn train phrase-table.gz -o model/ --max-time 2h
      mosesrnn score phrase-table.gz -m model/best.pt -o scored.gz
      mosesrnn moses-ini moses.ini --table $PWD/scored.gz -o moses.rnn.ini
      mosesrnn mert-moses dev.src dev.ref moses.rnn.ini --work-dir tune/

    Logs go to stderr, data to stdout or the -o file. Gzip (.gz) is read and written
    transparently; '-' means stdin/stdout.
    """
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `mosesrnn score ... -o - | head` ends quietly


#: ``mosesrnn --help`` lists the commands in these groups, in this order (as ``git help`` does).
SECTIONS = (
    ("The main job", (vocab, train, score, merge)),
    ("Moses", ()),  # moses_integration's commands, registered below
    ("The neural language model (CSLM)", (lm,)),
    ("n-best lists", (nbest, mert, rerank)),
    ("Generation and analysis", (translate, sample, augment, topk, perplexity, embed, report)),
)


def _register_commands() -> None:
    # moses_integration is the only code that calls Moses; its commands join this group too.
    from moses_integration.cli import binarize, mert_moses, mert_report, moses_ini
    moses = (moses_ini, binarize, mert_moses, mert_report)
    main.sections = [(title, [c.name for c in (moses if title == "Moses" else commands)])
                     for title, commands in SECTIONS]
    for _, commands in SECTIONS:
        for command in commands:
            main.add_command(command)
    for command in moses:
        main.add_command(command)


_register_commands()
