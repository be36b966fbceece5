"""The care is enforced, not promised: every command and API function declares its files, and only the
input/output floor opens them.

Three walks keep it so: over the source (no file opened, no torch file read or written, outside
``mosesrnn/io/``; ``moses_integration`` without the command line; one reader of each format), over
every command's parameters (a path is a :class:`~mosesrnn.cli.paths.PathParam` with its role), and
over the API (every path argument declared). Then the runtime check itself: a command that reads or
writes a file its parameters do not declare fails.
"""
from __future__ import annotations

import ast
import inspect
from pathlib import Path

import click
import pytest
from click.testing import CliRunner

import mosesrnn
from mosesrnn import api
from mosesrnn.cli import main
from mosesrnn.cli.common import Command
from mosesrnn.cli.paths import INPUT, OUTPUT, PathParam
from mosesrnn.formats.text_file import read_lines
from mosesrnn.io.atomic import atomic_file
from mosesrnn.io.job import Job, UndeclaredFileError
from mosesrnn.io.roles import input_file, output_file

ROOT = Path(__file__).parent.parent
PACKAGES = ("mosesrnn", "moses_integration")
FLOOR = ROOT / "mosesrnn" / "io"


def modules(*folders: str):
    for folder in folders:
        for path in sorted((ROOT / folder).rglob("*.py")):
            yield path, ast.parse(path.read_text(encoding="utf-8"))


def _call_name(node: ast.Call) -> str:
    """``open``, ``torch.load``, ``x.write_text``: the called name as written (attribute chains joined)."""
    parts, func = [], node.func
    while isinstance(func, ast.Attribute):
        parts.append(func.attr)
        func = func.value
    if isinstance(func, ast.Name):
        parts.append(func.id)
    return ".".join(reversed(parts))


FILE_CALLS = {"open", "io.open", "os.open", "gzip.open", "torch.load", "torch.save", "np.save", "np.load",
              "numpy.save", "numpy.load", "shutil.copy", "shutil.copyfile", "shutil.copy2", "os.replace", "os.rename"}
FILE_METHODS = {"write_text", "write_bytes", "read_text", "read_bytes", "savefig", "print_png"}


def test_only_the_input_output_floor_opens_files_and_reads_or_writes_torch_files():
    found = []
    for path, tree in modules(*PACKAGES):
        if path.is_relative_to(FLOOR):
            continue
        for node in ast.walk(tree):
            if isinstance(node, ast.Call):
                name = _call_name(node)
                if name in FILE_CALLS or ("." in name and name.rsplit(".", 1)[-1] in FILE_METHODS):
                    found.append(f"{path.relative_to(ROOT)}:{node.lineno}: {name}(...)")
    assert found == [], "files opened outside mosesrnn/io/:\n" + "\n".join(found)


def test_moses_integration_is_a_library_without_the_command_line():
    for path, tree in modules("moses_integration"):
        for node in ast.walk(tree):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                names = [alias.name for alias in node.names] if isinstance(node, ast.Import) else [node.module or ""]
                assert not any(name == "click" or name.startswith(("mosesrnn.cli", "click.")) for name in names), \
                    f"{path.relative_to(ROOT)}:{node.lineno} imports the command line"


def test_no_command_builds_its_own_job():
    """The command class builds the job from the parameters; a command body that made one could skip them."""
    for path, tree in modules("mosesrnn/cli"):
        if path.name == "common.py":
            continue
        calls = [node.lineno for node in ast.walk(tree) if isinstance(node, ast.Call) and _call_name(node) == "Job"]
        assert calls == [], f"{path.relative_to(ROOT)}:{calls}: a Job built by hand"


@pytest.mark.parametrize("function", ["read_weights", "read_sidecar", "write_sidecar", "read_model_file",
                                      "read_state_file", "weights_text"])
def test_one_definition_of_each_reader_and_writer(function):
    defined = [f"{path.relative_to(ROOT)}" for path, tree in modules(*PACKAGES) for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name == function]
    assert len(defined) == 1, defined


def test_the_version_lives_in_one_module():
    assigned = [f"{path.relative_to(ROOT)}" for path, tree in modules(*PACKAGES) for node in ast.walk(tree)
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets)]
    assert assigned == ["mosesrnn/version.py"]


