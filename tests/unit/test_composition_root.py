"""The runner's composition root: one typed Context (no string-keyed service locator), one
module that builds the app's parts, and no module below boot importing the app back (the
import cycle lifespans -> http.app -> lifespans this replaced)."""

import ast
import dataclasses
import typing
from pathlib import Path

from plugkit.config import RunnerConfig
from plugkit.lazy import Lazy
from runner.core.gates.manager import GateManager
from runner.core.search.manager import SearchManager
from runner.core.work.manager import WorkManager
from runner.rpc.context import Context

RUNNER = Path(__file__).resolve().parents[2] / "runner"


def _imports(path: Path) -> set[str]:
    """Every module a file imports, at any depth (function-level imports included)."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.add(node.module)
            found.update(f"{node.module}.{alias.name}" for alias in node.names)
    return found


def _modules() -> dict[str, set[str]]:
    return {str(p.relative_to(RUNNER.parent)): _imports(p) for p in RUNNER.rglob("*.py")}


def test_every_context_field_has_a_concrete_type():
    hints = typing.get_type_hints(Context, localns={"GateManager": GateManager, "WorkManager": WorkManager,
                                                    "SearchManager": SearchManager})
    loose = {typing.Any, object, dict, list}
    for f in dataclasses.fields(Context):
        hint = hints[f.name]
        assert hint not in loose, f"Context.{f.name} is typed {hint!r}: name the part's class"
        args = typing.get_args(hint)
        assert typing.Any not in args or f.name == "snapshots", f"Context.{f.name} is typed {hint!r}"
    assert hints["config"] is RunnerConfig
    assert hints["gates"] == typing.Optional[Lazy[GateManager]]
    assert hints["work"] == typing.Optional[Lazy[WorkManager]]
    assert hints["search"] == typing.Optional[Lazy[SearchManager]]
    assert "services" not in {f.name for f in dataclasses.fields(Context)}  # no string-keyed locator


def test_only_boot_imports_the_app_module():
    offenders = sorted(name for name, imports in _modules().items()
                       if {"runner.http.app", "runner.http.app.make_app"} & imports
                       and not name.startswith("runner/boot/"))
    assert offenders == []


def test_nothing_below_boot_imports_boot():
    offenders = sorted(name for name, imports in _modules().items()
                       if any(i == "runner.boot" or i.startswith("runner.boot.") for i in imports)
                       and not name.startswith("runner/boot/") and name != "runner/__main__.py")
    assert offenders == []


def test_lazy_builds_once_and_peek_never_builds():
    built: list[int] = []
    lazy = Lazy(lambda: built.append(1) or len(built))
    assert lazy.peek() is None and not lazy.built and built == []
    assert lazy.get() == 1 and lazy.get() == 1 and built == [1]
    assert lazy.built and lazy.peek() == 1
