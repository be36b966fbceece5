"""The README and docs/ stay true: every relative link leads somewhere, every command and benchmark shown
exists with its options, and every table of figures names the command that made it."""
from __future__ import annotations

import ast
import re
import shlex
from pathlib import Path

import click
import pytest

from mosesrnn.cli import main

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`]+)`")
SCRIPT = re.compile(r"benchmarks/[\w-]+\.py")
FIGURE = re.compile(r"\d[\d,]*\.\d|\d,\d{3}|\d\s*[×%]|±")  # 4.2, 1,324, 5.8×, 37%: figures, not counts
NOT_MEASURED = re.compile(r"<!-- not a measurement: .+ -->")
WRAPPERS = ("taskset", "nice", "flock", "time", "/usr/bin/time", "torchrun")  # run the command that follows


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lowercase, punctuation dropped, spaces as hyphens."""
    found, code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        code = code != line.startswith("```")
        if not code and (match := re.match(r"#+ (.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", match[1].strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_relative_link_leads_somewhere(page):
    for target in LINK.findall(page.read_text(encoding="utf-8")):
        if re.match(r"[a-z]+:", target):
            continue  # https:, mailto:
        path, _, anchor = target.partition("#")
        linked = (page.parent / path).resolve() if path else page
        assert linked.exists(), f"{page.name}: {target} leads nowhere"
        if anchor:
            assert anchor in anchors(linked), f"{page.name}: no heading for #{anchor} in {linked.name}"


def code_blocks_and_prose(text: str) -> tuple[list[str], str]:
    """The lines of the code blocks of ``text`` (a fence as ``""``), and its prose with the blocks' lines blank."""
    code_lines, prose, code = [], [], False
    for line in text.splitlines():
        fence = line.lstrip().startswith("```")  # a block in a list item is indented
        code = code != fence
        if code or fence:
            code_lines.append("" if fence else line)
        prose.append("" if code or fence else line)
    return code_lines, "\n".join(prose)


def shown_lines(text: str) -> tuple[list[str], list[str]]:
    """The command lines ``text`` shows: its code blocks' lines (continued lines joined), and its code spans."""
    code_lines, prose = code_blocks_and_prose(text)
    lines, pending = [], ""
    for line in code_lines:
        joined = pending + line.split(" #")[0].strip()
        pending = joined[:-1] + " " if line and joined.endswith("\\") else ""
        if not pending:
            lines.append(joined)
    return lines, [re.sub(r"\s+", " ", span).replace("\\|", "|") for span in SPAN.findall(prose)]  # spans wrap


def shell_words(line: str) -> list[list[str]]:
    """A command line cut at ``&&``, ``|``, ``;`` and ``$(``, each part as shell words (split at spaces
    where its quotes do not pair: a span of prose)."""
    parts = [part.strip().replace("'", "") for part in re.split(r"&&|\||;|\$\(", line)]
    try:
        return [shlex.split(part) for part in parts]
    except ValueError:
        return [part.split() for part in parts]


def shown_commands(page: Path) -> list[list[str]]:
    """The ``mosesrnn ...`` commands the page shows: anywhere in a code block's line; in a code span
    (prose, a table cell) where the command starts it, or follows a wrapper (``taskset -c 1 mosesrnn ...``)."""
    lines, spans = shown_lines(page.read_text(encoding="utf-8"))
    commands = [words for line in lines for words in shell_words(line) if "mosesrnn" in words]
    commands += [words for span in spans for words in shell_words(span)
                 if "mosesrnn" in words and (words[0] == "mosesrnn" or words[0] in WRAPPERS)]
    return [words[words.index("mosesrnn"):] for words in commands]


def shown_script_calls(page: Path) -> list[tuple[str, list[str]]]:
    """The benchmark scripts the page runs with their arguments: ``python benchmarks/x.py --pairs 10``."""
    lines, spans = shown_lines(page.read_text(encoding="utf-8"))
    return [(word, words[at + 1:]) for line in lines + spans for words in shell_words(line)
            for at, word in enumerate(words) if SCRIPT.fullmatch(word)]


def shown_scripts(page: Path) -> list[str]:
    """The repository's scripts that the page names (``python benchmarks/x.py``, ``examples/demo.sh``)."""
    return re.findall(r"(?:python3? |bash )?((?:benchmarks|examples)/[\w./-]+\.(?:py|sh))", page.read_text("utf-8"))


