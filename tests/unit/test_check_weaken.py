"""What counts as weakening a check (runner/core/gates/weaken.py), against a real repository:
which runner configuration changes are held (a part of pyproject.toml, setup.cfg or
package.json only when that part changed), and which test outcomes count as fewer run."""

import asyncio

import pytest

from runner.core.gates import weaken
from tests.support.git_repos import commit, g, main_repo, person_git

PYTEST = "python -m pytest -q"


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


@pytest.fixture
def repo(tmp_path):
    root = main_repo(tmp_path)
    commit(root, "pyproject.toml", '[project]\nname = "x"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n')
    commit(root, "setup.cfg", "[metadata]\nname = x\n")
    commit(root, "package.json", '{"name": "x", "scripts": {"test": "jest", "build": "tsc"}}\n')
    commit(root, "go.mod", "module x\n")
    return root


def changes(repo, edits: dict, command: str = PYTEST) -> list[str]:
    base = g(repo, "rev-parse", "HEAD")
    for name, text in edits.items():
        head = commit(repo, name, text)
    return asyncio.run(weaken.config_changes(repo, base, head, command))[0]


@pytest.mark.parametrize("edits,command,held", [
    ({"sub/conftest.py": "x = 1\n"}, PYTEST, ["sub/conftest.py"]),
    ({"pytest.ini": "[pytest]\n"}, "sh check.sh", []),  # not a pytest check, nothing configures one
    ({"tox.ini": "[pytest]\naddopts = -x\n"}, PYTEST, ["tox.ini"]),
    ({"lib/site-packages/evil.pth": "import os\n"}, "make test", ["lib/site-packages/evil.pth"]),
    ({"sitecustomize.py": "\n"}, "make test", ["sitecustomize.py"]),
    ({"pyproject.toml": '[project]\nname = "y"\n\n[tool.pytest.ini_options]\ntestpaths = ["tests"]\n'}, PYTEST, []),
    ({"pyproject.toml": '[project]\nname = "x"\n\n[tool.pytest.ini_options]\naddopts = "-k not two"\n'}, PYTEST,
     ["pyproject.toml [tool.pytest]"]),
    ({"setup.cfg": "[metadata]\nname = y\n"}, PYTEST, []),
    ({"setup.cfg": "[metadata]\nname = x\n[tool:pytest]\naddopts = -x\n"}, PYTEST, ["setup.cfg [tool:pytest]"]),
    ({"package.json": '{"name": "x", "scripts": {"test": "jest", "build": "vite"}}\n'}, "npm test", []),
    ({"package.json": '{"name": "x", "scripts": {"test": "true", "build": "tsc"}}\n'}, "npm test",
     ["package.json the test script or jest/vitest config"]),
    ({"jest.config.js": "module.exports = {}\n"}, "npx jest", ["jest.config.js"]),
    ({"go.mod": "module x\n\ngo 1.22\n"}, "go test ./...", ["go.mod"]),
    ({"go.mod": "module x\n\ngo 1.22\n"}, PYTEST, []),
])
def test_which_runner_configuration_changes_are_held(repo, edits, command, held):
    assert changes(repo, edits, command) == held


def col(tests: dict, deselected=(), seen=True) -> weaken.Collected:
    return weaken.Collected(dict(tests), set(deselected), seen)


def test_fewer_tests_run_is_weakening_and_new_tests_are_not():
    base = col({"t::a": "run", "t::b": "run", "t::c": "run", "t::d": "run", "t::e": "skip"})
    branch = col({"t::a": "run", "t::b": "skip", "t::c": "xfail", "t::e": "run", "t::new": "run"}, ["t::d"])
    assert weaken.weakened(base, branch) == ["t::b newly skipped", "t::c newly xfailed", "t::d deselected"]
    assert weaken.weakened(base, col({**base.tests, "t::new": "skip"})) == []  # adding is not weakening
    assert weaken.weakened(base, col({}, seen=False)) == [f"t::{x} disappeared" for x in "abcd"]
    assert weaken.weakened(col({}, seen=False), col({})) == []  # no pytest at the base: nothing to compare
