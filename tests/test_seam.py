"""The care is enforced, not promised: imports point down the floors, every command and API function
declares its files, and only the input/output floor opens them.

Walks keep it so: over the source (every import points down the floors of docs/architecture.md; no file
opened, no torch file read or written, outside ``mosesrnn/io/``; ``moses_integration`` without the
command line; one reader and writer of each format, one moses.ini updater; every registry entry
resolves), over every command's parameters (a path is a :class:`~mosesrnn.cli.paths.PathParam` with
its role), and over the API (every path argument declared). Then the runtime check itself: a command
that reads or writes a file its parameters do not declare fails.
"""
from __future__ import annotations

import ast
import dataclasses
import importlib
import inspect
import re
import subprocess
import sys
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
from mosesrnn.io.roles import input_file, output_file, output_folder

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
                                      "read_state_file", "weights_text", "replace_weights", "read_ini_text",
                                      "parse_ini", "phrase_tables", "rewrite_ini", "update_moses_ini"])
def test_one_definition_of_each_reader_and_writer(function):
    defined = [f"{path.relative_to(ROOT)}" for path, tree in modules(*PACKAGES) for node in ast.walk(tree)
               if isinstance(node, ast.FunctionDef) and node.name == function]
    assert len(defined) == 1, defined


#: What rewrites a moses.ini's text, each a step of the one updater (moses_integration/ini_update.py).
INI_REWRITING = {"rewrite_ini", "updated_ini", "absolute_paths", "with_neural_lm", "add_neural_lm"}


def test_the_command_line_rewrites_a_moses_ini_only_through_the_one_updater():
    """``moses-ini`` calls :func:`~moses_integration.ini_update.update_moses_ini`, and no command assembles a
    rewrite of its own from the updater's steps."""
    called = {}
    for path, tree in modules("mosesrnn/cli"):
        names = {_call_name(node).rsplit(".", 1)[-1] for node in ast.walk(tree) if isinstance(node, ast.Call)}
        called[path.name] = names
        assert not names & INI_REWRITING, f"{path.relative_to(ROOT)} rewrites a moses.ini itself: " \
                                          f"{sorted(names & INI_REWRITING)}; call update_moses_ini"
    assert "update_moses_ini" in called["moses.py"]


def test_the_version_lives_in_one_module():
    assigned = [f"{path.relative_to(ROOT)}" for path, tree in modules(*PACKAGES) for node in ast.walk(tree)
                if isinstance(node, ast.Assign) and any(getattr(t, "id", "") == "__version__" for t in node.targets)]
    assert assigned == ["mosesrnn/version.py"]


# -- the floors --------------------------------------------------------------------------------------


def doc_floors() -> list[tuple[str, ...]]:
    """The floors of docs/architecture.md, top to bottom, each the module prefixes of its rooms: the first
    code block after "imports point down", ``a → b, c → d`` (names inside mosesrnn/ unless they start with
    ``moses_integration``; ``__init__`` is the package's own)."""
    text = (ROOT / "docs" / "architecture.md").read_text(encoding="utf-8")
    chain = re.search(r"imports point down.*?```\n(.*?)\n```", text, re.S | re.I)
    assert chain, "docs/architecture.md lost its chain of floors"
    floors = []
    for floor in " ".join(chain[1].split()).split("→"):
        rooms = [name.strip() for name in floor.split(",")]
        floors.append(tuple("mosesrnn" if name == "__init__" else name if name.startswith("moses_integration")
                            else f"mosesrnn.{name}" for name in rooms))
    return floors


#: Imports that point up or sideways, each by name (importer, imported; module prefixes) with its reason.
EXCEPTIONS: dict[tuple[str, str], str] = {}


def _module_names() -> dict[str, tuple[Path, bool]]:
    """Every module of both packages by its dotted name: (its file, whether it is a package's __init__)."""
    names = {}
    for path, _ in modules(*PACKAGES):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        package = parts[-1] == "__init__"
        names[".".join(parts[:-1] if package else parts)] = (path, package)
    return names


