"""What the commands share: their job, option types, logging to stderr, and library errors as clean CLI errors."""
from __future__ import annotations

import functools
import logging
import math
import re
import sys
from typing import Callable

import click

from ..errors import MosesRNNError
from ..io.atomic import describe_os_error
from ..io.job import Interrupted, Job
from ..io.roles import Role
from ..io.signals import interrupted_status
from ..runtime import DEVICES, DTYPES
from ..runtime.cpu import cpu_threads
from .paths import PathParam

__all__ = ["FiniteFloat", "ENCODING", "QUIET", "DEVICE", "DTYPE", "THREADS", "CLIP_NORM", "setup_logging", "Command",
           "CommandGroup", "layer_sizes", "declared_paths", "load_model", "parse_duration", "duration", "end_training",
           "torch_threads"]


class FiniteFloat(click.FloatRange):
    """The type of every number option: a float in the range (as click's FloatRange; no bounds: any), and finite.

    click's range lets ``nan`` through (it compares false with both bounds) and ``inf`` past an open top, so a run
    would read its data and fail at its first update, or write ``nan`` into a moses.ini."""

    name = "float"

    def convert(self, value, param, ctx):
        """``value`` as a float in the range; refused (exit status 2) when it is nan or infinite."""
        number = super().convert(value, param, ctx)
        if not math.isfinite(number):
            self.fail(f"{value!r} is not a finite number", param, ctx)
        return number


ENCODING = click.option(
    "--encoding", default="utf-8", show_default=True,
    help="Text encoding of the phrase table; Moses tables are UTF-8. Use e.g. latin-1 to read a "
         "legacy table on purpose (the output is always UTF-8).")
QUIET = click.option("--quiet", "-q", is_flag=True, help="No progress bar or log messages, only errors.")
DEVICE = click.option("--device", type=click.Choice(DEVICES), default="auto", show_default=True,
                      help="auto = cuda if available, else cpu.")
DTYPE = click.option("--dtype", type=click.Choice(DTYPES), default="fp32", show_default=True,
                     help="Precision of the matmuls: bf16 (GPUs, CPUs with AMX or AVX512-BF16), int8 (dynamic "
                          "quantisation, CPU), auto (chosen from the device and the CPU's flags, and logged). "
                          "See docs/performance.md for speed and accuracy.")
THREADS = click.option("--threads", type=click.IntRange(1), help="CPU threads for torch (default: torch's choice).")


def torch_threads(command):
    """The command's body run with torch's CPU threads set to its ``--threads`` (:data:`THREADS`), the command's
    edge for those whose library calls take no thread setting (:func:`~mosesrnn.runtime.cpu.cpu_threads`)."""
    @functools.wraps(command)
    def run(*args, threads: int | None = None, **kwargs):
        with cpu_threads(threads):
            return command(*args, **kwargs)

    return run


# The learning-rate schedule both trainers share; each preset's recipe gives the defaults.
WARMUP = click.option("--warmup", type=click.IntRange(0),
                      help="Updates of linear learning-rate warm-up [default: the preset's recipe].")
LR_DECAY = click.option("--lr-decay", type=click.Choice(["none", "linear", "cosine"]),
                        help="Decay the learning rate to --min-lr times it at --max-updates, else at the end of "
                             "--max-time (without either: none) [default: the preset's recipe].")
MIN_LR = click.option("--min-lr", default=0.0, show_default=True, type=FiniteFloat(0, 1),
                      help="The decayed rate at the end, as a share of the learning rate.")
CLIP_NORM = click.option("--clip-norm", type=FiniteFloat(0, min_open=True),
                         help="Clip the gradient to this L2 norm [default: no clipping].")


