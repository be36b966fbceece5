"""What the commands share: option types, logging to stderr, and library errors as clean CLI errors."""
from __future__ import annotations

import importlib
import logging
import re
import sys

import click

from ..files import describe_os_error
from ..job import Interrupted

__all__ = ["TABLE", "ENCODING", "QUIET", "DEVICE", "DTYPE", "THREADS", "setup_logging", "Command", "CommandGroup",
           "load_model", "parse_duration", "duration"]

TABLE = click.Path(dir_okay=False, allow_dash=True)
ENCODING = click.option(
    "--encoding", default="utf-8", show_default=True,
    help="Text encoding of the phrase table; Moses tables are UTF-8. Use e.g. latin-1 to read a "
         "legacy table on purpose (the output is always UTF-8).")
QUIET = click.option("--quiet", "-q", is_flag=True, help="No progress bar or log messages, only errors.")
DEVICE = click.option("--device", type=click.Choice(["auto", "cpu", "cuda"]), default="auto", show_default=True,
                      help="auto = cuda if available, else cpu.")
DTYPE = click.option("--dtype", type=click.Choice(["fp32", "bf16", "int8", "auto"]), default="fp32", show_default=True,
                     help="Precision of the matmuls: bf16 (GPUs, CPUs with AMX or AVX512-BF16), int8 (dynamic "
                          "quantisation, CPU), auto (chosen from the device and the CPU's flags, and logged). "
                          "See docs/performance.md for speed and accuracy.")
THREADS = click.option("--threads", type=click.IntRange(1), help="CPU threads for torch (default: torch's choice).")


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


class Command(click.Command):
    """A command whose errors end the same way, whichever command raised them (every mosesrnn
    command is one: ``@click.command(cls=Command)``).

    Bad input, refused outputs and failed reads or writes (ValueError and its kinds: file:line
    errors, model-file errors, locks; OSError; a subclass's ``user_errors``) become one line on
    stderr and exit status 1; an interrupted run says what it kept and exits with 130. Other
    exceptions are bugs and keep their traceback.
    """

    user_errors: tuple[type[BaseException], ...] = (ValueError, OSError)

    def invoke(self, ctx: click.Context):
        try:
            return super().invoke(ctx)
        except (click.ClickException, click.exceptions.Exit, click.Abort):
            raise
        except Interrupted as stop:
            click.echo(f"mosesrnn: {stop}", err=True)
            ctx.exit(130)
        except KeyboardInterrupt:
            click.echo("mosesrnn: interrupted", err=True)
            ctx.exit(130)
        except EOFError as error:  # click would take it for Ctrl-D and say only "Aborted!"
            raise click.ClickException(f"a file ended too early: {error}") from None
        except self.user_errors as error:
            raise click.ClickException(describe_os_error(error) if isinstance(error, OSError) else str(error)) \
                from None


class CommandGroup(click.Group):
    """The ``mosesrnn`` group: ``--help`` lists its commands in sections, as ``git help`` does."""

    #: (title, command names) in the order ``--help`` lists them; commands not named go under "Other".
    sections: list[tuple[str, list[str]]] = []
    #: name -> "module:attribute" of commands imported on first use (moses_integration's commands,
    #: whose module imports this one: importing them here eagerly would be a circular import).
    lazy_commands: dict[str, str] = {}

    def list_commands(self, ctx: click.Context) -> list[str]:
        """Every command name, the lazy ones included."""
        return sorted({*self.commands, *self.lazy_commands})

    def get_command(self, ctx: click.Context, name: str) -> click.Command | None:
        """The command called ``name``, importing a lazy one the first time it is asked for."""
        if name not in self.commands and name in self.lazy_commands:
            module, attribute = self.lazy_commands[name].split(":")
            self.add_command(getattr(importlib.import_module(module), attribute), name)
        return self.commands.get(name)

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


def load_model(model_path: str, device: str = "auto", threads: int | None = None):
    """The trained model of a model file, on ``device`` (resolved), with torch's threads set;
    returns ``(TrainedModel, device)``. torch is imported here, so that ``--help`` stays fast."""
    import torch

    from ..devices import resolve_device
    from ..models.model_file import load_trained_model
    if threads:
        torch.set_num_threads(threads)
    device = resolve_device(device)
    return load_trained_model(model_path, map_location=device), device


def parse_duration(text: str) -> float:
    """Seconds in a duration such as ``90``, ``90s``, ``10m``, ``1h30m`` or ``1.5h``."""
    parts = re.findall(r"(\d+(?:\.\d+)?)([hms]?)", text.strip().lower())
    if not parts or "".join(number + unit for number, unit in parts) != text.strip().lower():
        raise ValueError(f"not a duration: {text!r} (examples: 600, 90s, 10m, 1h30m)")
    return sum(float(number) * {"h": 3600, "m": 60, "s": 1, "": 1}[unit] for number, unit in parts)


def duration(ctx, param, value):
    """Click callback: '10m' -> 600.0 seconds."""
    try:
        return None if value is None else parse_duration(value)
    except ValueError as error:
        raise click.BadParameter(str(error)) from None
