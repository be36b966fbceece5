"""Every command against every hostile case: one table of commands (COMMANDS), one test per case.

Each case expects what a careful tool does: exit status 1 (2 when click's option checks refuse it;
130 when interrupted), one ``Error:`` line naming the file (and line where one applies), no traceback,
no input changed, and nothing half-written left behind. A row holds one run that succeeds; what the
run reads and writes is not written in the row but read from the command's own parameters (their
roles, :mod:`mosesrnn.cli.paths`), so the cases follow what each command declares: every model option
gets the files that are not models and the model of the other kind, every output folder an input
inside it, every input an empty file. A command added later is tested by adding one row to COMMANDS;
``test_every_command_has_a_row`` fails until it has one.

The files are real: slices of the Tatoeba en->fr Moses system (table, n-best lists, sources,
references, moses.ini) and a tiny model file, copied afresh into each test's folder.
"""
from __future__ import annotations

import gzip
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

import click
import pytest
from click.testing import CliRunner
from conftest import DATA
from scoring_helpers import TABLE, save_tiny_joint_model, save_tiny_model

from mosesrnn.cli import main
from mosesrnn.cli.common import declared_paths
from mosesrnn.cslm.config import CSLMConfig
from mosesrnn.cslm.model import CSLM
from mosesrnn.cslm.model_file import TrainedCSLM, save_cslm
from mosesrnn.cslm.scoring import text_stats
from mosesrnn.io.locks import OutputLock
from mosesrnn.io.roles import Role
from mosesrnn.models import CSLM as CSLM_KIND
from mosesrnn.models import JOINT as JOINT_KIND
from mosesrnn.text.codec import Codec
from mosesrnn.text.tokenizers import MosesWords
from mosesrnn.text.vocab import Vocabulary

NBEST = DATA / "nbest"
TINY_LM = ["--order", "3", "--vocab-size", "50", "--embed-dim", "4", "--hidden", "8", "--max-updates", "2",
           "--valid-every", "2", "--valid-share", "0.2", "--batch-size", "8"]
TINY_BILM = ["--preset", "small", "--order", "2", "--source-window", "1", "--vocab-size", "50", "--source-vocab-size",
             "50", "--embed-dim", "4", "--hidden", "8", "--max-updates", "2", "--valid-every", "2", "--valid-share",
             "0.2", "--batch-size", "8", "--noise-samples", "5"]
TINY_TRAIN = ["--embed-dim", "4", "--hidden-dim", "8", "--maxout-units", "4", "--output-rank", "4",
              "--vocab-size", "60", "--max-updates", "2", "--valid-every", "2", "--valid-size", "20"]


def command_of(args) -> tuple[click.Command, list[str]]:
    """The command ``args`` run (``lm train`` inside the ``lm`` group), and its own arguments."""
    command, rest = main, list(args)
    while isinstance(command, click.Group):
        command, rest = command.get_command(click.Context(command), rest[0]), rest[1:]
    return command, rest


