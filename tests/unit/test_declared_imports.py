"""Every import in plugkit's own code (runner/, plugkit/, client/), at module top or inside a
function, is the standard library's, plugkit's own, or a distribution pyproject.toml declares:
a module that arrives only as another package's dependency (jsonrpcserver's oslash was one)
breaks the day that package stops pulling it in."""

import ast
import importlib.metadata
import re
import sys
import tomllib
from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]
OWN = {"plugkit", "runner", "client"}


def _name(requirement: str) -> str:
    return re.split(r"[\s<>=!~\[;(]", requirement, maxsplit=1)[0].lower().replace("_", "-")


def _declared() -> set[str]:
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    groups = [g for name, g in project.get("optional-dependencies", {}).items() if name != "test"]
    return {_name(r) for r in project["dependencies"] + [r for g in groups for r in g]}


def _imports(path: Path) -> set[str]:
    found = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name.partition(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            found.add(node.module.partition(".")[0])
    return found


def test_every_import_is_stdlib_our_own_or_declared():
    declared = _declared()
    owners = importlib.metadata.packages_distributions()
    undeclared = []
    for package in OWN:
        for path in sorted((ROOT / package).rglob("*.py")):
            for module in _imports(path) - OWN - set(sys.stdlib_module_names):
                # Not installed here (an extra's module): its distribution is named as it is.
                dists = {d.lower().replace("_", "-") for d in owners.get(module, [module])}
                if not dists & declared:
                    undeclared.append(f"{path.relative_to(ROOT)}: {module} ({', '.join(sorted(dists)) or 'not installed'})")
    assert not undeclared, "declare these in pyproject.toml, or stop importing them:\n" + "\n".join(undeclared)


def test_the_check_sees_an_undeclared_import(tmp_path):
    probe = tmp_path / "probe.py"
    probe.write_text("def f():\n    from oslash.either import Left\n")
    assert "oslash" in _imports(probe) and "oslash" not in _declared()
