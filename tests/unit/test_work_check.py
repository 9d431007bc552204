"""Which files are an item's check (runner/core/work/check.py), against a real repository: the
verify command's words naming what exists at the base, plus the project's work_check_paths."""

import asyncio

import pytest

from runner.core.work import check
from tests.support.git_repos import commit, g, main_repo, person_git


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


@pytest.fixture
def repo(tmp_path):
    root = main_repo(tmp_path)
    commit(root, "check.sh", "test -f feature.txt\n")
    commit(root, "tests/test_a.py", "def test_a(): pass\n")
    return root


def files(repo, command, configured=()):
    return asyncio.run(check.files(repo, g(repo, "rev-parse", "HEAD"), command, tuple(configured)))


@pytest.mark.parametrize("command,expected", [
    ("sh check.sh", ["check.sh"]), ("sh ./check.sh", ["check.sh"]), ("bash check.sh && test -f w1.txt", ["check.sh"]),
    ("pytest -q tests/test_a.py::test_a", ["tests/test_a.py"]), ("python -m pytest tests", ["tests"]),
    ("test -f w1.txt", []), ("pytest .", []), ("sh ../check.sh", []), ("sh $X", []), ("sh 'check.sh", ["check.sh"]),
    ("cat f.txt > /dev/null # check.sh", ["f.txt"]),
])
def test_the_words_of_the_verify_command_that_name_files_at_the_base(repo, command, expected):
    assert files(repo, command) == expected


def test_the_project_names_more(repo):
    assert files(repo, "make test", ["tests/", "Makefile"]) == ["Makefile", "tests"]


def test_a_branch_changing_them_is_seen_with_its_diff(repo):
    base = g(repo, "rev-parse", "HEAD")
    g(repo, "switch", "-q", "-c", "plugkit/w1")
    commit(repo, "check.sh", "exit 0\n")
    commit(repo, "src.txt", "code\n")
    changed, diff = asyncio.run(check.touched(repo, base, "plugkit/w1", ["check.sh", "tests"]))
    assert changed == ["check.sh"] and "+exit 0" in diff and "src.txt" not in diff
    assert asyncio.run(check.touched(repo, base, "plugkit/w1", ["tests"])) == ([], "")