@dataclass(frozen=True)
class Row:
    """A command in a run that succeeds on the workspace.

    ``args`` holds ``{name}`` placeholders for the workspace's files (see :func:`workspace_files`).
    ``texts``: the placeholders of the text inputs it decodes line by line (``name:plain`` if it does
    not read gzip). ``clash``: (output placeholder, value that makes it one of the inputs);
    ``writes``: whether our own writer (not a Moses program) writes its outputs. What it reads and
    writes comes from its parameters: :meth:`roles`.
    """

    args: tuple[str, ...]
    texts: tuple[str, ...] = ()
    clash: tuple[str, str] | None = None
    writes: bool = True

    @property
    def name(self) -> str:
        """The command as typed: ``score``, or ``lm train`` for a command of a group."""
        command = main.get_command(click.Context(main), self.args[0])
        return " ".join(self.args[:2]) if isinstance(command, click.Group) else self.args[0]

    def roles(self) -> list[tuple[Role, str]]:
        """``(role, placeholder)`` of every path the run names, as the command's parameters declare them."""
        command, rest = command_of(self.args)
        ctx = command.make_context(command.name, rest, resilient_parsing=True)
        return [(role, value[1:-1]) for role, value in declared_paths(command, ctx.params)
                if value.startswith("{") and value.endswith("}")]

    def placeholders(self, *names: str) -> tuple[str, ...]:
        """The placeholders of the paths whose role is one of ``names`` (``output``, ``model``...)."""
        return tuple(dict.fromkeys(placeholder for role, placeholder in self.roles() if role.name in names))

    @property
    def outputs(self) -> tuple[str, ...]:
        return self.placeholders("output", "output prefix", "program output")

    @property
    def folders(self) -> tuple[str, ...]:
        return self.placeholders("output folder")

    @property
    def models(self) -> tuple[str, ...]:
        return self.placeholders("model")

    @property
    def inputs(self) -> tuple[str, ...]:
        return self.placeholders("input")

    def lock_suffix(self, placeholder: str) -> str:
        """An output named by a prefix: the suffix of the file that is locked."""
        return next((role.suffixes[0] for role, name in self.roles() if name == placeholder and role.suffixes), "")


