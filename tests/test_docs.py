"""The README and docs/ stay true: every relative link leads somewhere, every command shown exists."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import click
import pytest

from mosesrnn.cli import main

ROOT = Path(__file__).parent.parent
PAGES = [ROOT / "README.md", *sorted((ROOT / "docs").glob("*.md"))]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")


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


def shown_commands(page: Path) -> list[list[str]]:
    """The ``mosesrnn ...`` command lines in the code blocks of ``page`` (continued lines joined)."""
    commands, code, pending = [], False, ""
    for line in page.read_text(encoding="utf-8").splitlines():
        if line.startswith("```"):
            code, pending = not code, ""
            continue
        if not code:
            continue
        text = pending + line.split(" #")[0].strip()
        if text.endswith("\\"):
            pending = text[:-1] + " "
            continue
        pending = ""
        for part in re.split(r"&&|\||;|\$\(", text):
            words = shlex.split(part.strip().replace("'", ""))
            if "mosesrnn" in words:
                commands.append(words[words.index("mosesrnn"):])
    return commands


def shown_scripts(page: Path) -> list[str]:
    """The repository's scripts that the page runs (``python benchmarks/x.py``, ``examples/demo.sh``)."""
    return re.findall(r"(?:python3? |bash )?((?:benchmarks|examples)/[\w./-]+\.(?:py|sh))", page.read_text("utf-8"))


def _command(words: list[str]) -> tuple[click.Command, list[str]]:
    command, rest = main, words[1:]
    while isinstance(command, click.Group) and rest and not rest[0].startswith("-"):
        found = command.get_command(click.Context(command), rest[0])
        assert found is not None, f"no command {' '.join(words[:len(words) - len(rest) + 1])}"
        command, rest = found, rest[1:]
    return command, rest


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_command_shown_exists_with_its_options(page):
    for words in shown_commands(page):
        command, rest = _command(words)
        known = {"--help", "-h"} | {name for param in command.params
                                    for name in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])}
        for word in rest:
            if word.startswith("-") and word != "-" and not re.match(r"-\d", word):
                assert word.split("=")[0] in known, f"{page.name}: {' '.join(words)}: {command.name} has no {word}"


@pytest.mark.parametrize("page", PAGES, ids=[p.name for p in PAGES])
def test_every_script_shown_exists(page):
    for script in shown_scripts(page):
        assert (ROOT / script).exists(), f"{page.name}: {script} does not exist"


def test_the_pages_show_commands():
    assert sum(len(shown_commands(page)) for page in PAGES) > 50


def test_the_readme_reads_in_five_minutes():
    assert len((ROOT / "README.md").read_text(encoding="utf-8").splitlines()) <= 300
