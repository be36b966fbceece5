"""The README and docs/ stay true: every relative link leads somewhere, every command and benchmark shown
exists with its options, every table of figures names the command that made it, and every BLEU table names
the committed report its figures come from (``docs/results/NAME``), each figure equal to the report's, or says
that it cannot be checked. Every committed report and choice is recomputed from the translations committed with it
(``tests/recompute.py``), and the paragraphs that quote one (``<!-- figures: docs/results/NAME -->``) quote it."""
from __future__ import annotations

import ast
import json
import os
import re
import shlex
import statistics
from pathlib import Path

import click
import pytest
from recompute import compare_runs as recompared_runs
from recompute import corpus_bleu, report_differences, sentence_stats

from moses_integration.route.choice import FORMAT as CHOICE_FORMAT
from moses_integration.route.choice import SINGLE_CHOSEN_ON, choice_markdown, in_sample
from moses_integration.route.published import COMMANDS, HYPOTHESES, REFERENCES
from moses_integration.route.report_file import column_keys, markdown, read_report, stage_cells
from mosesrnn.cli import main

ROOT = Path(__file__).parent.parent
RESULTS = ROOT / "docs" / "results"
#: README and every page under docs/, but the pages a publication renders from its JSON (checked against it).
RENDERED = ("report.md", "choice.md")
RENDERED = ("report.md", "choice.md")
PAGES = [ROOT / "README.md", *sorted(page for page in (ROOT / "docs").rglob("*.md")
                                     if not (page.parent.parent == RESULTS and page.name in RENDERED))]
PAGE_IDS = [str(page.relative_to(ROOT)) for page in PAGES]
#: README and docs/'s top level: below it lie programs' outputs (device reports, benchmark tables), their commands
#: beside them.
TOP_PAGES = [page for page in PAGES if page.parent in (ROOT, ROOT / "docs")]
LINK = re.compile(r"\[[^\]]*\]\(([^)\s]+)\)")
SPAN = re.compile(r"`([^`]+)`")
SCRIPT = re.compile(r"benchmarks/[\w-]+\.py")
FIGURE = re.compile(r"\d[\d,]*\.\d|\d,\d{3}|\d\s*[×%]|±")  # 4.2, 1,324, 5.8×, 37%: figures, not counts
NOT_MEASURED = re.compile(r"<!-- not a measurement: .+ -->")
#: The line above a table whose figures come from a committed report, and above one whose report is lost.
REPORT = re.compile(r"<!-- report: (docs/results/[\w.+-]+) -->")
#: ... and above one that cannot be recomputed; naming a publication (its translations lost), checked against it.
UNVERIFIABLE = re.compile(r"<!-- unverifiable: (?:(docs/results/[\w.+-]+): )?.+ -->")
#: The line above a paragraph or list whose figures (+4.13, p 0.63, 9 of 9, 48.78) each quote a publication.
FIGURES_FROM = re.compile(r"<!-- figures: (docs/results/[\w.+-]+(?:,? docs/results/[\w.+-]+)*) -->")
WRAPPERS = ("taskset", "nice", "flock", "time", "/usr/bin/time", "torchrun")  # run the command that follows


def anchors(page: Path) -> set[str]:
    """GitHub's anchors of a page's headings: lowercase, punctuation dropped, spaces as hyphens."""
    found, code = set(), False
    for line in page.read_text(encoding="utf-8").splitlines():
        code = code != line.startswith("```")
        if not code and (match := re.match(r"#+ (.*)", line)):
            found.add(re.sub(r"[^\w\- ]", "", match[1].strip().lower()).replace(" ", "-"))
    return found


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
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


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_command_shown_exists_with_its_options(page):
    for words in shown_commands(page):
        command, rest = _command(words)
        known = {"--help", "-h"} | {name for param in command.params
                                    for name in getattr(param, "opts", []) + getattr(param, "secondary_opts", [])}
        wrong = unknown_options(rest, known)
        assert not wrong, f"{page.name}: {' '.join(words)}: {command.name} has no {' '.join(wrong)}"


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_script_shown_exists(page):
    for script in shown_scripts(page):
        assert (ROOT / script).exists(), f"{page.name}: {script} does not exist"


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
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


@pytest.mark.parametrize("page", TOP_PAGES, ids=[page.name for page in TOP_PAGES])
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


# -- every BLEU table from a committed report ------------------------------------------------------------