COMMANDS = [
    Row(("vocab", "{table}", "-o", "{outdir}", "--size", "50"), texts=("table",), clash=("outdir", "{table}")),
    Row(("train", "--corpus", "{corpus_en}", "{corpus_fr}", "-o", "{outdir}", *TINY_TRAIN),
        texts=("corpus_en", "corpus_fr"), clash=("outdir", "{corpus_en}")),
    Row(("score", "{table}", "-m", "{model}", "-o", "{out}"), texts=("table",), clash=("out", "{table}")),
    Row(("merge", "{part1}", "{part2}", "-o", "{out_gz}"), clash=("out_gz", "{part1}")),
    Row(("prune", "{scored}", "--top", "2", "-o", "{out}"), texts=("scored",), clash=("out", "{scored}")),
    Row(("nbest", "{nbest}", "--source", "{source}", "-m", "{model}", "-o", "{out}"), texts=("nbest", "source"),
        clash=("out", "{source}")),
    Row(("mert", "{nbest}", "--refs", "{refs}", "-o", "{out}", "--restarts", "0", "--random-directions", "0"),
        texts=("nbest", "refs"), clash=("out", "{refs}")),
    Row(("rerank", "{nbest}", "--weights", "{weights}", "-o", "{out}"), texts=("nbest", "weights"),
        clash=("out", "{weights}")),
    Row(("translate", "-m", "{model}", "{source}", "-o", "{out}", "--beam", "2"), texts=("source",),
        clash=("out", "{source}")),
    Row(("sample", "-m", "{model}", "{source}", "-n", "2"), texts=("source",)),
    Row(("augment", "{table}", "-m", "{model}", "-o", "{out}", "--beam", "2", "--per-source", "1",
         "--max-sources", "2"), texts=("table",), clash=("out", "{table}")),
    Row(("topk", "{table}", "-m", "{model}", "--num-sources", "2", "--min-words", "1", "--tsv", "{out}"),
        texts=("table",), clash=("out", "{table}")),
    Row(("perplexity", "-m", "{model}", "{corpus_en}", "{corpus_fr}"), texts=("corpus_en", "corpus_fr")),
    Row(("embed", "-m", "{model}", "--phrases", "{phrases}", "--max-phrases", "5", "--projection", "pca",
         "-o", "{prefix}"), texts=("phrases",), clash=("prefix", "{phrases_prefix}")),
    Row(("report", "{scored}", "-o", "{out}"), texts=("scored",), clash=("out", "{scored}")),
    Row(("moses-ini", "{ini}", "--table", "{scored}", "-o", "{out}"), texts=("ini:plain",), clash=("out", "{ini}")),
    # binarize reads the first line only (processPhraseTableMin reads the rest): no text cases
    Row(("binarize", "{plain_minphr}", "-o", "{out_minphr}", "--moses-bin", "{nowhere}"),
        clash=("out_minphr", "{plain_minphr_prefix}"), writes=False),
    Row(("tune", "{source}", "{refs}", "{ini}", "--test-src", "{source}", "--test-ref", "{refs}", "--work-dir",
         "{outdir}", "--moses-bin", "{nowhere}", "--moses-scripts", "{nowhere}"), clash=("outdir", "{refs}"),
        writes=False),
    Row(("lm", "train", "{corpus_fr}", "-o", "{outdir}", *TINY_LM), texts=("corpus_fr",),
        clash=("outdir", "{corpus_fr}")),
    Row(("lm", "export", "-m", "{lm}", "-o", "{out}"), clash=("out", "{lm}")),
    Row(("perplexity", "-m", "{lm}", "{corpus_fr}"), texts=("corpus_fr",)),
    Row(("bilm", "train", "{bi_en}", "{bi_fr}", "{bi_align}", "-o", "{outdir}", *TINY_BILM),
        texts=("bi_en", "bi_fr", "bi_align"), clash=("outdir", "{bi_fr}")),
    Row(("bilm", "export", "-m", "{bilm}", "-o", "{out}"), clash=("out", "{bilm}")),
    Row(("perplexity", "-m", "{bilm}", "{bi_en}", "{bi_fr}", "{bi_align}"), texts=("bi_en", "bi_fr", "bi_align")),
    Row(("mert-report", "{work}", "--apply", "last", "--ini", "{ini}", "-o", "{out}"), texts=("ini:plain",),
        clash=("out", "{ini}")),
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
    assert set(all_command_names(main)) == {row.name for row in COMMANDS}


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
    codec = Codec(MosesWords(), Vocabulary(["<s>", "la", "maison"]))
    lm = CSLM(CSLMConfig(len(codec.vocabulary), order=3, embed_dim=4, hidden_dims=(8,)))  # freshly initialised:
    stats = text_stats(TrainedCSLM(lm, codec, {}, ""), ["la maison", "la la maison"])  # log Z about 0
    save_cslm(str(folder / "lm.pt"), lm, codec, {"log_z_mean": stats.log_z_mean})
    for name, suffix in (("bi.en", "tok.en"), ("bi.fr", "tok.fr"), ("bi.align", "align")):
        (folder / name).write_bytes(b"".join((DATA / f"tatoeba.train2k.{suffix}").read_bytes().splitlines(True)[:200]))
    save_tiny_joint_model(str(folder / "bilm.pt"))
    shutil.copy(NBEST / "tatoeba.dev30.untuned.100best.gz", folder / "nbest.gz")
    shutil.copy(NBEST / "tatoeba.dev30.tok.en", folder / "source.txt")
    shutil.copy(NBEST / "tatoeba.dev30.fr", folder / "refs.txt")
    shutil.copy(NBEST / "tatoeba.dev.mert-iter1.weights", folder / "weights.txt")
    english = gzip.decompress((DATA / "tatoeba.dev400.en.gz").read_bytes()).splitlines(True)[:200]
    (folder / "corpus.en.gz").write_bytes(gzip.compress(b"".join(english)))
    (folder / "corpus.fr").write_bytes(b"".join((DATA / "tatoeba.dev400.fr").read_bytes().splitlines(True)[:200]))
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
                 prefix="map", outdir="outdir", nowhere="no-moses-here", lm="lm.pt", bi_en="bi.en", bi_fr="bi.fr",
                 bi_align="bi.align", bilm="bilm.pt")
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
    return [row.name + ("-cslm" if "{lm}" in row.args else "-bilm" if "{bilm}" in row.args and row.name == "perplexity"
                        else "") for row in rows]


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
    target = output_value(ws, placeholder) + row.lock_suffix(placeholder)
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
    if row.name == "score" and "run the same command to continue" in result.stderr:  # kept, to continue
        assert left == {"out.txt.part", "out.txt.progress.json"}
    elif row.name in ("train", "lm train"):  # an interrupted training keeps its state to continue
        assert all(name.startswith("outdir/") for name in left)
    else:
        assert left == set(), f"left behind: {left}"
    assert {name: digest for name, digest in snapshot(ws).items() if name in before} == before


