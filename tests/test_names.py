"""One name, one meaning: no two modules define a public class of the same name (issue 42, item 6)."""
from __future__ import annotations

import ast
from collections import defaultdict
from pathlib import Path

ROOT = Path(__file__).parent.parent


def test_no_two_modules_define_a_public_class_of_the_same_name():
    defined = defaultdict(list)
    for package in ("mosesrnn", "moses_integration"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                if isinstance(node, ast.ClassDef) and not node.name.startswith("_"):
                    defined[node.name].append(str(path.relative_to(ROOT)))
    shared = {name: paths for name, paths in defined.items() if len(paths) > 1}
    assert shared == {}


def test_the_pipelines_entry_points_are_named_apart_from_the_apis():
    """``mosesrnn.score_table`` takes FeatureOptions, a shard as text and minutes; the pipeline's job takes built
    features, a ShardSpec and seconds: one name for both hid which one a caller had (issue 58)."""
    from mosesrnn import api
    functions = defaultdict(list)
    for path in sorted((ROOT / "mosesrnn" / "pipeline").rglob("*.py")):
        for node in ast.parse(path.read_text(encoding="utf-8")).body:
            if isinstance(node, ast.FunctionDef):
                functions[node.name].append(str(path.relative_to(ROOT)))
    assert {name: functions[name] for name in api.__all__ if name in functions} == {}
    assert {"run_score_job", "run_nbest_job", "run_prune_job"} <= set(functions)


def test_every_class_is_named_in_capwords():
    """PEP 8: class names in CapWords (a leading underscore for a private one), e.g. not ``_iterations_watch``."""
    wrong = []
    for package in ("mosesrnn", "moses_integration"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.walk(ast.parse(path.read_text(encoding="utf-8"))):
                if isinstance(node, ast.ClassDef) and not node.name.lstrip("_")[:1].isupper():
                    wrong.append(f"{path.relative_to(ROOT)}: {node.name}")
    assert wrong == []


def test_the_normalizers_are_defined_once_in_one_spelling():
    """``NORMALISERS`` (encdec/decoder.py) and ``NORMALIZERS`` (features/options.py) were one tuple spelled twice."""
    assigned = defaultdict(list)
    for package in ("mosesrnn", "moses_integration"):
        for path in sorted((ROOT / package).rglob("*.py")):
            for node in ast.parse(path.read_text(encoding="utf-8")).body:
                targets = node.targets if isinstance(node, ast.Assign) else [node.target] \
                    if isinstance(node, ast.AnnAssign) else []
                for target in targets:
                    if getattr(target, "id", "") in ("NORMALIZERS", "NORMALISERS"):
                        assigned[target.id].append(str(path.relative_to(ROOT)))
    assert dict(assigned) == {"NORMALIZERS": ["mosesrnn/encdec/config.py"]}
    from mosesrnn.encdec.config import NORMALIZERS
    from mosesrnn.features.options import NORMALIZERS as offered
    assert offered is NORMALIZERS