def cells(row: str) -> list[str]:
    """The cells of a Markdown table row (``\\|`` inside a cell kept)."""
    return [cell.strip().replace("\\|", "|") for cell in re.split(r"(?<!\\)\|", row.strip())[1:-1]]


def line_above(before: str) -> str:
    return before.rstrip().rpartition("\n")[2].strip()


def marked_unverifiable(folder: Path) -> bool:
    """Whether a publication says in its commands (a line ``<!-- unverifiable: why -->`` of its COMMANDS.md) that
    its figures cannot be recomputed: its translations were not kept."""
    return any(UNVERIFIABLE.fullmatch(line.strip()) for name in COMMANDS if (folder / name).is_file()
               for line in (folder / name).read_text(encoding="utf-8").splitlines())


def cited_folder(before: str, root: Path = ROOT) -> tuple[Path | None, bool]:
    """The publication named on the line above a table (None: none), and whether that line says unverifiable."""
    above = line_above(before)
    if match := REPORT.fullmatch(above):
        return root / match[1], False
    match = UNVERIFIABLE.fullmatch(above)
    return (root / match[1] if match and match[1] else None), bool(match)


def report_table_problems(rows: list[str], before: str, root: Path = ROOT) -> list[str]:
    """What is wrong with a table whose line above names a publication (``<!-- report: docs/results/NAME -->``, or
    ``<!-- unverifiable: docs/results/NAME: why -->`` where its translations are lost, as its COMMANDS.md says): each
    row names a stage of its report (its first cell, up to a colon: ``rescored: ...``, or ``**`rescored`**: ...``),
    and each of its other cells is the report's own, under a header of the report's table (:func:`column_keys`:
    BLEU per run, mean ± std, Δ, p, pairs, on the test set and the held-out dev half, weights, iterations, speed),
    as the report writes it; a column no report writes may hold no figure."""
    folder, unverifiable = cited_folder(before, root)
    if not unverifiable and marked_unverifiable(folder):
        return [f"{folder.relative_to(root)} is marked unverifiable in its commands: the table says so on the line "
                f"above it (<!-- unverifiable: {folder.relative_to(root)}: why -->)"]
    if (folder / "choice.json").is_file():
        return choice_table_problems(rows, folder)
    if not (folder / "report.json").is_file():
        return [f"{folder.relative_to(root)}: no report.json"]
    report = read_report(str(folder / "report.json"))
    stages = {stage.name: stage_cells(stage) for stage in report.stages}
    problems = []
    for row in rows[2:]:
        name = re.sub(r"[*`]", "", cells(row)[0]).partition(":")[0].strip()
        if name not in stages:
            problems.append(f"{cells(row)[0]!r} names no stage of {folder.name}'s report ({', '.join(stages)})")
            continue
        problems += row_problems(name, stages[name], cells(rows[0]), cells(row), f"{folder.name}'s report")
    return problems


def choice_label(cell: str) -> str:
    """The row of a choice a table's first cell names: ``TUNING: stage`` or ``name (single)``, whatever follows."""
    words = re.sub(r"[*`]", "", cell).strip()
    if words.partition(":")[0].strip().endswith(" (single)"):
        return words.partition(":")[0].strip()
    tuning, _, rest = words.partition(": ")
    return f"{tuning}: {rest.partition(':')[0].strip()}"


def choice_ranking(folder: Path) -> list[str]:
    """The rows of a choice in the order of its ranking on dev, the chosen first: those of ``choice.md``'s first
    table (the record's rendering, recomputed by :func:`choice_differences`)."""
    text = (folder / "choice.md").read_text(encoding="utf-8").split("\n\n|", 1)[1]
    return [choice_label(cells(line)[0]) for line in ("|" + text).splitlines()[2:] if line.startswith("|")]