def setup_logging(quiet: bool) -> None:
    """Log ``mosesrnn: ...`` lines to stderr (warnings and errors only when ``quiet``).

    Only our own loggers speak at INFO level; libraries (matplotlib's font cache...) only warn.
    """
    handler = logging.StreamHandler(sys.stderr)
    handler.setFormatter(logging.Formatter("mosesrnn: %(message)s"))
    for name in ("mosesrnn", "moses_integration"):
        logger = logging.getLogger(name)
        logger.handlers[:] = [handler]
        logger.setLevel(logging.WARNING if quiet else logging.INFO)
        logger.propagate = False


def declared_paths(command: click.Command, params: dict) -> list[tuple[Role, str]]:
    """``(role, path)`` of every path the command's parameters name (:mod:`mosesrnn.cli.paths`), those inside a
    tuple option (``--also NAME INI``) included; given ``--force``, the outputs it keeps are replaced instead."""
    pairs = []
    for param in command.params:
        value = params.get(param.name)
        label = "/".join(param.opts) if isinstance(param, click.Option) else param.human_readable_name
        if isinstance(param.type, PathParam):
            pairs += param.type.role.named(label).declare(value)
        elif isinstance(param.type, click.Tuple) and value:
            for item in (value if param.multiple else [value]):
                pairs += [pair for kind, part in zip(param.type.types, item) if isinstance(kind, PathParam)
                          for pair in kind.role.named(label).declare(part)]
    return [(role.replacing(), path) for role, path in pairs] if params.get("force") else pairs


class Command(click.Command):
    """A command that runs inside the job its path parameters declare, and whose errors end the same way,
    whichever command raised them (every mosesrnn command is one: ``@click.command(cls=Command)``).

    Before the body runs, the :class:`~mosesrnn.io.job.Job` is built from the parameters whose types are
    :class:`~mosesrnn.cli.paths.PathParam` (``derive``, given, first fills the paths that default to
    others: ``binarize``'s output from its table). Bad input, refused outputs and failed reads or
    writes (:class:`~mosesrnn.errors.MosesRNNError` and its kinds: file:line errors, model-file errors,
    locks; OSError, a dead worker process included; a subclass's ``user_errors``) become one line on
    stderr and exit status 1; an interrupted run says what it kept and exits with 130 (Ctrl-C) or 143
    (SIGTERM). Other exceptions (a plain ValueError from numpy or torch among them) are bugs: they leave
    the command with their traceback, which :func:`mosesrnn.cli.run` prints with a line asking for a report.
    """

    user_errors: tuple[type[BaseException], ...] = (MosesRNNError, OSError)

    def __init__(self, *args, derive: Callable[[dict], dict] | None = None, **kwargs):
        super().__init__(*args, **kwargs)
        self.derive = derive

    def parse_args(self, ctx: click.Context, args: list[str]) -> list[str]:
        """Refuse an option given twice (click would keep the last one silently, e.g. two --cslm files)."""
        seen: dict[str, str] = {}
        single = {opt: param for param in self.params if isinstance(param, click.Option)
                  and not param.multiple and not param.count for opt in param.opts + param.secondary_opts}
        for arg in args:
            if arg == "--":
                break
            name = arg.split("=", 1)[0]
            if name in single:
                param = single[name]
                if param.name in seen:
                    raise click.UsageError(f"{seen[param.name]} and {name} both given: give it once", ctx)
                seen[param.name] = name
        return super().parse_args(ctx, args)

    def invoke(self, ctx: click.Context):
        try:
            if self.derive is not None:
                ctx.params.update(self.derive(dict(ctx.params)))
            with Job(declared_paths(self, ctx.params)):
                return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Interrupted as stop:
            click.echo(f"mosesrnn: {stop}", err=True)
            ctx.exit(interrupted_status())
        except KeyboardInterrupt:
            click.echo("mosesrnn: interrupted", err=True)
            ctx.exit(interrupted_status())
        except EOFError as error:  # click would take it for Ctrl-D and say only "Aborted!"
            raise click.ClickException(f"a file ended too early: {error}") from None
        except self.user_errors as error:
            raise click.ClickException(describe_os_error(error) if isinstance(error, OSError) else str(error)) \
                from None


