"""The landing queue of `plugkit work` (issue 48 #4), with the command worker against the real
runner and real git: green branches land one at a time in the order they went green, rebased
onto the latest tip and checked again; a branch that conflicts, or whose check is red only on
the rebased tree, is evicted with the conflict's hunks or the check's output, and its next
attempt starts from the new tip with that in its prompt. A person's editor is never opened."""

import json
from pathlib import Path

import pytest

from tests.support.agent import git
from tests.support.work_cli import Work, repo  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.e2e

LINES = [f"line {n}" for n in range(1, 13)]


def _text(first: str = LINES[0], last: str = LINES[-1]) -> str:
    return "\n".join([first, *LINES[1:-1], last]) + "\n"


def _editors(repo: Path, tmp_path: Path) -> Path:
    """A person's editors that leave a mark when git runs them: a landing must never run one."""
    marker = tmp_path / "editor-ran"
    for key in ("core.editor", "sequence.editor"):
        git(repo, "config", key, f"touch {marker} && true")
    return marker


def _go(repo: Path, item: str) -> None:
    """Lets ITEM's first worker commit (it waits on the file `go` in its worktree, then removes it)."""
    (repo / ".plugkit" / "worktrees" / item / "go").write_text("")


def _gated(*steps: list) -> list:
    return [["until", "go"], ["shell", "rm -f go"], *steps]


def _queue(run: dict) -> list[tuple[str, int, str]]:
    return [(e["item"], e["attempt"], e["state"]) for e in run["queue"]]


def test_three_branches_on_one_file_land_in_queue_order_and_a_conflict_is_evicted_then_lands(home, repo,
                                                                                               tmp_path):
    (repo / "shared.txt").write_text(_text())
    git(repo, "add", "shared*.txt")
    git(repo, "commit", "-qm", "a file every item changes")
    marker = _editors(repo, tmp_path)
    w = Work(home, repo, {
        "w1": _gated(["write", "shared.txt", _text("one")], ["commit", "w1: first line"]),
        "w2": _gated(["write", "shared.txt", _text(last="two")], ["commit", "w2: last line"]),
        # w3 changes the line w1 changed: its rebase onto w1 conflicts. Its next attempt starts from
        # the new tip, prints the prompt it got (the eviction's hunks), and keeps both changes.
        "w3": [_gated(["write", "shared.txt", _text("three")], ["commit", "w3: first line"]),
               [["prompt"], ["write", "shared.txt", _text("one three", "two")], ["commit", "w3: first line, again"]]]})
    # (a glob, not the file's name: a file the check names is the check's own, and no branch may change it)
    w.add("w1", "--verify", "grep -qx one shared*.txt")
    w.add("w2", "--verify", "grep -qx two shared*.txt")
    w.add("w3", "--verify", "grep -q three shared*.txt")
    w.start("--parallel", "3")
    w.until(lambda r: all(i["state"] == "running" for i in r["items"]))
    for item in ("w1", "w2", "w3"):  # they go green in this order: the queue's order
        _go(repo, item)
        w.until(lambda r, item=item: item in [e["item"] for e in r["queue"]])
    evicted = w.until(lambda r: ("w3", 1, "evicted") in _queue(r))
    shown = w.cli("work", "status").stdout  # what a person reads while it runs
    assert "landing queue on main" in shown and "evicted" in shown and "conflicts with what landed" in shown, shown
    run = w.until(lambda r: r["ended_at"] is not None)
    items = w.items(run)
    assert [items[i]["state"] for i in ("w1", "w2", "w3")] == ["completed"] * 3, run
    assert _queue(run) == [("w1", 1, "landed"), ("w2", 1, "landed"), ("w3", 1, "evicted"), ("w3", 2, "landed")], run
    assert [e["green_at"] for e in run["queue"]] == sorted(e["green_at"] for e in run["queue"]), run
    # Landed one at a time, in that order, each on the tip the one before it left.
    subjects = git(repo, "log", "--format=%s", "main").splitlines()
    assert subjects[:3] == ["w3: first line, again", "w2: last line", "w1: first line"], subjects
    assert (repo / "shared.txt").read_text() == _text("one three", "two")
    # The eviction: the conflicting file and its hunk, on the queue and in the next attempt's prompt.
    entry = next(e for e in evicted["queue"] if e["item"] == "w3")
    assert "shared.txt" in entry["note"], entry
    for text in ("--- shared.txt", "<<<<<<<", "one", "three", ">>>>>>>"):
        assert text in entry["context"], entry
    w3 = items["w3"]
    assert (w3["attempt"], w3["failures"], w3["evictions"]) == (2, 1, 1), w3  # a new pass, counted
    prompt = w.cli("work", "logs", "w3", "--all").stdout
    assert "evicted from the landing queue" in prompt and "| <<<<<<<" in prompt and "| three" in prompt, prompt
    assert not marker.exists(), "a landing ran the person's editor"


def test_a_branch_red_only_on_the_rebased_tree_is_evicted_with_the_check_output_merge_mode(home, repo, tmp_path):
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + 'work_merge = "merge"\n')
    git(repo, "commit", "-qam", "land work by merge commits")
    marker = _editors(repo, tmp_path)
    w = Work(home, repo, {
        "w1": _gated(["write", "a.txt", "strict\n"], ["commit", "w1: a.txt"]),
        # w2's check is green on its own branch, red once merged with w1's a.txt.
        "w2": [_gated(["write", "b.txt", "plain\n"], ["commit", "w2: b.txt"]),
               [["prompt"], ["write", "b.txt", "compat\n"], ["commit", "w2: b.txt, compatible"]]]})
    w.add("w1", "--verify", "test -f a.txt")
    w.add("w2", "--verify", "test -f b.txt && { test ! -f a.txt || grep -q compat b.txt || "
                            "{ echo 'b.txt is not compatible with a.txt'; exit 1; }; }")
    w.start("--parallel", "2")
    w.until(lambda r: all(i["state"] == "running" for i in r["items"]))
    _go(repo, "w1")
    w.until(lambda r: ("w1", 1, "landed") in _queue(r))
    _go(repo, "w2")
    run = w.until(lambda r: r["ended_at"] is not None)
    items = w.items(run)
    assert [items[i]["state"] for i in ("w1", "w2")] == ["completed"] * 2, run
    assert _queue(run) == [("w1", 1, "landed"), ("w2", 1, "evicted"), ("w2", 2, "landed")], run
    entry = run["queue"][1]
    assert "red on the tree rebased" in entry["note"] and "b.txt is not compatible with a.txt" in entry["context"], entry
    assert items["w2"]["verify"] == "green" and items["w2"]["evictions"] == 1, items["w2"]
    prompt = w.cli("work", "logs", "w2", "--all").stdout
    assert "evicted from the landing queue" in prompt and "| b.txt is not compatible with a.txt" in prompt, prompt
    assert (repo / "b.txt").read_text() == "compat\n"
    assert json.loads(w.cli("work", "status", "--json").stdout)["run"]["queue"][-1]["state"] == "landed"
    assert not marker.exists(), "a landing ran the person's editor"
