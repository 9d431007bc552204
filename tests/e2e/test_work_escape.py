"""A live worker's worktree is not an escape hatch: another session whose hook cwd is in it
gets the gates of the run's workspace, not the worker policy. The worker's own session (the
tag the runner set when it spawned the worker) keeps the worker policy. Through the real
`plugkit hook`, against a live `plugkit work` worker and real git."""

import sys

import pytest

from tests.support.work_cli import AGENT, Work
from tests.support.agent import Agent, make_repo

pytestmark = pytest.mark.e2e


def test_the_main_agent_in_a_live_workers_worktree_still_meets_its_gates(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    w = Work(home, repo, {"w1": [["hang"]]})
    w.add("w1", "--verify", "true")
    w.cli("work", "--run", f"{sys.executable} {AGENT}", "--json")
    try:
        w.until(lambda r: w.items(r)["w1"]["state"] == "running")
        worktree = repo / ".plugkit" / "worktrees" / "w1"
        assert worktree.is_dir()
        main = Agent(home, repo, session="main-agent")
        assert main.write("a.py", "x = 1\n")[0] == "deny"  # PLAN, in the workspace itself
        # The same agent, cd'd into the worker's worktree: the same gates, not the worker's policy.
        inside = Agent(home, worktree, session="main-agent")
        # (a path under the workspace's .plugkit/ is plugkit's own, so the gates name that rule)
        decision, reason = inside.write("a.py", "x = 1\n")
        assert decision == "deny" and "plugkit work" not in reason, (decision, reason)
        blocked, why = inside.stop()
        assert blocked and "plugkit work" not in why and "w1" in why, why
        context = inside.hook("SessionStart", source="startup").stdout.decode()
        assert "you are the worker" not in context, context
    finally:
        w.cli("work", "stop")
