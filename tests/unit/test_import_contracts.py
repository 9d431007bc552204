"""The import contracts of issues 15 and 27, enforced: import-linter's contracts in pyproject.toml
(runner layers boot -> http -> rpc -> core -> executors -> system, rpc and http reaching executors
and system only through core; client never imports runner; plugkit imports neither; runner.system
imports nothing else of runner; client.args is a leaf; runner.node and the daemon apart; runner.core
imports no subprocess, sqlite3 or threading), and no
import cycle anywhere in plugkit, runner or client, counting imports inside functions. Each is
proved live by breaking it in a copy."""

import ast
import pathlib
import shutil
import subprocess
import sys

import pytest

ROOT = pathlib.Path(__file__).resolve().parents[2]
PACKAGES = ("plugkit", "runner", "client")


def lint_imports(where: pathlib.Path) -> subprocess.CompletedProcess:
    script = pathlib.Path(sys.executable).parent / "lint-imports"
    assert script.exists(), "import-linter is a test dependency: pip install '.[test]'"
    # cwd first on the path, so the sources here are analysed and not an installed copy.
    return subprocess.run([str(script), "--no-cache", "--no-logo", "--config", str(where / "pyproject.toml")],
                          cwd=where, capture_output=True, text=True, timeout=100,
                          env={"PATH": "/usr/bin:/bin", "PYTHONPATH": str(where)})


def _module_name(root: pathlib.Path, path: pathlib.Path) -> str:
    parts = path.relative_to(root).with_suffix("").parts
    return ".".join(parts[:-1] if parts[-1] == "__init__" else parts)


def _imports(path: pathlib.Path, modules: set[str]) -> set[str]:
    """The project modules a file imports, at any depth: a cycle hidden in a function is still a
    cycle (it only waits for the first call to bite). `from pkg import sub` imports the submodule,
    not pkg's own code beyond its __init__, which every submodule import runs first anyway."""
    found: set[str] = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            found.update(alias.name for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.module:
            found.update(f"{node.module}.{a.name}" if f"{node.module}.{a.name}" in modules else node.module
                         for a in node.names)
    return found & modules


def import_cycle(root: pathlib.Path) -> list[str] | None:
    """The first import cycle among the project's modules under root, as a trail, else None."""
    files = {_module_name(root, p): p for package in PACKAGES for p in (root / package).rglob("*.py")}
    graph = {name: _imports(path, set(files)) - {name} for name, path in files.items()}
    done: set[str] = set()

    def walk(name: str, trail: list[str]) -> list[str] | None:
        if name in trail:
            return trail[trail.index(name):] + [name]
        if name in done:
            return None
        for dep in sorted(graph[name]):
            if (cycle := walk(dep, trail + [name])) is not None:
                return cycle
        done.add(name)
        return None

    for name in sorted(graph):
        if (cycle := walk(name, [])) is not None:
            return cycle
    return None


def test_no_import_cycle_in_plugkit_runner_or_client():
    cycle = import_cycle(ROOT)
    assert cycle is None, "import cycle: " + " -> ".join(cycle or [])


def test_the_import_contracts_hold():
    done = lint_imports(ROOT)
    assert done.returncode == 0, done.stdout + done.stderr
    assert "0 broken" in done.stdout


@pytest.fixture(scope="module")
def tree_copy(tmp_path_factory) -> pathlib.Path:
    copy = tmp_path_factory.mktemp("contracts")
    shutil.copy(ROOT / "pyproject.toml", copy)
    for package in PACKAGES:
        shutil.copytree(ROOT / package, copy / package, ignore=shutil.ignore_patterns("__pycache__"))
    return copy


# (a module, the import a careless edit would add to it, the contract it breaks)
BREAKS = [
    ("client/verbs/doctor.py", "import runner.system.tags", "the client never imports the runner"),
    ("plugkit/paths.py", "import client.cli", "plugkit imports neither the runner nor the client"),
    ("runner/system/kill.py", "import runner.core.tasks.manager", "runner.system imports nothing else"),
    ("runner/core/tasks/output.py", "import runner.rpc.dispatch", "runner layers"),
    ("runner/rpc/port.py", "import runner.system.ports", "reach executors and system only through core"),
    ("runner/rpc/task.py", "import runner.executors.worker", "reach executors and system only through core"),
    ("runner/http/app.py", "import runner.system.peers", "reach executors and system only through core"),
    ("client/args.py", "import client.wire.rpc", "client.args parses words and nothing else"),
    # The Ray node side stays out of the daemon (Ray's threads and signal handlers, its own git and
    # workers), and sees nothing of the daemon's managers in turn.
    ("runner/core/work/placement/ray_node.py", "import runner.node.driver", "the daemon never imports runner.node"),
    ("runner/node/task.py", "import runner.core.work.model", "runner.node (the Ray driver and node programs)"),
    # The core does no OS work of its own (issue 49 #3): git, SQLite and threads are runner.system's.
    ("runner/core/search/index.py", "import threading", "runner.core imports no subprocess, sqlite3 or threading"),
    ("runner/core/gates/manager.py", "import subprocess", "runner.core imports no subprocess, sqlite3 or threading"),
    ("runner/core/search/manager.py", "import sqlite3", "runner.core imports no subprocess, sqlite3 or threading"),
    # The two cycles issue 27 found, as they were: a model importing its store back, and a
    # host-format module importing the installer that imports it.
    ("plugkit/lifecycle/model.py", "import plugkit.lifecycle.state", "no import cycle"),
    ("client/hooks/install_hosts.py", "import client.hooks.install", "no import cycle"),
]


@pytest.mark.parametrize("module,line,contract", BREAKS, ids=[b[0] for b in BREAKS])
def test_each_contract_catches_the_import_it_forbids(tree_copy, module, line, contract):
    path = tree_copy / module
    original = path.read_text()
    path.write_text(original + f"\n\ndef _smuggled():\n    {line}\n")  # lazy imports count too
    try:
        done = lint_imports(tree_copy)
    finally:
        path.write_text(original)
    assert done.returncode == 1, done.stdout
    broken = done.stdout.split("Broken contracts", 1)[1]
    imported = line.split()[1]  # named in full, or relative to its package by the cycle contract
    assert contract in broken and (imported in broken or f"-> .{imported.rsplit('.', 1)[-1]} " in broken)


CYCLES = [  # (a module, a function-level import closing a cycle through it)
    ("plugkit/lifecycle/model.py", "from plugkit.lifecycle import state"),
    ("client/hooks/install_hosts.py", "from client.hooks import install"),
    ("runner/core/tasks/output.py", "import runner.core.tasks.manager"),
]


@pytest.mark.parametrize("module,line", CYCLES, ids=[c[0] for c in CYCLES])
def test_the_cycle_walk_catches_a_cycle_hidden_in_a_function(tree_copy, module, line):
    path = tree_copy / module
    original = path.read_text()
    path.write_text(original + f"\n\ndef _smuggled():\n    {line}\n")
    try:
        cycle = import_cycle(tree_copy)
    finally:
        path.write_text(original)
    assert cycle is not None and _module_name(tree_copy, path) in cycle
