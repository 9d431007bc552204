"""A `plugkit work` branch cannot weaken its check from outside the files its command names
(issue 44 #3): through the real CLI, daemon and a `--worker command` worker, a check that runs
pytest without naming a file is held touches_check, with the evidence, when the branch skips,
deletes or deselects a test the base ran or changes what configures pytest; a branch that only
adds passing tests lands."""

import json
import sys
from pathlib import Path

import pytest

from tests.support.work_cli import Work
from tests.support.agent import git, make_repo
from tests.support.check_weaken import TWO

pytestmark = pytest.mark.e2e

CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider"  # names no file: the gap this closes


@pytest.fixture
def repo(tmp_path) -> Path:
    path = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    (path / "tests").mkdir()
    (path / "tests" / "test_one.py").write_text("def test_one():\n    assert True\n")
    (path / "tests" / "test_two.py").write_text(TWO)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "the tests")
    return path


WEAKENINGS = {
    "skip_marker": ([["write", "tests/test_two.py", "import pytest\n\n\n@pytest.mark.skip\n" + TWO]],
                    "tests/test_two.py::test_two newly skipped"),
    "xfail_marker": ([["write", "tests/test_two.py", TWO.replace("def test_three", "@pytest.mark.xfail\ndef test_three")
                       .replace("def test_two", "import pytest\n\n\ndef test_two", 1)]],
                     "tests/test_two.py::test_three newly xfailed"),
    "test_deleted": ([["shell", "git rm -q tests/test_two.py"]], "tests/test_two.py::test_two disappeared"),
    "conftest_deselects": ([["write", "tests/conftest.py",
                             "def pytest_collection_modifyitems(config, items):\n"
                             "    keep = [i for i in items if 'two' not in i.name]\n"
                             "    config.hook.pytest_deselected(items=[i for i in items if i not in keep])\n"
                             "    items[:] = keep\n"]], "tests/conftest.py"),
    "pyproject_addopts": ([["write", "pyproject.toml", "[tool.pytest.ini_options]\naddopts = \"-k 'not two'\"\n"]],
                          "pyproject.toml [tool.pytest]"),
}


@pytest.mark.parametrize("how", list(WEAKENINGS))
def test_a_branch_weakening_its_pytest_check_is_held_with_the_evidence(home, repo, how):
    steps, evidence = WEAKENINGS[how]
    w = Work(home, repo, {"w1": [*steps, ["write", "feature.txt", "x"], ["commit", "the feature"]]})
    w.add("w1", "--verify", CHECK)
    w.start("--afk")
    run = w.settled()
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert (it["state"], it["reason"]) == ("blocked", "touches_check"), why
    assert evidence in it["message"] and "plugkit work allow-check w1" in it["message"], why
    assert not it["landed"] and not (repo / "feature.txt").exists(), why


def test_a_branch_adding_passing_tests_lands(home, repo):
    w = Work(home, repo, {"w1": [["write", "tests/test_new.py", "def test_new():\n    assert True\n"],
                                 ["write", "feature.txt", "x"], ["commit", "the feature and its test"]]})
    w.add("w1", "--verify", CHECK)
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert it["state"] == "completed", json.dumps(run, indent=1)
    assert (repo / "tests" / "test_new.py").exists() and (repo / "feature.txt").exists()