def choice_table_problems(rows: list[str], folder: Path) -> list[str]:
    """What is wrong with a table of a choice among tunings (``benchmarks/choose_on_dev.py --publish``): each row is
    ``NAME: stage`` of the report in ``docs/results/NAME`` (one of the tunings the choice ranked), with its cells,
    or ``name (single)``, with the single's figures of ``choice.json``; either may go on after a colon. Only the
    chosen row is bold, and a column on how a row was chosen says "the highest held-out dev BLEU" on that row alone
    and "runner-up" on the ranking's second alone."""
    choice = json.loads((folder / "choice.json").read_text(encoding="utf-8"))
    problems = []
    for row in rows[2:]:
        label = choice_label(cells(row)[0])
        tuning, _, stage = label.partition(": ")
        if label.endswith(" (single)") and label[:-9] in choice["singles"]:
            single = choice["singles"][label[:-9]]
            expected = {"dev": single["dev-half BLEU"], "test": single["test BLEU"]}
            source = f"{folder.name}/choice.json"
        elif tuning in choice["tunings"] and (folder.parent / tuning / "report.json").is_file():
            stages = {s.name: s for s in read_report(str(folder.parent / tuning / "report.json")).stages}
            if stage not in stages:
                problems.append(f"{label!r} names no stage of {tuning}'s report ({', '.join(stages)})")
                continue
            expected, source = stage_cells(stages[stage]), tuning
        else:
            problems.append(f"{label!r} is neither a stage of the tunings of {folder.name} "
                            f"({', '.join(choice['tunings'])}) nor one of its singles ({', '.join(choice['singles'])})")
            continue
        problems += row_problems(label, expected, cells(rows[0]), cells(row), source)
    return problems + chosen_row_problems(rows, choice_ranking(folder))


def chosen_row_problems(rows: list[str], ranking: list[str]) -> list[str]:
    """The bold rows that are not the chosen one (``ranking[0]``), and the cells of a "how it was chosen" column that
    call a row the highest on dev or the runner-up when the ranking does not."""
    headers = [header.lower() for header in cells(rows[0])]
    how = next((at for at, header in enumerate(headers) if "chosen" in header), None)
    problems = []
    for row in rows[2:]:
        label = choice_label(cells(row)[0])
        if "**" in row and label != ranking[0]:
            problems.append(f"{label!r} is bold, but the stage chosen on dev is {ranking[0]!r}")
        if how is None:
            continue
        said = cells(row)[how].lower()
        if ("highest held-out dev" in said) != (label == ranking[0]):
            problems.append(f"{label!r}: {cells(row)[how]!r} in the column {cells(rows[0])[how]!r}, but the stage "
                            f"chosen on dev (the highest held-out dev BLEU) is {ranking[0]!r}")
        if "runner-up" in said and ranking[1:2] != [label]:
            problems.append(f"{label!r}: {cells(row)[how]!r}, but the runner-up on dev is {ranking[1:2]}")
    return problems


def row_problems(name: str, expected: dict[str, str], headers: list[str], row_cells: list[str],
                 source: str) -> list[str]:
    """The cells of one row that differ from ``expected`` (the cells by key of ``source``, a report or a choice),
    under the report's headers; a column no report writes may hold no figure."""
    problems = []
    for header, key, cell in zip(headers[1:], column_keys(headers[1:]), row_cells[1:]):
        cell = cell.replace("**", "").strip()
        if key is None:
            if re.search(r"\d", cell):
                problems.append(f"{name}, {header!r}: {cell!r}, in a column that is not the report's")
        elif cell != expected.get(key):
            problems.append(f"{name}, {header!r}: {cell!r} in the table, {expected.get(key)!r} in {source}")
    return problems


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_table_naming_a_report_is_the_reports(page):
    for rows, before, _ in tables(page):
        if cited_folder(before)[0] is not None:
            problems = report_table_problems(rows, before)
            assert not problems, f"{page.name}: the table {rows[0]}: " + "; ".join(problems)


def is_bleu_table(rows: list[str]) -> bool:
    """Whether a table has a BLEU column: a header cell that says BLEU, in any wording."""
    return any("bleu" in header.lower() for header in cells(rows[0]))


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_bleu_table_names_its_report_or_says_it_is_unverifiable(page):
    """A table with a BLEU column has ``<!-- report: docs/results/NAME -->`` on the line above it, or (its report or
    translations lost) ``<!-- unverifiable: why -->``."""
    for rows, before, _ in tables(page):
        if is_bleu_table(rows):
            above = line_above(before)
            assert REPORT.fullmatch(above) or UNVERIFIABLE.fullmatch(above), \
                f"{page.name}: the BLEU table {rows[0]} names no report (<!-- report: docs/results/NAME -->)"


# -- every figure quoted in prose ------------------------------------------------------------------------

#: A figure of prose: run pairs (9 of 9), or a decimal, signed (+4.13, −0.12) or not (p 0.63, 48.78).
PROSE_FIGURE = re.compile(r"\b\d+ of \d+\b|(?<![\w.,])[+−-]?\d+\.\d+(?![\d.]\d)")


