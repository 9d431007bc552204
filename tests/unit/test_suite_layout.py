"""The suite's own layout: what test modules share lives in tests/support/, never in another test
module (importing one runs its module code and ties two files' fixtures and lifetimes together)."""

import ast

from tests.support.runner_home import ROOT


def test_no_test_module_imports_another_test_module():
    found = []
    for path in sorted((ROOT / "tests").rglob("*.py")):
        for node in ast.walk(ast.parse(path.read_text(), str(path))):
            names = [node.module or ""] if isinstance(node, ast.ImportFrom) else \
                [a.name for a in node.names] if isinstance(node, ast.Import) else []
            found += [f"{path.relative_to(ROOT)}:{node.lineno} imports {n}" for n in names
                      if n.startswith("tests.") and n.rsplit(".", 1)[-1].startswith("test_")]
    assert found == [], "move what they share into tests/support/:\n" + "\n".join(found)
