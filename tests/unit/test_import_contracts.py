"""The import contracts of issue 15, enforced: import-linter's contracts in pyproject.toml (runner
layers boot -> http -> rpc -> core -> executors -> system; client never imports runner; plugkit
imports neither; runner.system imports nothing else of runner), proved live by breaking them in a
copy. That the runner has no import cycle is test_composition_root.test_the_runner_has_no_import_cycle."""

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