# -- what each command's parameters declare ---------------------------------------------------------


def _wrong_kind_cases() -> list[tuple[Row, str]]:
    return [(row, placeholder) for row in COMMANDS for role, placeholder in row.roles()
            if role.name == "model" and role.model_kind is not None]


@pytest.mark.parametrize("row,placeholder", _wrong_kind_cases(), ids=[f"{ids([r])[0]}-{p}" for r, p in
                                                                       _wrong_kind_cases()])
def test_a_model_of_the_other_kind_is_one_line(row, placeholder, ws):
    role = next(role for role, name in row.roles() if name == placeholder)
    other = ws / ("model.pt" if role.model_kind == CSLM_KIND else "lm.pt")
    before = snapshot(ws)
    result = run(row, ws, **{placeholder: str(other)})
    wanted = {CSLM_KIND: "not a CSLM", JOINT_KIND: "not a joint model"}.get(role.model_kind,
                                                                          "not an RNN Encoder-Decoder")
    assert_refused(result, before, snapshot(ws), str(other), wanted)


def _inside_cases() -> list[tuple[Row, str, str]]:
    """(row, input placeholder, name inside its output folder) for every row writing into a folder."""
    cases = []
    for row in COMMANDS:
        inside = [(placeholder, role.inside) for role, placeholder in row.roles() if role.inside]
        inputs = row.inputs
        if inside and inputs:
            cases.append((row, inputs[-1], next(name for name in inside[0][1] if "." in name)))
    return cases


@pytest.mark.parametrize("row,placeholder,name", _inside_cases(), ids=[f"{ids([r])[0]}-{p}" for r, p, _ in
                                                                        _inside_cases()])
def test_an_input_that_the_run_writes_inside_its_output_folder_is_refused(row, placeholder, name, ws):
    """``lm train CORPUS -o lm/ --valid lm/best.pt`` would train on, then overwrite, its own validation text."""
    folder = Path(workspace_files(ws)[row.folders[0]])
    folder.mkdir()
    inside = folder / name
    shutil.copy(workspace_files(ws)[placeholder], inside)
    before = snapshot(ws)
    result = run(row, ws, **{placeholder: str(inside)})
    assert_refused(result, before, snapshot(ws), str(inside), "which this run writes")


def _input_cases() -> list[tuple[Row, str]]:
    return [(row, placeholder) for row in COMMANDS for placeholder in row.inputs]


@pytest.mark.parametrize("row,placeholder", _input_cases(), ids=[f"{ids([r])[0]}-{p}" for r, p in _input_cases()])
def test_an_empty_input_gives_a_result_or_one_line(row, placeholder, ws):
    """An empty file is read as what it is: an empty table scores to an empty table, an empty text has no
    perplexity (exit 1, the file named); never a traceback, a ``nan``, or a file half-written."""
    path = Path(workspace_files(ws)[placeholder])
    path.write_bytes(b"")
    before = snapshot(ws)
    result = run(row, ws)
    assert result.exit_code in (0, 1), (result.exit_code, result.output, result.exception)
    assert "Traceback" not in result.output and "nan" not in result.output.lower().split()
    if result.exit_code == 1:
        assert_refused(result, before, snapshot(ws), str(path))


def _state_cases() -> list[Row]:
    return [row for row in COMMANDS if any("state.pt" in role.inside for role, _ in row.roles())]