def _imported(module: str, package: bool, node: ast.AST, known) -> list[str]:
    """The modules of ours an import statement names (``from . import x``: the module x, if it is one)."""
    if isinstance(node, ast.Import):
        names = [alias.name for alias in node.names]
    else:
        base = module.split(".") if package else module.split(".")[:-1]
        if node.level:
            base = base[:len(base) - node.level + 1]
        source = ".".join(base + [node.module] if node.module else base) if node.level else node.module
        names = [f"{source}.{alias.name}" if f"{source}.{alias.name}" in known else source for alias in node.names]
    return [name for name in names if name.split(".")[0] in PACKAGES]


def _room(module: str, floors) -> tuple[int, str] | None:
    """(floor, room) of a module: the longest room name it lies in."""
    found = [(len(room), level, room) for level, rooms in enumerate(floors) for room in rooms
             if module == room or module.startswith(room + ".")]
    return max(found)[1:] if found else None


def import_arrows() -> list[tuple[str, str, int]]:
    """Every import of our modules between two rooms: (importer, imported, line), lazy imports included."""
    known, floors, arrows = _module_names(), doc_floors(), set()
    for module, (path, package) in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                arrows |= {(module, name, node.lineno) for name in _imported(module, package, node, known)
                           if _room(name, floors) != _room(module, floors)}
    return sorted(arrows)


def test_every_module_lies_on_a_floor():
    floors = doc_floors()
    unplaced = sorted(module for module in _module_names() if _room(module, floors) is None)
    assert unplaced == [], f"modules on no floor of docs/architecture.md: {unplaced}"


def test_imports_point_down_the_floors():
    floors = doc_floors()
    wrong = [f"{importer} (line {line}) imports {imported}: {_room(importer, floors)[1]} is on floor "
             f"{_room(importer, floors)[0]}, {_room(imported, floors)[1]} on {_room(imported, floors)[0]}"
             for importer, imported, line in import_arrows()
             if _room(imported, floors)[0] <= _room(importer, floors)[0]
             and not any(importer.startswith(a) and imported.startswith(b) for a, b in EXCEPTIONS)]
    assert wrong == [], "imports that do not point down (floors counted from the top):\n" + "\n".join(wrong)


def test_every_exception_is_still_taken():
    arrows = {(importer, imported) for importer, imported, _ in import_arrows()}
    stale = [pair for pair in EXCEPTIONS if not any(i.startswith(pair[0]) and d.startswith(pair[1])
                                                    for i, d in arrows)]
    assert stale == [], f"exceptions no import takes any more: remove them: {stale}"


def test_the_floors_are_the_folders():
    """Every folder of mosesrnn/ is a room of the floors (a new folder gets its floor in the docs)."""
    rooms = {room for floor in doc_floors() for room in floor}
    folders = {f"mosesrnn.{path.name}" for path in (ROOT / "mosesrnn").iterdir()
               if path.is_dir() and (path / "__init__.py").exists()}
    assert folders <= rooms, f"folders on no floor: {sorted(folders - rooms)}"


