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