def script_options(script: Path) -> set[str]:
    """The options a Python script declares, read from its source: argparse's ``add_argument("--x", "-x")``
    and click's ``option("--x/--no-x")`` (argparse's ``-h``/``--help`` included)."""
    found = {"-h", "--help"}
    for node in ast.walk(ast.parse(script.read_text(encoding="utf-8"))):
        if isinstance(node, ast.Call) and getattr(node.func, "attr", "") in ("add_argument", "option"):
            for arg in node.args:
                if isinstance(arg, ast.Constant) and str(arg.value).startswith("-"):
                    found.update(arg.value.split("/"))
    return found


def _command(words: list[str]) -> tuple[click.Command, list[str]]:
    command, rest = main, words[1:]
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        found = command.get_command(click.Context(command), rest[0])
        assert found is not None, f"no command {' '.join(words[:len(words) - len(rest) + 1])}"
        command, rest = found, rest[1:]
    return command, rest


def unknown_options(words: list[str], known: set[str]) -> list[str]:
    """The words of a command line that look like options (``--x``, ``--x=1``, ``[--x``) but are not in ``known``."""
    words = [word.lstrip("[") for word in words]
    return [word for word in words if word.startswith("-") and word != "-" and not re.match(r"-\d", word)
            and word.split("=")[0] not in known]


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_shown_exists_with_its_options(page):
    for words in shown_commands(page):
        command, rest = _command(words)
        known = {"--help", "-h"} | {name for param in command.params
                                    for name in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])}
        wrong = unknown_options(rest, known)
        assert not wrong, f"{page.name}: {' '.join(words)}: {command.name} has no {' '.join(wrong)}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_script_shown_exists(page):
    for script in shown_scripts(page):
        assert (ROOT / script).exists(), f"{page.name}: {script} does not exist"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_benchmark_shown_has_its_options(page):
    for script, args in shown_script_calls(page):
        wrong = unknown_options(args, script_options(ROOT / script))
        assert not wrong, f"{page.name}: {script} {' '.join(args)}: the script has no {' '.join(wrong)}"


def tables(page: Path) -> list[tuple[list[str], str, str]]:
    """Each table of ``page``: its rows, and the text before and after it up to a heading or another table."""
    lines, code, kinds = page.read_text(encoding="utf-8").splitlines(), False, []
    for line in lines:
        code = code != line.lstrip().startswith("```")
        kinds.append("" if code else "#" if re.match(r"#+ ", line) else "|" if line.startswith("|") else "")
    runs: list[list[int]] = []  # [first, end) of each run of "|" lines
    for at in (at for at, kind in enumerate(kinds) if kind == "|"):
        if runs and runs[-1][1] == at:
            runs[-1][1] = at + 1
        else:
            runs.append([at, at + 1])
    runs = [run for run in runs if run[1] - run[0] > 1 and re.match(r"\|\s*:?-{3}", lines[run[0] + 1])]
    walls = sorted({at for at, kind in enumerate(kinds) if kind == "#"} | {at for f, e in runs for at in range(f, e)})
    found = []
    for first, end in runs:
        start = max((wall + 1 for wall in walls if wall < first), default=0)
        stop = min((wall for wall in walls if wall >= end), default=len(lines))
        found.append((lines[first:end], "\n".join(lines[start:first]), "\n".join(lines[end:stop])))
    return found


def names_a_command(text: str) -> bool:
    """Whether ``text`` shows, in code, a ``mosesrnn`` command (not the bare name), a benchmark script or
    a ``make`` target."""
    lines, spans = shown_lines(text)
    return any(line.startswith("make ") or re.search(r"benchmarks/[\w-]+\.(?:py|sh)\b", line)
               or any("mosesrnn" in words[:-1] for words in shell_words(line)) for line in lines + spans)


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_table_of_figures_names_the_command_that_made_it(page):
    """A table with figures (4.2, 1,324, 5.8×, 37%, ±) shows its command in or next to it (the text between
    it and the heading or table before or after), or says why it needs none in the line above it:
    ``<!-- not a measurement: the presets' shapes -->``."""
    for rows, before, after in tables(page):
        figures = FIGURE.search(re.sub(r"`[^`]*`", "", "\n".join(rows[2:])))
        if not figures or NOT_MEASURED.fullmatch(before.rstrip().rpartition("\n")[2].strip()):
            continue
        assert names_a_command("\n".join([before, *rows, after])), f"{page.name}: no command for the table {rows[0]}"


def test_the_pages_show_commands():
    assert sum(len(shown_commands(page)) for page in PAGES) > 50


def test_the_readme_reads_in_five_minutes():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300