def quoted_blocks(text: str) -> list[tuple[list[str], str]]:
    """The publications named by each ``<!-- figures: docs/results/NAME -->`` line of ``text``, and the paragraph or
    list below it (up to the next blank line)."""
    lines, blocks = text.splitlines(), []
    for at, line in enumerate(lines):
        if match := FIGURES_FROM.fullmatch(line.strip()):
            end = next((stop for stop in range(at + 1, len(lines)) if not lines[stop].strip()), len(lines))
            blocks.append((re.findall(r"docs/results/[\w.+-]+", match[1]), "\n".join(lines[at + 1:end])))
    return blocks


#: What prose compares the chosen stage with: a figure after one of these words, up to the next "against" or the
#: next of them, is that comparison's (a doctored prose must not pass by quoting the control's +2.82 as the
#: baseline's).
COMPARED = re.compile(r"\b(?:(baseline|control|runner-up)|against)\b", re.IGNORECASE)


def source_figures(folder: Path, compared: str | None = None) -> list[str]:
    """The figures a publication writes (its ``choice.md`` or ``report.md``): every one, or with ``compared``
    (``baseline``, ``control``, ``runner-up``) those of a choice's line "- against the ``compared`` ..."."""
    name = "choice.md" if (folder / "choice.json").is_file() else "report.md"
    text = (folder / name).read_text(encoding="utf-8").replace("−", "-")
    if compared is not None and name == "choice.md":
        text = "\n".join(line for line in text.splitlines()
                         if re.match(rf"- against (?:the|its) {compared}\b", line, re.IGNORECASE))
    return PROSE_FIGURE.findall(text)


def compared_parts(block: str) -> list[tuple[str | None, str]]:
    """``block`` cut where it names a comparison (``baseline``, ``control``, ``runner-up``) or says "against":
    each part with the comparison it names (lower case), or None (before the first, or after an "against" that
    names none of them)."""
    cuts = list(COMPARED.finditer(block))
    starts = [0] + [cut.start() for cut in cuts]
    names = [None] + [cut[1] and cut[1].lower() for cut in cuts]
    return [(name, block[start:end]) for name, start, end in zip(names, starts, starts[1:] + [len(block)])]


def quotes(figure: str, source: str) -> bool:
    """Whether a figure of prose is ``source`` (``9 of 9`` as it is; a decimal rounded to the prose's digits, with its
    sign when the prose gives one)."""
    figure, source = figure.replace("−", "-"), source.replace("−", "-")
    if " of " in figure or " of " in source:
        return figure == source
    digits = len(figure.partition(".")[2])
    if len(source.partition(".")[2]) < digits:
        return False
    value = float(source) if figure[0] in "+-" else abs(float(source))
    return f"{value:{'+' if figure[0] == '+' else ''}.{digits}f}" == figure


def prose_problems(text: str, root: Path = ROOT) -> list[str]:
    """Each figure of a paragraph under ``<!-- figures: docs/results/NAME -->`` that its publications do not write
    (where the paragraph names a comparison, that its publications do not write for that comparison)."""
    problems = []
    for folders, block in quoted_blocks(text):
        missing = [folder for folder in folders if not (root / folder).is_dir()]
        if missing:
            problems.append(f"<!-- figures: ... --> names {', '.join(missing)}, which is not there")
            continue
        for compared, part in compared_parts(block):
            sources = [figure for folder in folders for figure in source_figures(root / folder, compared)]
            whose = f"{', '.join(folders)}" + (f" against the {compared}" if compared else "")
            problems += [f"{figure!r} (in {block[:50]!r}...) is no figure of {whose}"
                         for figure in PROSE_FIGURE.findall(part) if not any(quotes(figure, s) for s in sources)]
    return problems


@pytest.mark.parametrize("page", PAGES, ids=PAGE_IDS)
def test_every_figure_quoted_in_prose_is_the_publications(page):
    """A paragraph or list below ``<!-- figures: docs/results/NAME -->`` gives the figures of that publication alone:
    its comparisons (+4.13, p 0.63, 9 of 9) and BLEU, rounded at most."""
    problems = prose_problems(page.read_text(encoding="utf-8"))
    assert not problems, f"{page.name}: " + "; ".join(problems)


def test_the_pages_quote_the_choice_in_prose():
    assert any(quoted_blocks(page.read_text(encoding="utf-8")) for page in PAGES)


# -- every publication whole, and recomputed from its translations ----------------------------------------


def named_files(folder: Path) -> list[str]:
    """The translations and references a publication's figures come from, as its JSON names them (resolved)."""
    if (folder / "choice.json").is_file():
        choice = json.loads((folder / "choice.json").read_text(encoding="utf-8"))
        return [str(folder / single[part]) for single in choice["singles"].values() for part in ("dev", "test")]
    report = read_report(str(folder / "report.json"))
    return [report.dev["reference"], report.test["reference"],
            *(path for stage in report.stages for path in stage.hypotheses + stage.dev_hypotheses)]