@pytest.mark.parametrize("kind", ["text", "foreign pickle", "truncated"])
@pytest.mark.parametrize("row", _state_cases(), ids=ids(_state_cases()))
def test_a_damaged_training_state_is_one_line(row, kind, ws):
    import pickle
    folder = Path(workspace_files(ws)[row.folders[0]])
    assert run(row, ws).exit_code == 0  # a run to continue
    state = folder / "state.pt"
    state.write_bytes({"text": b"not a state\n", "foreign pickle": pickle.dumps({"version": print}),
                       "truncated": state.read_bytes()[:100]}[kind])
    before = snapshot(ws)
    result = run(row, ws, **({"outdir": str(folder)}))
    assert_refused(result, before, snapshot(ws), f"{state} is not a training state to resume from", "--restart")


# -- files that belong together: stdout has one owner; an input's companions are inputs ------------------------


def _stdout_cases() -> list[tuple[Row, tuple[click.Parameter, ...]]]:
    """(a row, the outputs that may be '-') of every command with two or more of them."""
    cases, seen = [], set()
    for row in COMMANDS:
        command, _ = command_of(row.args)
        outputs = tuple(param for param in command.params if isinstance(getattr(param.type, "role", None), Role)
                        and param.type.role.writes and param.type.allow_dash)
        if len(outputs) >= 2 and row.name not in seen:
            cases.append((row, outputs))
        seen.add(row.name)
    return cases


def test_the_commands_with_two_outputs_are_walked():
    assert {"nbest", "prune"} <= {row.name for row, _ in _stdout_cases()}


@pytest.mark.parametrize("row,outputs", _stdout_cases(), ids=[row.name for row, _ in _stdout_cases()])
def test_two_outputs_on_stdout_are_refused(row, outputs, ws):
    """``nbest --word-scores - -o -`` would interleave the two outputs' lines on stdout."""
    args = [arg.format(**workspace_files(ws)) for arg in row.args]
    for param in outputs[:2]:
        given = [index for index, arg in enumerate(args) if arg in param.opts]
        if given:
            args[given[0] + 1] = "-"
        else:
            args += [param.opts[-1], "-"]
    before = snapshot(ws)
    result = CliRunner().invoke(main, args)
    assert_refused(result, before, snapshot(ws), *("/".join(param.opts) for param in outputs[:2]),
                   "only one output can go to stdout")


def _companion_cases() -> list[tuple[Row, str, str]]:
    """(row, input placeholder, companion suffix) for every input read with companions (a table's sidecar)."""
    return [(row, placeholder, suffix) for row in COMMANDS if row.placeholders("output")
            for role, placeholder in row.roles() if role.reads for suffix in role.companions]


@pytest.mark.parametrize("row,placeholder,suffix", _companion_cases(),
                         ids=[f"{ids([r])[0]}-{p}{s}" for r, p, s in _companion_cases()])
def test_an_output_that_is_an_inputs_companion_is_refused(row, placeholder, suffix, ws):
    """``prune T -o T.json`` would overwrite the sidecar it reads the rnn column from: refused like any input."""
    companion = workspace_files(ws)[placeholder] + suffix
    if not os.path.exists(companion):
        shutil.copy(workspace_files(ws)["scored"] + ".json", companion)
    before = snapshot(ws)
    result = run(row, ws, **{row.placeholders("output")[0]: companion})
    assert_refused(result, before, snapshot(ws), f"{companion} is read with the input")


def _kept_cases() -> list[tuple[Row, str, str]]:
    """(row, output placeholder, suffix) for every file an output that is kept writes: itself and each companion."""
    return [(row, placeholder, suffix) for row in COMMANDS for role, placeholder in row.roles() if role.keeps
            for suffix in ("", *role.companions)]


def test_the_kept_outputs_are_walked():
    assert {row.name for row, _, _ in _kept_cases()} == {"lm export", "bilm export"}


@pytest.mark.parametrize("row,placeholder,suffix", _kept_cases(),
                         ids=[f"{ids([r])[0]}-{p}{s or '-itself'}" for r, p, s in _kept_cases()])
