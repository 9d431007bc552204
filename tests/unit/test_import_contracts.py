"""The import contracts of issue 15, enforced: import-linter's contracts in pyproject.toml (runner
layers boot -> http -> rpc -> core -> executors -> system; client never imports runner; plugkit
imports neither; runner.system imports nothing else of runner), proved live by breaking them in a
copy, and no import cycle among the runner's modules."""

import ast
import pathlib
import shutil
import subprocess
import sys
import tomllib

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
    assert contract in broken and line.split()[1] in broken


# --- no import cycle among the runner's modules ------------------------------------------------

def _modules(package: str) -> dict[str, pathlib.Path]:
    found = {}
    for path in sorted((ROOT / package).rglob("*.py")):
        parts = list(path.relative_to(ROOT).with_suffix("").parts)
        if parts[-1] == "__init__":
            parts.pop()
        found[".".join(parts)] = path
    return found


def _imports(name: str, path: pathlib.Path, known: set[str]) -> set[str]:
    """Modules of `known` that `name` imports anywhere in its body (lazy imports included)."""
    is_package = path.name == "__init__.py"
    out = set()
    for node in ast.walk(ast.parse(path.read_text(), str(path))):
        if isinstance(node, ast.Import):
            targets = [a.name for a in node.names]
        elif isinstance(node, ast.ImportFrom):
            base = node.module or ""
            if node.level:
                anchor = name.split(".")[: len(name.split(".")) - node.level + (1 if is_package else 0)]
                base = ".".join(anchor + ([base] if base else []))
            # `from pkg import sub` imports the submodule; `from mod import name` the module.
            targets = [f"{base}.{a.name}" if f"{base}.{a.name}" in known else base for a in node.names]
        else:
            continue
        out |= {t for t in targets if t in known and t != name}
    return out


def _cycles(graph: dict[str, set[str]]) -> list[list[str]]:
    """Strongly connected components of more than one module (Tarjan, iterative)."""
    index: dict[str, int] = {}
    low: dict[str, int] = {}
    stack: list[str] = []
    on_stack: set[str] = set()
    found = []
    for start in sorted(graph):
        if start in index:
            continue
        work = [(start, iter(sorted(graph[start])))]
        index[start] = low[start] = len(index)
        stack.append(start)
        on_stack.add(start)
        while work:
            node, children = work[-1]
            child = next(children, None)
            if child is not None:
                if child not in index:
                    index[child] = low[child] = len(index)
                    stack.append(child)
                    on_stack.add(child)
                    work.append((child, iter(sorted(graph[child]))))
                elif child in on_stack:
                    low[node] = min(low[node], index[child])
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[node])
            if low[node] == index[node]:
                component = []
                while True:
                    member = stack.pop()
                    on_stack.discard(member)
                    component.append(member)
                    if member == node:
                        break
                if len(component) > 1:
                    found.append(sorted(component))
    return found


def _known_violations() -> set[tuple[str, str]]:
    """The layer contract's ignore_imports: violations an open issue is fixing (see pyproject.toml)."""
    config = tomllib.loads((ROOT / "pyproject.toml").read_text())["tool"]["importlinter"]
    layers = next(c for c in config["contracts"] if c["id"] == "runner-layers")
    return {tuple(part.strip() for part in line.split("->")) for line in layers.get("ignore_imports", [])}


def runner_graph(skip: set[tuple[str, str]]) -> dict[str, set[str]]:
    modules = _modules("runner")
    known = set(modules)
    return {name: {t for t in _imports(name, path, known) if (name, t) not in skip} for name, path in modules.items()}


def test_the_runner_has_no_import_cycle():
    assert _cycles(runner_graph(_known_violations())) == []


def test_the_cycle_finder_sees_the_cycle_the_ignores_hide():
    # Proof the walk is not vacuous: without the listed ignores, the known http <-> boot cycle shows.
    known = _known_violations()
    cycles = _cycles(runner_graph(set()))
    if ("runner.http.app", "runner.boot.lifespans") in known:
        assert any({"runner.http.app", "runner.boot.lifespans"} <= set(c) for c in cycles)
    assert _cycles({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