def translations_problems(folder: Path) -> list[str]:
    """What is wrong with the translations of a publication: each that its JSON names is committed in it (gzipped
    under hyp/ and ref/, nothing else there), unless its COMMANDS.md marks it unverifiable (they were lost)."""
    if marked_unverifiable(folder):
        return []
    problems = [f"{folder.name}: {os.path.relpath(path, folder)} is not committed in the folder (publish it with "
                f"`mosesrnn mert-report WORK --publish`, or mark its COMMANDS.md <!-- unverifiable: why -->)"
                for path in named_files(folder)
                if not (Path(path).is_file() and Path(path).resolve().is_relative_to(folder.resolve()))]
    named = {Path(path).resolve() for path in named_files(folder)}
    problems += [f"{folder.name}: {path.relative_to(folder)} is named by nothing" for kind in (HYPOTHESES, REFERENCES)
                 for path in sorted((folder / kind).rglob("*")) if path.is_file() and path.resolve() not in named]
    return problems


def published_problems(folder: Path) -> list[str]:
    """What a folder of docs/results lacks: its report.json, plan.json, report.md (the report.json rendered) and
    commands (COMMANDS.md or commands.sh), its translations (:func:`translations_problems`), and no machine's paths
    (no absolute path in the JSON files, no home or temporary folder anywhere)."""
    names = {path.name for path in folder.iterdir()}
    choice = "choice.json" in names
    needed = ("choice.md",) if choice else ("report.json", "plan.json", "report.md")
    problems = [f"{folder.name}: no {name}" for name in needed if name not in names]
    if not names & set(COMMANDS):
        problems.append(f"{folder.name}: no {' or '.join(COMMANDS)} with the exact commands")
    if problems:
        return problems
    if choice:
        problems += choice_problems(folder, names)
    elif (folder / "report.md").read_text(encoding="utf-8") != markdown(read_report(str(folder / "report.json"))):
        problems.append(f"{folder.name}/report.md is not its report.json's (mosesrnn mert-report WORK --publish)")
    problems += translations_problems(folder)
    for path in sorted(path for path in folder.iterdir() if path.is_file()):
        text = path.read_text(encoding="utf-8")
        if re.search(r'"/[^"]*"', text) if path.suffix == ".json" else re.search(r"(?<![\w$})])/(?:root|home|tmp|"
                                                                                  r"Users|mnt|scratch)/", text):
            problems.append(f"{folder.name}/{path.name} holds a machine's path")
    return problems


def choice_problems(folder: Path, names: set[str]) -> list[str]:
    """What a choice among tunings (``choice.json``, ``choice.md``) lacks: its singles' translations, and a table
    that is its tunings' reports' (:func:`choice_table_problems`)."""
    choice = json.loads((folder / "choice.json").read_text(encoding="utf-8"))
    problems = [f"{folder.name}: no {single[part]} (the translation of {name})" for name, single in
                choice["singles"].items() for part in ("dev", "test") if not (folder / single[part]).is_file()]
    lines = (folder / "choice.md").read_text(encoding="utf-8").splitlines()
    table = [line for line in lines if line.startswith("|")]
    if choice.get("format") == CHOICE_FORMAT:  # its ranking: dev alone
        table = table[:len(choice["ranking"]) + 2]
    return problems + [f"{folder.name}/choice.md: {problem}" for problem in choice_table_problems(table, folder)]


def publications() -> list[Path]:
    return [folder for folder in sorted(RESULTS.iterdir()) if folder.is_dir()] if RESULTS.is_dir() else []


def test_every_published_report_is_whole_and_holds_no_machine_paths():
    assert [problem for folder in publications() for problem in published_problems(folder)] == []