# -- every command's parameters ----------------------------------------------------------------------


def all_commands(group: click.Group = main, prefix: str = "") -> list[tuple[str, click.Command]]:
    """Every command of the ``mosesrnn`` group, those of subgroups as ``group sub``."""
    found = []
    for name in group.list_commands(click.Context(group)):
        command = group.get_command(click.Context(group), name)
        if isinstance(command, click.Group):
            found += all_commands(command, f"{prefix}{name} ")
        else:
            found.append((prefix + name, command))
    return found


#: The text parameters that name no file (the others are paths, with a role). A new text parameter fails the
#: walk below until it is a path (a PathParam) or listed here.
TEXT_PARAMETERS = {"encoding", "queries", "hidden_dims", "max_time", "resume", "which", "features", "weights",
                   "feature_name", "labels", "source", "sources", "shard", "others",
                   "against", "baseline_features"}
#: The API's text arguments that name no file.
TEXT_ARGUMENTS = {"device", "dtype", "shard", "encoding", "feature_name"}


@pytest.mark.parametrize("name,command", all_commands(), ids=[name for name, _ in all_commands()])
def test_every_path_parameter_declares_its_role(name, command):
    assert isinstance(command, Command), f"{name} does not run inside a job (cls=Command)"
    for param in command.params:
        inner = param.type.types if isinstance(param.type, click.Tuple) else []
        for kind in [param.type, *inner]:
            if isinstance(kind, (click.Path, click.File)):
                assert isinstance(kind, PathParam), f"{name} {param.name}: a path without a role"
            elif kind == click.STRING:
                assert param.name in TEXT_PARAMETERS, \
                    f"{name} {param.name}: a text parameter; if it names a file, give it a PathParam type"


def test_the_api_declares_every_path_argument():
    for name in mosesrnn.__all__:
        function = getattr(mosesrnn, name)
        if not inspect.isfunction(function):
            continue
        roles = getattr(function, "declared_roles", {})
        for parameter in inspect.signature(function).parameters.values():
            if parameter.annotation in ("str", "str | None") and parameter.name not in TEXT_ARGUMENTS:
                assert parameter.name in roles, f"mosesrnn.{name}({parameter.name}=...) is not declared"
        if "features" in inspect.signature(function).parameters:
            assert "features" in roles, f"mosesrnn.{name}: the model files of its features are not declared"
    assert api.score_table.declared_roles and api.load.declared_roles


# -- the check at run time ---------------------------------------------------------------------------


def test_a_command_that_reads_a_file_it_did_not_declare_fails(tmp_path):
    (tmp_path / "declared.txt").write_text("a\n")
    (tmp_path / "other.txt").write_text("b\n")

    @click.command(cls=Command)
    @click.argument("text", type=INPUT)
    def careless(text):
        read_lines(str(tmp_path / "other.txt"))

    result = CliRunner().invoke(careless, [str(tmp_path / "declared.txt")])
    assert isinstance(result.exception, UndeclaredFileError), result.output
    assert "other.txt is read, but the run declared no such input" in str(result.exception)


def test_a_command_that_writes_a_file_it_did_not_declare_fails(tmp_path):
    @click.command(cls=Command)
    @click.option("-o", "--output", type=OUTPUT)
    def careless(output):
        with atomic_file(str(tmp_path / "elsewhere.txt")) as stream:
            stream.write(b"x")

    result = CliRunner().invoke(careless, ["-o", str(tmp_path / "out.txt")])
    assert isinstance(result.exception, UndeclaredFileError)
    assert not (tmp_path / "elsewhere.txt").exists()


def test_an_inner_job_must_be_covered_by_the_outer_one(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    with Job([(input_file(), str(tmp_path / "a.txt")), (output_file(".json"), str(tmp_path / "out"))]):
        with Job([(input_file(), str(tmp_path / "a.txt")), (output_file(".json"), str(tmp_path / "out"))]):
            pass  # what the outer job declared
        with pytest.raises(UndeclaredFileError, match="b.txt"):
            with Job([(input_file(), str(tmp_path / "b.txt"))]):
                pass
