"""The ``mosesrnn`` command line: one module per command; each parses its options, calls one
library function and turns library errors into a message and an exit status."""
from __future__ import annotations

import contextlib
import os
import signal
import sys
import traceback

import click

from ..errors import BUG_NOTE
from ..version import __version__
from .analysis import embed, perplexity, report, topk
from .bilm import bilm
from .common import CommandGroup
from .generate import augment, sample, translate
from .lm import lm
from .merge import merge
from .mert import mert, rerank
from .moses import binarize, mert_report, moses_ini, tune
from .nbest import nbest
from .prune import prune
from .score import score
from .train import train
from .vocab import vocab

__all__ = ["main", "run"]


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
      mosesrnn tune dev.src dev.ref moses.rnn.ini --baseline moses.ini --test-src test.src --test-ref test.ref

    Logs go to stderr, data to stdout or the -o file. Gzip (.gz) is read and written
    transparently; '-' means stdin/stdout.
    """
    signal.signal(signal.SIGPIPE, signal.SIG_DFL)  # `mosesrnn score ... -o - | head` ends quietly


#: ``mosesrnn --help`` lists the commands in these groups, in this order (as ``git help`` does).
SECTIONS = (
    ("The main job", (vocab, train, score, merge, prune)),
    ("Moses", (moses_ini, binarize, tune, mert_report)),
    ("The neural language models: the CSLM and the joint model", (lm, bilm)),
    ("n-best lists", (nbest, mert, rerank)),
    ("Generation and analysis", (translate, sample, augment, topk, perplexity, embed, report)),
)

for _, _commands in SECTIONS:
    for _command in _commands:
        main.add_command(_command)
main.sections = [(title, [c.name for c in commands]) for title, commands in SECTIONS]


def run() -> None:
    """The ``mosesrnn`` program: :func:`main`, ending with exit status 130 (143 after SIGTERM) when a run was
    interrupted.

    CPython 3.11 ends a process by SIGINT, whatever its exit status, once a KeyboardInterrupt has
    passed through ``exec`` of a string (dataclasses and namedtuple do that while modules import), so
    a run stopped during an import would end "killed by SIGINT" instead of exiting 130 like the rest.
    Once the command has returned, its work is done: a signal that comes while the interpreter shuts down
    (hundreds of milliseconds with torch loaded) is ignored rather than ending the process "killed". A
    process of a torchrun run skips that shutdown: the gloo threads that DistributedDataParallel still holds
    can abort it there ("terminate called without an active exception", pytorch/pytorch#190489), its work
    done and its files written.

    An exception that leaves a command is a bug (the user's errors, :class:`~mosesrnn.errors.MosesRNNError`
    and OSError, end inside it as one line: :class:`~mosesrnn.cli.common.Command`): its traceback is
    printed, then :data:`~mosesrnn.errors.BUG_NOTE`, and the exit status is 1.
    """
    try:
        main()
    except Exception:  # a bug: the user can report it, with where it happened
        traceback.print_exc()
        print(BUG_NOTE, file=sys.stderr)
        sys.exit(1)
    except SystemExit as stop:
        for late in (signal.SIGINT, signal.SIGTERM):
            signal.signal(late, signal.SIG_IGN)
        if stop.code in (128 + signal.SIGINT, 128 + signal.SIGTERM) or int(os.environ.get("WORLD_SIZE", 1)) > 1:
            if isinstance(stop.code, str):
                print(stop.code, file=sys.stderr)
            for stream in (sys.stdout, sys.stderr):
                with contextlib.suppress(OSError, ValueError):
                    stream.flush()
            os._exit(stop.code if isinstance(stop.code, int) else int(stop.code is not None))
        raise
