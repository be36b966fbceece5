"""Every command against every hostile case: one table of commands (COMMANDS), one test per case.

Each case expects what a careful tool does: exit status 1 (2 when click's option checks refuse it;
130 when interrupted), one ``Error:``
line naming the file (and line where one applies), no traceback, no input changed, and nothing
half-written left behind. A command added later is tested by adding one row to COMMANDS;
``test_every_command_has_a_row`` fails until it has one.

The files are real: slices of the Tatoeba en->fr Moses system (table, n-best lists, sources,
references, moses.ini) and a tiny model file, copied afresh into each test's folder.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import shutil
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import TABLE, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.lm.config import CSLMConfig
from mosesrnn.lm.model import CSLM
from mosesrnn.lm.model_file import save_language_model
from mosesrnn.locks import OutputLock
from mosesrnn.text.codec import Codec
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import Vocabulary

NBEST = DATA / "nbest"
TINY_LM = ["--order", "3", "--vocab-size", "50", "--embed-dim", "4", "--hidden", "8", "--max-updates", "2",
           "--valid-every", "2", "--valid-share", "0.2", "--batch-size", "8"]
TINY_TRAIN = ["--embed-dim", "4", "--hidden-dim", "8", "--maxout-units", "4", "--output-rank", "4",
              "--vocab-size", "60", "--max-updates", "2", "--valid-every", "2", "--valid-size", "20"]


@dataclass(frozen=True)
class Row:
    """A command in a run that succeeds on the workspace, and what it reads and writes.

    ``args`` holds ``{name}`` placeholders for the workspace's files (see :func:`workspace_files`).
    ``outputs``/``folders``: the placeholders of the files/folders it writes; ``models``: of the model
    files it reads; ``texts``: of the text inputs it decodes line by line (``name:plain`` if it does
    not read gzip). ``clash``: (output placeholder, value that makes it one of the inputs);
    ``writes``: whether our own writer (not a Moses program) writes its outputs; ``lock_suffix``: see below.
    """

    args: tuple[str, ...]
    outputs: tuple[str, ...] = ()
    folders: tuple[str, ...] = ()
    models: tuple[str, ...] = ()
    texts: tuple[str, ...] = ()
    clash: tuple[str, str] | None = None
    writes: bool = True
    lock_suffix: str = ""  # an output named by a prefix: the suffix of the file that is locked

    @property
    def name(self) -> str:
        """The command as typed: ``score``, or ``lm train`` for a command of a group."""
        command = main.get_command(click.Context(main), self.args[0])
        return " ".join(self.args[:2]) if isinstance(command, click.Group) else self.args[0]


COMMANDS = [
    Row(("vocab", "{table}", "-o", "{outdir}", "--size", "50"), folders=("outdir",), texts=("table",),
        clash=("outdir", "{table}")),
    Row(("train", "--corpus", "{corpus_en}", "{corpus_fr}", "-o", "{outdir}", *TINY_TRAIN), folders=("outdir",),
        texts=("corpus_en", "corpus_fr"), clash=("outdir", "{corpus_en}")),
    Row(("score", "{table}", "-m", "{model}", "-o", "{out}"), outputs=("out",), models=("model",),
        texts=("table",), clash=("out", "{table}")),
    Row(("merge", "{part1}", "{part2}", "-o", "{out_gz}"), outputs=("out_gz",), clash=("out_gz", "{part1}")),
    Row(("nbest", "{nbest}", "--source", "{source}", "-m", "{model}", "-o", "{out}"), outputs=("out",),
        models=("model",), texts=("nbest", "source"), clash=("out", "{source}")),
    Row(("mert", "{nbest}", "--refs", "{refs}", "-o", "{out}", "--restarts", "0", "--random-directions", "0"),
        outputs=("out",), texts=("nbest", "refs"), clash=("out", "{refs}")),
    Row(("rerank", "{nbest}", "--weights", "{weights}", "-o", "{out}"), outputs=("out",),
        texts=("nbest", "weights"), clash=("out", "{weights}")),
    Row(("translate", "-m", "{model}", "--input", "{source}", "-o", "{out}", "--beam", "2"), outputs=("out",),
        models=("model",), texts=("source",), clash=("out", "{source}")),
    Row(("sample", "-m", "{model}", "--input", "{source}", "-n", "2"), models=("model",), texts=("source",)),
    Row(("augment", "{table}", "-m", "{model}", "-o", "{out}", "--beam", "2", "--per-source", "1",
         "--max-sources", "2"), outputs=("out",), models=("model",), texts=("table",), clash=("out", "{table}")),
    Row(("topk", "{table}", "-m", "{model}", "--num-sources", "2", "--min-words", "1", "--tsv", "{out}"),
        outputs=("out",), models=("model",), texts=("table",), clash=("out", "{table}")),
    Row(("perplexity", "-m", "{model}", "{corpus_en}", "{corpus_fr}"), models=("model",),
        texts=("corpus_en", "corpus_fr")),
    Row(("embed", "-m", "{model}", "--phrases", "{phrases}", "--max-phrases", "5", "--projection", "pca",
         "-o", "{prefix}"), outputs=("prefix",), models=("model",), texts=("phrases",),
        clash=("prefix", "{phrases_prefix}"), lock_suffix=".png"),
    Row(("report", "{scored}", "-o", "{out}"), outputs=("out",), texts=("scored",), clash=("out", "{scored}")),
    Row(("moses-ini", "{ini}", "--table", "{scored}", "-o", "{out}"), outputs=("out",), texts=("ini:plain",),
        clash=("out", "{ini}")),
    # binarize reads the first line only (processPhraseTableMin reads the rest): no text cases
    Row(("binarize", "{plain_minphr}", "-o", "{out_minphr}", "--moses-bin", "{nowhere}"), outputs=("out_minphr",),
        clash=("out_minphr", "{plain_minphr_prefix}"), writes=False),
    Row(("mert-moses", "{source}", "{refs}", "{ini}", "--work-dir", "{outdir}", "--moses-bin", "{nowhere}",
         "--moses-scripts", "{nowhere}"), folders=("outdir",), clash=("outdir", "{refs}"), writes=False),
    Row(("lm", "train", "{corpus_fr}", "-o", "{outdir}", *TINY_LM), folders=("outdir",), texts=("corpus_fr",),
        clash=("outdir", "{corpus_fr}")),
    Row(("lm", "export", "{lm}", "-o", "{out}"), outputs=("out",), models=("lm",), clash=("out", "{lm}")),
    Row(("lm", "perplexity", "-m", "{lm}", "{corpus_fr}"), models=("lm",), texts=("corpus_fr",)),
    Row(("mert-report", "{work}", "--apply", "last", "--ini", "{ini}", "-o", "{out}"), outputs=("out",),
        texts=("ini:plain",), clash=("out", "{ini}")),
]


def all_command_names(group: click.Group, prefix: str = "") -> list[str]:
    """Every command of the ``mosesrnn`` group, subcommands of subgroups as ``group sub``."""
    names = []
    context = click.Context(group)
    for name in group.list_commands(context):
        command = group.get_command(context, name)
        if isinstance(command, click.Group):
            names += all_command_names(command, f"{prefix}{name} ")
        else:
            names.append(prefix + name)
    return names


def test_every_command_has_a_row():
    assert sorted(all_command_names(main)) == sorted(row.name for row in COMMANDS)


# -- the workspace ---------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def base(tmp_path_factory) -> Path:
    """Real input files for every row, made once; each test works on a copy (see ``ws``)."""
    folder = tmp_path_factory.mktemp("base")
    lines = gzip.decompress(Path(TABLE).read_bytes()).splitlines(True)[:300]
    (folder / "table.gz").write_bytes(gzip.compress(b"".join(lines)))
    (folder / "phrases.tsv").write_bytes(gzip.compress(b"".join(lines)))  # gzip is known by its bytes
    (folder / "table.minphr").write_bytes(b"".join(lines))  # a plain table that happens to be named so
    model = save_tiny_model(str(folder / "model.pt"))
    lm = CSLM(CSLMConfig(len(Vocabulary(["<s>", "la", "maison"])), order=3, embed_dim=4, hidden_dims=(8,)))
    save_language_model(str(folder / "lm.pt"), lm, Codec(MosesWords(), Vocabulary(["<s>", "la", "maison"])))
    shutil.copy(NBEST / "tatoeba.dev30.untuned.100best.gz", folder / "nbest.gz")
    shutil.copy(NBEST / "tatoeba.dev30.tok.en", folder / "source.txt")
    shutil.copy(NBEST / "tatoeba.dev30.fr", folder / "refs.txt")
    shutil.copy(NBEST / "tatoeba.dev.mert-iter1.weights", folder / "weights.txt")
    english = gzip.open(DATA / "tatoeba.dev400.en.gz").readlines()[:200]
    (folder / "corpus.en.gz").write_bytes(gzip.compress(b"".join(english)))
    (folder / "corpus.fr").write_bytes(b"".join((DATA / "tatoeba.dev400.fr").open("rb").readlines()[:200]))
    shutil.copy(DATA / "moses" / "tatoeba-en-fr.moses.ini", folder / "moses.ini")
    runner = CliRunner()
    for args in (["score", str(folder / "table.gz"), "-m", model, "-o", str(folder / "scored.gz")],
                 ["score", str(folder / "table.gz"), "-m", model, "--shard", "1/2", "-o", str(folder / "part1.gz")],
                 ["score", str(folder / "table.gz"), "-m", model, "--shard", "2/2", "-o", str(folder / "part2.gz")]):
        assert runner.invoke(main, args).exit_code == 0
    work = folder / "mert-work"
    work.mkdir()
    (work / "run1.moses.ini").write_bytes((folder / "moses.ini").read_bytes())
    (work / "run1.out").write_bytes((folder / "refs.txt").read_bytes())
    return folder


@pytest.fixture
def ws(base, tmp_path) -> Path:
    folder = tmp_path / "ws"
    shutil.copytree(base, folder)
    return folder


def workspace_files(ws: Path) -> dict[str, str]:
    """The value of every placeholder in the workspace ``ws``."""
    names = dict(table="table.gz", phrases="phrases.tsv", phrases_prefix="phrases", plain_minphr="table.minphr",
                 plain_minphr_prefix="table", out_gz="out.gz",
                 model="model.pt", nbest="nbest.gz", source="source.txt", refs="refs.txt", weights="weights.txt",
                 corpus_en="corpus.en.gz", corpus_fr="corpus.fr", ini="moses.ini", scored="scored.gz",
                 part1="part1.gz", part2="part2.gz", work="mert-work", out="out.txt", out_minphr="out.minphr",
                 prefix="map", outdir="outdir", nowhere="no-moses-here", lm="lm.pt")
    return {key: str(ws / value) for key, value in names.items()}


def run(row: Row, ws: Path, **values: str):
    files = {**workspace_files(ws), **values}
    return CliRunner().invoke(main, [arg.format(**files) for arg in row.args])


def snapshot(ws: Path) -> dict[str, str]:
    """Every file under ``ws`` and a hash of its bytes."""
    return {str(path.relative_to(ws)): hashlib.sha256(path.read_bytes()).hexdigest()
            for path in sorted(ws.rglob("*")) if path.is_file()}


def assert_refused(result, before: dict, after: dict, *mentions: str) -> None:
    """Exit 1 (2: refused by click's own option check, a usage error), one ``Error:`` line that
    mentions each of ``mentions``, no traceback, nothing changed."""
    assert result.exit_code in (1, 2), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output
    errors = [line for line in result.stderr.splitlines() if line.startswith("Error:")]
    assert len(errors) == 1, result.stderr
    for mention in mentions:
        assert mention in errors[0], (mention, errors[0])
    assert after == before, "inputs changed, or files were left behind"


def rows_with(*kinds: str) -> list[Row]:
    return [row for row in COMMANDS if any(getattr(row, kind) for kind in kinds)]


def ids(rows: list[Row]) -> list[str]:
    return [row.name for row in rows]


def output_value(ws: Path, placeholder: str) -> str:
    return workspace_files(ws)[placeholder]


# -- the cases -------------------------------------------------------------------------------------


@pytest.mark.parametrize("row", rows_with("clash"), ids=ids(rows_with("clash")))
def test_an_output_that_is_an_input_is_refused(row, ws):
    placeholder, value = row.clash
    clashing = value.format(**workspace_files(ws))
    before = snapshot(ws)
    result = run(row, ws, **{placeholder: clashing})
    assert_refused(result, before, snapshot(ws), clashing)


@pytest.mark.parametrize("row", rows_with("outputs", "folders"), ids=ids(rows_with("outputs", "folders")))
def test_an_output_under_a_regular_file_is_refused(row, ws):
    placeholder = (row.outputs + row.folders)[0]
    inside = os.path.join(workspace_files(ws)["refs"], "sub", "out")
    before = snapshot(ws)
    result = run(row, ws, **{placeholder: inside})
    assert_refused(result, before, snapshot(ws), workspace_files(ws)["refs"], "is a file, not a folder")


@pytest.mark.parametrize("kind", ["text", "truncated", "phrase table", "empty"])
@pytest.mark.parametrize("row", rows_with("models"), ids=ids(rows_with("models")))
def test_a_file_that_is_not_a_model_is_one_line(row, ws, kind):
    bad = ws / "bad.pt"
    model = (ws / "model.pt").read_bytes()
    bad.write_bytes({"text": b"la maison ||| the house ||| 0.5\n", "truncated": model[:len(model) // 2],
                     "phrase table": (ws / "table.gz").read_bytes(), "empty": b""}[kind])
    before = snapshot(ws)
    result = run(row, ws, **{placeholder: str(bad) for placeholder in row.models})
    assert_refused(result, before, snapshot(ws), f"{bad} is not a mosesrnn model file")


def _text_cases() -> list[tuple[Row, str]]:
    return [(row, text) for row in COMMANDS for text in row.texts]


@pytest.mark.parametrize("row,text", _text_cases(), ids=[f"{r.name}-{t}" for r, t in _text_cases()])
def test_invalid_utf8_names_the_file_and_line(row, text, ws):
    placeholder = text.split(":")[0]
    path = Path(workspace_files(ws)[placeholder])
    data = path.read_bytes()
    lines = (gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data).split(b"\n")
    line_no = next(number for number, line in enumerate(lines[1:], start=2) if b" " in line)
    lines[line_no - 1] = lines[line_no - 1].replace(b" ", b" \xff", 1)  # a byte that is never UTF-8
    damaged = b"\n".join(lines)
    path.write_bytes(gzip.compress(damaged) if data[:2] == b"\x1f\x8b" else damaged)
    before = snapshot(ws)
    result = run(row, ws)
    assert_refused(result, before, snapshot(ws), f"{path}:{line_no}:", "not valid utf-8")


def _gzip_cases() -> list[tuple[Row, str]]:
    return [(row, text) for row, text in _text_cases() if not text.endswith(":plain")]


@pytest.mark.parametrize("row,text", _gzip_cases(), ids=[f"{r.name}-{t}" for r, t in _gzip_cases()])
def test_truncated_gzip_names_the_file(row, text, ws):
    path = Path(workspace_files(ws)[text])
    data = path.read_bytes()
    plain = gzip.decompress(data) if data[:2] == b"\x1f\x8b" else data
    path.write_bytes(gzip.compress(plain)[:-20])  # the end of the deflate stream and the trailer are gone
    before = snapshot(ws)
    result = run(row, ws)
    assert_refused(result, before, snapshot(ws), f"{path}:", "compressed data")


@pytest.mark.parametrize("row", rows_with("outputs", "folders"), ids=ids(rows_with("outputs", "folders")))
def test_an_output_another_run_is_writing_is_refused(row, ws):
    placeholder = (row.outputs + row.folders)[0]
    target = output_value(ws, placeholder) + row.lock_suffix
    folder = placeholder in row.folders
    if folder:
        os.mkdir(target)
    lock = OutputLock(target, folder=folder)
    lock.acquire("mosesrnn the-other-run")
    try:
        before = snapshot(ws)
        result = run(row, ws)
        assert_refused(result, before, snapshot(ws), target, "being written by another run", "the-other-run")
    finally:
        lock.release()


def _writers() -> list[Row]:
    return [row for row in COMMANDS if row.writes and row.outputs + row.folders]


@pytest.mark.parametrize("row", _writers(), ids=ids(_writers()))
def test_interrupted_while_writing_leaves_nothing_half_written(row, ws, monkeypatch):
    """Ctrl-C just as the first output is about to take its name (its bytes all written)."""
    before = snapshot(ws)
    real_replace = os.replace

    def interrupted(source, destination, *args, **kwargs):
        if str(destination).startswith(str(ws)) and ".lock" not in str(destination):
            raise KeyboardInterrupt
        return real_replace(source, destination, *args, **kwargs)

    monkeypatch.setattr(os, "replace", interrupted)
    result = run(row, ws)
    assert result.exit_code == 130, (result.output, result.exception)
    assert "Traceback" not in result.output and "mosesrnn: interrupted" in result.stderr
    left = set(snapshot(ws)) - set(before)
    if row.name == "score" and "--resume" in result.stderr:  # kept after a checkpoint, to continue
        assert left == {"out.txt.part", "out.txt.progress.json"}
    elif row.name in ("train", "lm train"):  # an interrupted training keeps its state to continue
        assert all(name.startswith("outdir/") for name in left)
    else:
        assert left == set(), f"left behind: {left}"
    assert {name: digest for name, digest in snapshot(ws).items() if name in before} == before