def choice_differences(folder: Path) -> list[str]:
    """What a choice's record says that its tunings' reports and its singles' translations do not give again: the
    ranking on the held-out dev half (stages of tunings tuned on the other half, singles chosen off it), the choice,
    each comparison read after it (recomputed), and ``choice.md`` as its rendering."""
    record = json.loads((folder / "choice.json").read_text(encoding="utf-8"))
    if record.get("format") != CHOICE_FORMAT:
        return [f"{folder.name}: a choice of before (no ranking on dev alone, no comparisons): choose again, or mark "
                f"its COMMANDS.md <!-- unverifiable: why -->"]
    reports = {name: read_report(str(folder.parent / name / "report.json")) for name in record["tunings"]}
    first = next(iter(reports.values()))
    rows = {f"{name}: {stage.name}": (statistics.mean(stage.dev_bleu), stage_cells(stage)["dev"], in_sample(report),
                                      [sentence_stats(path, first.test["reference"], "none") for path in
                                       stage.hypotheses], list(stage.bleu), stage_cells(stage)["test"])
            for name, report in reports.items() for stage in report.stages}
    for name, single in record["singles"].items():
        dev = corpus_bleu(sentence_stats(str(folder / single["dev"]), first.dev["reference"], "none", True), "none")
        test_stats = sentence_stats(str(folder / single["test"]), first.test["reference"], "none")
        test = corpus_bleu(test_stats, "none")
        rows[f"{name} (single)"] = (dev, f"{dev:.2f} (1 run)", SINGLE_CHOSEN_ON[single["chosen_on"]], [test_stats],
                                    [test], f"{test:.2f} (1 run)")
    ranked = sorted((label for label, row in rows.items() if row[2] is None), key=lambda label: -rows[label][0])
    problems = [f"{folder.name}: {name} (single)'s {key} {single[key]!r} in choice.json, {cell!r} from its translations"
                for name, single in record["singles"].items() for key, cell in (
                    ("dev-half BLEU", rows[f"{name} (single)"][1]), ("test BLEU", rows[f"{name} (single)"][5]))
                if single[key] != cell]
    given = [(row["label"], row["dev-half BLEU"]) for row in record["ranking"]]
    if given != [(label, rows[label][1]) for label in ranked]:
        problems.append(f"{folder.name}: the ranking {given} is not that of the reports and singles on the held-out "
                        f"dev half {[(label, rows[label][1]) for label in ranked]}")
    chosen = ranked[0]
    if record["chosen"] != chosen or record["after_choice"]["test BLEU"] != rows[chosen][5]:
        problems.append(f"{folder.name}: chosen {record['chosen']!r} (test {record['after_choice']['test BLEU']}); "
                        f"the ranking chooses {chosen!r} (test {rows[chosen][5]})")
    tuning, _, stage = chosen.partition(": ")
    control = next((s.control for s in reports[tuning].stages if s.name == stage), None) if tuning in reports else None
    wanted = [("the baseline", f"{tuning}: baseline"), ("its control", f"{tuning}: {control}"),
              ("the runner-up on dev", ranked[1] if len(ranked) > 1 else None)]
    wanted += [(label, label) for label in rows if label.endswith(" (single)")]
    expected, seen = [], {chosen}
    for against, label in wanted:
        if label in rows and label not in seen:
            seen.add(label)
            expected.append((against, label))
    comparisons = record["after_choice"]["comparisons"]
    if (named := [(c["against"], c["label"]) for c in comparisons]) != expected:
        problems.append(f"{folder.name}: compared after the choice with {named}, not {expected}")
    for comparison in comparisons:
        ours, theirs = rows[chosen], rows.get(comparison["label"])
        if theirs is None:
            continue
        again = recompared_runs(ours[3], ours[4], theirs[3], theirs[4], "none")
        for key, value in (("delta", again.delta), ("p_value", again.p_value),
                           ("pairs_agreeing", again.pairs_agreeing), ("pairs", again.pairs)):
            if abs(comparison[key] - value) > 1e-9:
                problems.append(f"{folder.name}: against {comparison['label']}, {key} {comparison[key]!r} in "
                                f"choice.json, {value!r} from the translations")
        if comparison["test BLEU"] != theirs[5]:
            problems.append(f"{folder.name}: {comparison['label']}'s test BLEU {comparison['test BLEU']!r}, "
                            f"{theirs[5]!r} from its report or translations")
    if (folder / "choice.md").read_text(encoding="utf-8") != choice_markdown(record):
        problems.append(f"{folder.name}/choice.md is not its choice.json's (benchmarks/choose_on_dev.py --publish)")
    return problems


def recomputation_problems(folder: Path) -> list[str]:
    """Every figure of a publication that its committed translations do not give again."""
    if (folder / "choice.json").is_file():
        return choice_differences(folder)
    return [f"{folder.name}: {problem}" for problem in report_differences(read_report(str(folder / "report.json")))]


VERIFIABLE = [folder for folder in publications() if not marked_unverifiable(folder)]


