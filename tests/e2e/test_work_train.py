"""The landing queue checks its branches side by side (runner/core/work/train.py): a branch that
joins the queue is integrated at once onto the tip the ones ahead of it will leave and checked
there, not only in its turn; it still lands in the queue's order, on exactly the tree its check
ran on. Real runner, real git, the command worker (tests/support/work_agent.py)."""

import sys

import pytest

from tests.support.agent import git
from tests.support.work_cli import Work, repo  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.e2e

WAIT_S = 60  # how long a check waits for the other one to start beside it (red after)


def _go(repo, item: str) -> None:
    (repo / ".plugkit" / "worktrees" / item / "go").write_text("")


def _gated(name: str) -> list:
    return [["until", "go"], ["shell", "rm -f go"], ["write", f"{name}.txt", f"{name}\n"], ["commit", name]]


def _meets(me: str, other: str, marks) -> str:
    """A check green on its own branch; on a tree with w1's work it leaves a mark of its own run
    and is green only when a run of the other item's check on such a tree is under way beside it:
    two checks that run one after the other never meet, and the first goes red."""
    wait = (f"{sys.executable} -c \"import glob,sys,tempfile,time; tempfile.mkstemp(prefix='{me}.', dir='{marks}')\n"
            f"t=time.monotonic()+{WAIT_S}\n"
            f"while not glob.glob('{marks}/{other}.*') and time.monotonic() < t: time.sleep(0.05)\n"
            f"sys.exit(0 if glob.glob('{marks}/{other}.*') else 'the check of {other} did not run beside')\"")
    return f"test -f {me}.txt && {{ test ! -f w1.txt || {wait}; }}"


def test_the_queued_branches_are_checked_side_by_side_and_land_in_order(home, repo, tmp_path):
    marks = tmp_path / "marks"
    marks.mkdir()
    w = Work(home, repo, {name: _gated(name) for name in ("w1", "w2", "w3")})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", _meets("w2", "w3", marks))
    w.add("w3", "--verify", _meets("w3", "w2", marks))
    w.start("--parallel", "3", "--no-sandbox")  # the marks live outside every checkout
    w.until(lambda r: all(i["state"] == "running" for i in r["items"]))
    _go(repo, "w1")
    w.until(lambda r: ("w1", 1, "landed") in _queue(r))
    _go(repo, "w2")  # green together, each rebased onto w1's work: their checks meet only side by side
    _go(repo, "w3")
    run = w.until(lambda r: r["ended_at"] is not None, timeout=WAIT_S + 30)
    items = w.items(run)
    assert [items[i]["state"] for i in ("w1", "w2", "w3")] == ["completed"] * 3, run
    order = [e["item"] for e in run["queue"]]
    assert _queue(run) == [(name, 1, "landed") for name in order] and order[0] == "w1", run
    # Each checked once on a tree with w1's work (the one that landed): not again in its turn.
    assert sorted(p.name.split(".")[0] for p in marks.iterdir()) == ["w2", "w3"], list(marks.iterdir())
    # In the queue's order, each on the tip the one before it left, as the very commit its check ran on.
    assert git(repo, "log", "--format=%s", "main").splitlines()[:3] == order[::-1]
    for back, name in enumerate(order[::-1]):
        assert items[name]["landed"] == git(repo, "rev-parse", f"main~{back}").strip(), items[name]
    second, third = (items[name] for name in order[1:])
    assert third["phases"]["recheck"] < second["phases"]["landed"], (second, third)  # checked before its turn


def _queue(run: dict) -> list[tuple[str, int, str]]:
    return [(e["item"], e["attempt"], e["state"]) for e in run["queue"]]
