"""The weakening check collects the branch's tests with a plugin that writes what pytest collected
into the checkout (runner/core/gates/collect.py), and the runner read that file with a plain open():
a test module of the branch, imported during collection, left a FIFO in its place at exit, and the
read waited for ever, the item stuck in verifying and the runner's thread with it. Real CLI,
daemon, git and pytest; a `--worker command` worker."""

import sys
from pathlib import Path

import pytest

from tests.support.agent import git, make_repo
from tests.support.check_weaken import TWO
from tests.support.work_cli import Work

pytestmark = pytest.mark.e2e

CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider"
PLANT = ("import atexit\nimport os\n\n\ndef _plant():\n"
         "    out = os.path.join(os.getcwd(), '.plugkit-collect', 'out.jsonl')\n"
         "    if os.path.isdir(os.path.dirname(out)):\n"
         "        if os.path.lexists(out):\n            os.unlink(out)\n        os.mkfifo(out)\n\n\n"
         "atexit.register(_plant)\n\n\ndef test_new():\n    assert True\n")


@pytest.fixture
def repo(tmp_path) -> Path:
    path = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    (path / "tests").mkdir()
    (path / "tests" / "test_two.py").write_text(TWO)
    git(path, "add", "-A")
    git(path, "commit", "-qm", "the tests")
    return path


def test_a_fifo_for_the_collection_report_holds_the_item_and_never_the_runner(home, repo):
    w = Work(home, repo, {"w1": [["write", "tests/test_new.py", PLANT], ["commit", "a new test"]]})
    w.add("w1", "--verify", CHECK)
    w.start("--afk")
    run = w.settled(timeout=150)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "touches_check"), run  # unread: nothing proven kept
    assert "tests/test_two.py::test_two disappeared" in it["message"], it["message"]
    stop = home.cli("runner", "stop", timeout=120)
    assert stop.returncode == 0 and "killed" not in stop.stdout + stop.stderr, (stop.stdout, stop.stderr)