@pytest.mark.parametrize("folder", VERIFIABLE, ids=[folder.name for folder in VERIFIABLE])
def test_every_published_figure_is_recomputed_from_its_translations(folder):
    """Each figure of report.json (BLEU per run, on test and the held-out dev half; Δ, p and run pairs against the
    baseline and the control) or choice.json (the ranking, the choice, the comparisons after it), from the
    translations committed with it (sacreBLEU; its paired test with its fixed seed)."""
    assert recomputation_problems(folder) == []


def sample_report():
    """A report with a selection, a control and a baseline, as `tune --select-on half` writes one."""
    from moses_integration.route.report_file import RouteReport, StageResult
    stage = StageResult
    return RouteReport("nrefs:1", {"source": "dev.en", "reference": "dev.fr", "sentences": 10},
                         {"source": "test.en", "reference": "test.fr", "sentences": 10}, 3, (
        stage("baseline", "moses.ini as given", (44.36, 44.48, 44.16), ("b1", "b2", "b3"), (3, 5, 4), {}, 9.5,
              dev_bleu=(40.0, 40.5, 41.0), dev_hypotheses=("d1", "d2", "d3")),
        stage("retuned", "the control", (44.36, 44.48, 44.26), ("c1", "c2", "c3"), (1, 1, 1), delta=0.0333,
              p_value=1.0, pairs_agreeing=0, pairs=9, dev_bleu=(40.1, 40.2, 40.3), dev_hypotheses=("e1", "e2", "e3"),
              dev_delta=-0.3, dev_p_value=0.5, dev_pairs_agreeing=0, dev_pairs=9),
        stage("rescored", "rescored with cslm", (46.47, 46.34, 46.01), ("r1", "r2", "r3"), (1, 1, 1),
              {"CSLM0": 0.057}, delta=1.94, p_value=0.0005, pairs_agreeing=9, pairs=9, control="retuned",
              control_delta=1.27, control_p_value=0.0267, control_pairs_agreeing=7, control_pairs=9,
              dev_bleu=(42.0, 42.5, 42.25), dev_hypotheses=("f1", "f2", "f3"), dev_delta=1.75, dev_p_value=0.001,
              dev_pairs_agreeing=8, dev_pairs=9, dev_control_delta=2.05, dev_control_p_value=0.0002,
              dev_control_pairs_agreeing=9, dev_control_pairs=9)),
        selection={"on": "half", "tuned_on": 5, "held_out": 5, "chosen": "rescored"})


def test_a_doctored_table_is_caught(tmp_path):
    """The check of a table against its report: the report's own figures pass, each figure changed fails, naming
    the stage, the column and both figures."""
    from moses_integration.route.report_file import write_report
    report = sample_report()
    (tmp_path / "docs" / "results" / "x").mkdir(parents=True)
    write_report(str(tmp_path / "docs" / "results" / "x" / "report.json"), report)
    table = [line for line in markdown(report).splitlines() if line.startswith("|")]
    keep = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12, 13, 14, 15, 16, 17, 18]  # every column but the speed
    page = tmp_path / "page.md"

    def problems(rows: list[str], name: str = "x") -> list[str]:
        page.write_text(f"# A\n\n<!-- report: docs/results/{name} -->\n" + "\n".join(rows) + "\n")
        [(found, before, _)] = tables(page)
        return report_table_problems(found, before, tmp_path)

    def columns(row: str, kept: list[int]) -> str:
        parts = re.split(r"(?<!\\)\|", row.strip())[1:-1]
        return "|" + "|".join(parts[at] for at in kept) + "|"

    rows = [columns(row, keep) for row in table]
    rows[4] = rows[4].replace("| rescored: rescored with cslm |", "| **`rescored`**: the CSLM on the lists |")
    assert problems(rows) == []
    assert problems([columns(row, [0, 2, 1, 3]) for row in table]) == []  # any order, any subset
    for wrong, right, column in (("46.27 ± 0.24", "46.27 ± 0.23", "test BLEU (mean ± std)"),
                                 ("+1.27", "+1.28", "Δ vs its control"), ("0.0005", "0.0004", "p (median runs)"),
                                 ("8 of 9 |", "9 of 9 |", "pairs"), ("42.25 ± 0.25", "42.25 ± 0.20", "dev-half BLEU")):
        doctored = rows[:4] + [rows[4].replace(wrong, right, 1)]
        assert doctored[4] != rows[4], wrong
        found = problems(doctored)
        assert len(found) == 1 and found[0].startswith(f"rescored, '{column}") and repr(right.strip(" |")) in found[0]
    assert problems(rows[:2] + [rows[3].replace("retuned:", "retuned2:")])[0].startswith("'retuned2: the control' "
                                                                                          "names no stage")
    extra = [rows[0] + " BLEU elsewhere |", rows[1] + "---|", rows[3] + " 45.1 |"]
    assert problems(extra) == ["retuned, 'BLEU elsewhere': '45.1', in a column that is not the report's"]
    assert problems(rows, "missing") == ["docs/results/missing: no report.json"]
    folder = tmp_path / "docs" / "results" / "x"
    (folder / "report.md").write_text(markdown(report), encoding="utf-8")
    (folder / "plan.json").write_text('{"files": {"ini": ["moses.ini", 10]}}\n', encoding="utf-8")
    assert published_problems(folder) == ["x: no COMMANDS.md or commands.sh with the exact commands"]
    (folder / "COMMANDS.md").write_text("mosesrnn tune dev.en dev.fr moses.ini ...\n", encoding="utf-8")
    assert published_problems(folder)[0] == ("x: dev.fr is not committed in the folder (publish it with `mosesrnn "
                                             "mert-report WORK --publish`, or mark its COMMANDS.md <!-- unverifiable: "
                                             "why -->)")
    (folder / "COMMANDS.md").write_text("<!-- unverifiable: made up -->\nmosesrnn tune dev.en ...\n", encoding="utf-8")
    assert published_problems(folder) == []
    (folder / "plan.json").write_text('{"files": {"ini": ["/home/me/moses.ini", 10]}}\n', encoding="utf-8")
    (folder / "report.md").write_text(markdown(report).replace("44.33", "44.34"), encoding="utf-8")
    assert published_problems(folder) == ["x/report.md is not its report.json's (mosesrnn mert-report WORK --publish)",
                                          "x/plan.json holds a machine's path"]