class CommandGroup(click.Group):
    """The ``mosesrnn`` group: ``--help`` lists its commands in sections, as ``git help`` does."""

    #: (title, command names) in the order ``--help`` lists them; commands not named go under "Other".
    sections: list[tuple[str, list[str]]] = []

    def format_commands(self, ctx: click.Context, formatter: click.HelpFormatter) -> None:
        """The commands under their section titles, each with its short help."""
        listed = {name for _, names in self.sections for name in names}
        others = [name for name in self.list_commands(ctx) if name not in listed]
        limit = formatter.width - 20
        for title, names in [*self.sections, ("Other commands", others)]:
            commands = {name: self.get_command(ctx, name) for name in names}
            rows = [row for name, command in commands.items() if command is not None and not command.hidden
                    for row in _rows(name, command, limit)]
            if rows:
                with formatter.section(title):
                    formatter.write_dl(rows)


def _rows(name: str, command: click.Command, limit: int) -> list[tuple[str, str]]:
    """A command's help row, or one row per subcommand of a group (``lm train``, ``lm export``)."""
    if isinstance(command, click.Group):
        return [(f"{name} {sub}", command.commands[sub].get_short_help_str(limit)) for sub in command.commands]
    return [(name, command.get_short_help_str(limit))]


def load_model(model_path: str, device: str = "auto"):
    """The trained model of a model file, on ``device`` (resolved); returns ``(TrainedEncoderDecoder, device)``.
    torch is imported here, so that ``--help`` stays fast."""
    from ..encdec.model_file import load_encoder_decoder
    from ..runtime.devices import resolve_device
    device = resolve_device(device)
    return load_encoder_decoder(model_path, map_location=device), device


def end_training(summary: str, stop_reason: str) -> None:
    """A training command's last word: its one summary line on stdout, and exit status 130 (Ctrl-C) or 143
    (SIGTERM) when a signal stopped the run (its state saved: the same command continues it)."""
    click.echo(summary)
    if stop_reason == "interrupted":
        raise SystemExit(interrupted_status())


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``90``, ``90s``, ``10m``, ``1h30m`` or ``1.5h``."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms]?)", text.strip().lower())
    if not parts or "".join(number + unit for number, unit in parts) != text.strip().lower():
        raise MosesRNNError(f"not a duration: {text!r} (examples: 600, 90s, 10m, 1h30m)")
    return sum(float(number) * {"h": 3600, "m": 60, "s": 1, "": 1}[unit] for number, unit in parts)


def duration(ctx, param, value):
    """Click callback: '10m' -> 600.0 seconds."""
    try:
        return None if value is None else parse_duration(value)
    except MosesRNNError as error:
        raise click.BadParameter(str(error)) from None


def layer_sizes(ctx, param, value):
    """Click callback: '1536,1024' -> (1536, 1024)."""
    if value is None:
        return None
    try:
        sizes = tuple(int(size) for size in value.split(","))
    except ValueError:
        raise click.BadParameter(f"{value!r} is not a comma-separated list of sizes") from None
    if min(sizes) < 1:
        raise click.BadParameter(f"{value!r}: every size must be positive")
    return sizes


def NGRAM_RUN(command):
    """The run options of the n-gram models' trainers (`lm train`, `bilm train`): validation, limits, device,
    threads, seed, --restart."""
    options = [click.option("--valid-every", default=2000, show_default=True, type=click.IntRange(1)),
               click.option("--patience", default=5, show_default=True, type=click.IntRange(1),
                            help="Stop after this many validations without a lower validation perplexity."),
               click.option("--max-updates", type=click.IntRange(1)),
               click.option("--max-time", callback=duration, metavar="DURATION",
                            help="e.g. 90s, 10m, 2h (this invocation)."),
               DEVICE, THREADS,
               click.option("--seed", default=1, show_default=True, type=int),
               click.option("--restart", "resume", flag_value="never",
                            help="Ignore a saved run in the directory and start over.")]
    for option in reversed(options):
        command = option(command)
    return command