def test_an_existing_kept_output_or_companion_is_replaced_only_with_force(row, placeholder, suffix, ws):
    """``bilm export -o corpus`` would replace the user's corpus.source and corpus.target, which it writes beside
    corpus: each file of a kept output is checked as the output itself is."""
    existing = Path(output_value(ws, placeholder) + suffix)
    existing.write_text("the user's own file\n", encoding="utf-8")
    before = snapshot(ws)
    result = run(row, ws)
    assert_refused(result, before, snapshot(ws), f"{existing}", "exists", "--force")
    forced = CliRunner().invoke(main, [arg.format(**workspace_files(ws)) for arg in row.args] + ["--force"])
    assert forced.exit_code == 0, forced.output
    assert existing.read_text(encoding="utf-8") != "the user's own file\n"


def _number_options() -> list[tuple[str, click.Option]]:
    """(command name, option) of every option that takes a number with a fraction."""
    found = []
    for name in all_command_names(main):
        command, _ = command_of(name.split())
        found += [(name, param) for param in command.params if isinstance(param.type, click.types.FloatParamType)]
    return found


def test_every_number_option_refuses_nan_and_infinity():
    """click's FloatRange lets nan (and inf past an open top) through; every float option is of the one type
    that refuses them."""
    from mosesrnn.cli.common import FiniteFloat
    assert len(_number_options()) > 15
    assert [f"{name} {param.opts[0]}" for name, param in _number_options() if not isinstance(param.type, FiniteFloat)
            ] == []


@pytest.mark.parametrize("args", [
    ("bilm", "train", "{bi_en}", "{bi_fr}", "{bi_align}", "-o", "{outdir}", "--estimator", "softmax", "--self-norm",
     "nan"),
    ("train", "--corpus", "{corpus_en}", "{corpus_fr}", "-o", "{outdir}", "--self-norm", "inf"),
    ("lm", "train", "{corpus_fr}", "-o", "{outdir}", "--learning-rate", "inf"),
    ("moses-ini", "{ini}", "--table", "{scored}", "--weights", "0.1,nan", "-o", "{out}"),
    ("moses-ini", "{ini}", "--bilm", "{bilm}", "--bilm-weight", "nan", "-o", "{out}"),
    ("prune", "{scored}", "--margin", "inf", "-o", "{out}"),
], ids=["bilm-self-norm-nan", "train-self-norm-inf", "lm-learning-rate-inf", "moses-ini-weights-nan",
        "moses-ini-bilm-weight-nan", "prune-margin-inf"])
def test_a_number_that_is_not_finite_is_refused_before_any_work(args, ws):
    before = snapshot(ws)
    result = CliRunner().invoke(main, [arg.format(**workspace_files(ws)) for arg in args])
    assert_refused(result, before, snapshot(ws), "is not a finite number")
    assert result.exit_code == 2 and not (ws / "outdir").exists()


@pytest.mark.parametrize("row", [row for row in COMMANDS if row.name in ("train", "lm train", "bilm train")],
                         ids=lambda row: row.name)
def test_a_diverging_run_advises_only_options_its_command_has(row, ws):
    """A finite but huge --self-norm makes the first update's loss infinite: the advice names options of the
    command that ran (`lm train` and `bilm train` were told to use --clip-norm, which they lacked)."""
    huge = ["--self-norm", "1e308"] + (["--estimator", "softmax"] if row.name != "train" else [])
    result = CliRunner().invoke(main, [arg.format(**workspace_files(ws)) for arg in row.args] + huge)
    assert result.exit_code == 1 and "the loss became inf at update 1" in result.output, result.output
    command, _ = command_of(row.args)
    options = {opt for param in command.params for opt in param.opts}
    advised = set(re.findall(r"--[a-z-]+", result.output.split("the loss became")[1]))
    assert advised and advised <= options