def test_a_choice_among_tunings_is_checked_against_their_reports(tmp_path):
    """A table of ``choose_on_dev.py --publish``: a tuning's stage is its report's, a single is choice.json's."""
    from moses_integration.route.report_file import write_report
    results = tmp_path / "docs" / "results"
    (results / "x").mkdir(parents=True)
    (results / "choice").mkdir()
    write_report(str(results / "x" / "report.json"), sample_report())
    (results / "choice" / "choice.json").write_text(json.dumps({"tunings": ["x"], "singles": {"nmt": {
        "name": "nmt", "dev-half BLEU": "41.50 (1 run)", "test BLEU": "40.25 (1 run)", "dev": "nmt.dev.hyp",
        "test": "nmt.test.hyp"}}}))
    (results / "choice" / "choice.md").write_text(
        "Ranked:\n\n| stage | dev-half BLEU (mean ± std) |\n|---|---|\n| **x: rescored** | 42.25 ± 0.25 |\n"
        "| nmt (single) | 41.50 (1 run) |\n| x: baseline | 40.50 ± 0.50 |\n\nChosen on dev: **x: rescored**\n")
    header = ["| stage | dev-half BLEU (mean ± std) | test BLEU (mean ± std) |", "|---|---|---|"]

    def problems(*rows: str) -> list[str]:
        return report_table_problems(header + list(rows), "<!-- report: docs/results/choice -->", tmp_path)

    assert problems("| **x: rescored**: the CSLM | 42.25 ± 0.25 | 46.27 ± 0.24 |",
                    "| nmt (single): beam 20 | 41.50 (1 run) | 40.25 (1 run) |",
                    "| x: baseline | 40.50 ± 0.50 | 44.33 ± 0.16 |") == []
    assert problems("| nmt (single) | 41.50 (1 run) | 40.52 (1 run) |") == [
        "nmt (single), 'test BLEU (mean ± std)': '40.52 (1 run)' in the table, '40.25 (1 run)' in choice/choice.json"]
    assert problems("| x: rescored | 42.25 ± 0.25 | 46.27 ± 0.25 |")[0].startswith("x: rescored, 'test BLEU")
    assert "names no stage of x's report" in problems("| x: reranked | 42.25 ± 0.25 | 46.27 ± 0.24 |")[0]
    assert "neither a stage of the tunings of choice (x)" in problems("| y: rescored | 1 | 2 |")[0]
    assert problems("| x: rescored | 42.25 ± 0.25 | 46.27 ± 0.24 |",
                    "| **nmt (single)** | 41.50 (1 run) | 40.25 (1 run) |") == [
        "'nmt (single)' is bold, but the stage chosen on dev is 'x: rescored'"]