def _imports_in_a_fresh_python(modules_to_import) -> set[str]:
    code = (f"import sys\nfor name in {list(modules_to_import)!r}:\n    __import__(name)\n"
            "print('\\n'.join(sys.modules))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True, cwd=ROOT)
    return set(out.stdout.split())


def test_the_wing_and_the_feature_registry_import_no_torch():
    wing = sorted(name for name in _module_names() if name.startswith("moses_integration"))
    loaded = _imports_in_a_fresh_python(wing + ["mosesrnn.features.registry", "mosesrnn.features.options"])
    assert "torch" not in loaded


def test_the_moses_ini_format_stands_among_the_formats():
    """The moses.ini format is a format (our MERT and ``prune`` read it, the wing rewrites it): it loads neither
    the Moses wing nor torch, and the wing holds no reader of it (one definition of each: above)."""
    loaded = _imports_in_a_fresh_python(["mosesrnn.formats.moses_ini"])
    assert not any(name.startswith("moses_integration") for name in loaded) and "torch" not in loaded
    assert _room("mosesrnn.formats.moses_ini", doc_floors()) == _room("mosesrnn.formats.phrase_table", doc_floors())


def import_graph() -> dict[str, set[str]]:
    """Every module of both packages and the modules of ours it imports (lazy imports included)."""
    known = _module_names()
    graph: dict[str, set[str]] = {module: set() for module in known}
    for module, (path, package) in known.items():
        for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
            if isinstance(node, (ast.Import, ast.ImportFrom)):
                for name in _imported(module, package, node, known):
                    while name not in known:  # a name inside a module: the module
                        name = name.rpartition(".")[0]
                    graph[module] |= {name} - {module}
    return graph


def circles(graph: dict[str, set[str]]) -> list[list[str]]:
    """The modules that import each other in a loop, one list a loop (Tarjan's strongly connected components)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    found = []

    def visit(module: str) -> None:
        index[module] = low[module] = len(index)
        stack.append(module)
        for other in sorted(graph[module]):
            if other not in index:
                visit(other)
                low[module] = min(low[module], low[other])
            elif other in stack:
                low[module] = min(low[module], index[other])
        if low[module] == index[module]:
            loop = stack[stack.index(module):]
            del stack[stack.index(module):]
            if len(loop) > 1:
                found.append(sorted(loop))

    for module in sorted(graph):
        if module not in index:
            visit(module)
    return found


def test_no_modules_import_each_other_in_a_circle():
    """Inside a room too (the route's plan, checks, reuse and stages): each imports only those after it."""
    assert circles(import_graph()) == []


def test_the_route_reads_and_writes_its_plan_in_one_place():
    """``plan.json`` is saved and read by :mod:`moses_integration.route.plan` alone; the other modules ask it."""
    places = sorted({str(path.relative_to(ROOT)) for path, tree in modules("moses_integration")
                     for node in ast.walk(tree) if isinstance(node, ast.Call)
                     and _call_name(node).rsplit(".", 1)[-1] in ("read_json", "atomic_output", "atomic_file",
                                                                 "open_input", "exists", "isfile")
                     and "PLAN" in ast.unparse(node)})
    assert places == ["moses_integration/route/plan.py"]


# -- the registries ----------------------------------------------------------------------------------


def registry_entries() -> list[tuple[str, str]]:
    """Every ``module:name`` string of every registry, as (where, target): built lazily, so no import follows them."""
    from mosesrnn.encdec.architectures import ARCHITECTURES
    from mosesrnn.features.registry import FEATURES
    from mosesrnn.models import MODELS
    entries = [(f"FEATURES[{name!r}].builder", spec.builder) for name, spec in FEATURES.items()]
    entries += [(f"MODELS[{kind!r}].{what}", target) for kind, row in MODELS.items()
                for what, target in (("loader", row.loader), ("check", row.check)) if target]
    entries += [(f"MODELS[{kind!r}].decoder.adds", row.decoder.adds) for kind, row in MODELS.items() if row.decoder]
    entries += [(f"MODELS[{kind!r}].perplexity.measure", row.perplexity.measure) for kind, row in MODELS.items()]
    for name, architecture in ARCHITECTURES.items():
        entries += [(f"ARCHITECTURES[{name!r}].encoder", architecture.encoder),
                    (f"ARCHITECTURES[{name!r}].decoder", architecture.decoder)]
    return entries


def test_the_model_registry_names_the_features_and_the_options_of_its_families():
    """Every feature a model option serves is a feature; every feature that needs a model has an option; the joint
    model's options are its orientations'; FeatureOptions has a field for each option."""
    from mosesrnn.bilm.orientation import JOINT_FEATURES
    from mosesrnn.features.options import FeatureOptions
    from mosesrnn.features.registry import FEATURES
    from mosesrnn.models import FEATURE_MODELS, JOINT, MODEL_OPTIONS, MODELS
    assert set(FEATURE_MODELS) <= set(FEATURES)
    assert {name for name, spec in FEATURES.items() if spec.needs} == set(FEATURE_MODELS)
    assert [o.option for o in JOINT_FEATURES.values()] == [o.name for o in MODELS[JOINT].options]
    assert [o.feature for o in JOINT_FEATURES.values()] == [f for o in MODELS[JOINT].options for f in o.features]
    assert set(MODEL_OPTIONS) <= {f.name for f in dataclasses.fields(FeatureOptions)}


def test_the_families_inside_the_decoder_come_from_the_model_registry():
    """A family that goes inside Moses' decoder (the CSLM as a NeuralLM, the joint model as a BilingualNPLM) is its
    row's DecoderFeature: moses-ini's options, the export's companion files, the report's labels read it."""
    from mosesrnn.bilm.config import EXPORT_FILES
    from mosesrnn.cli.moses import moses_ini
    from mosesrnn.models import CSLM, DECODER_FEATURES, JOINT, MODELS
    assert DECODER_FEATURES == {"cslm": MODELS[CSLM].decoder, "bilm": MODELS[JOINT].decoder}
    assert [feature.moses_feature for feature in DECODER_FEATURES.values()] == ["NeuralLM", "BilingualNPLM"]
    options = {param.name: param for param in moses_ini.params}
    for name, feature in DECODER_FEATURES.items():
        assert options[name].help == feature.help and options[f"{name}_weight"].help == feature.weight_help
        assert options[name].type.role.companions == feature.companions
    assert EXPORT_FILES == MODELS[JOINT].decoder.companions


#: Where the code outside the joint model's folder names it (imports its package or its kind): the existing files a
#: new decoder family touches by docs/architecture.md ("A new model family": models.py, features/registry.py,
#: cli/__init__.py; cli/analysis.py's perplexity, the one branch on the kind it names) and its two new modules.
JOINT_FAMILY_SITES = {"mosesrnn/models.py", "mosesrnn/features/registry.py", "mosesrnn/cli/__init__.py",
                      "mosesrnn/features/bilm.py", "mosesrnn/cli/bilm.py"}


def _names_family(path: Path, package: str, kind: str) -> bool:
    """Whether the code of ``path`` imports from the family's ``package`` or names its ``kind`` constant."""
    for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
        if isinstance(node, ast.ImportFrom) and node.module and package in node.module.split("."):
            return True
        if (isinstance(node, ast.Name) and node.id == kind) or (isinstance(node, ast.alias) and node.name == kind):
            return True
    return False


def test_a_decoder_family_is_named_in_code_only_where_the_architecture_says():
    """The joint model, the latest family and one that goes inside Moses' decoder, is named by code outside its
    folder (its package imported, its kind constant used) in the files docs/architecture.md counts and nowhere
    else: a family added that way touches what the document says; its Moses feature comes from its row."""
    found = {str(path.relative_to(ROOT)) for package in PACKAGES for path in sorted((ROOT / package).rglob("*.py"))
             if not path.is_relative_to(ROOT / "mosesrnn/bilm") and _names_family(path, "bilm", "JOINT")}
    assert found == JOINT_FAMILY_SITES
    text = (ROOT / "docs/architecture.md").read_text(encoding="utf-8")
    assert "counted: **6**" in text and "branches on the kind" not in text


@pytest.mark.parametrize("where,target", registry_entries(), ids=[where for where, _ in registry_entries()])
def test_every_registry_entry_resolves(where, target):
    module, colon, name = target.partition(":")
    assert colon and module and name, f"{where} = {target!r} is not 'module:name'"
    assert callable(getattr(importlib.import_module(module), name, None)), f"{where}: {target} is not there"


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


def test_a_link_in_a_declared_folder_is_read_through_but_the_folder_stays_the_bound(tmp_path):
    """`tune`'s runs linked into a new working folder from another tuning (docs/moses.md) are read where they
    lead; a file beside the folder is still undeclared."""
    (tmp_path / "elsewhere").mkdir()
    (tmp_path / "elsewhere" / "run1.dev.nbest").write_text("0 ||| a ||| F0= 1 ||| 1\n")
    (tmp_path / "work").mkdir()
    (tmp_path / "work" / "system-run1.dev.nbest").symlink_to(tmp_path / "elsewhere" / "run1.dev.nbest")
    with Job([(output_folder(), str(tmp_path / "work"))]):
        with Job([(input_file(), str(tmp_path / "work" / "system-run1.dev.nbest"))]):
            pass
        with pytest.raises(UndeclaredFileError, match="run1.dev.nbest"):
            with Job([(input_file(), str(tmp_path / "elsewhere" / "run1.dev.nbest"))]):
                pass


def test_an_inner_job_must_be_covered_by_the_outer_one(tmp_path):
    (tmp_path / "a.txt").write_text("a\n")
    with Job([(input_file(), str(tmp_path / "a.txt")), (output_file(".json"), str(tmp_path / "out"))]):
        with Job([(input_file(), str(tmp_path / "a.txt")), (output_file(".json"), str(tmp_path / "out"))]):
            pass  # what the outer job declared
        with pytest.raises(UndeclaredFileError, match="b.txt"):
            with Job([(input_file(), str(tmp_path / "b.txt"))]):
                pass
