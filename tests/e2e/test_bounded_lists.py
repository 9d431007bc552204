"""Listings stay short when there is much to list: exec:tasks shows the running tasks and the
last ten that ended with a count of the rest, `prd list` on a 1,000-item .prd shows the first
items of each status and a count, not a line naming 1,000 ids; --all lists everything."""

import json
import re

import pytest

from tests.support.agent import Agent, make_repo

pytestmark = pytest.mark.e2e
SESSION = {"PLUGKIT_SESSION": "lists"}


def test_tasks_shows_the_running_and_the_last_ten(home):
    running = home.cli("exec:bash", "--wait", "0", "sleep 60", env=SESSION)
    long_id = re.search(r"task_(\d+)", running.stderr).group(1)
    try:
        for n in range(14):
            assert home.cli("exec:bash", f"echo {n}", env=SESSION).returncode == 0
        listed = home.cli("exec:tasks", env=SESSION)
        rows = [line for line in listed.stdout.splitlines() if line.startswith("task_")]
        assert len(rows) == 11, listed.stdout  # the running one, then the last ten that ended
        assert rows[0].startswith(f"task_{long_id} ") and "running" in rows[0]
        assert "4 older ended tasks not shown (15 in all)" in listed.stdout
        assert "plugkit exec:tasks --all" in listed.stdout
        every = home.cli("exec:tasks", "--all", env=SESSION)
        assert len([line for line in every.stdout.splitlines() if line.startswith("task_")]) == 15
    finally:
        home.cli("exec:close", f"task_{long_id}", env=SESSION)


def test_prd_list_of_a_thousand_items_is_short(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "true"\n')
    items = [{"id": f"w{i}", "subject": f"item {i}", "status": "pending",
              **({"blocked_by": [f"w{i - 1}"]} if i % 2 else {})} for i in range(1, 1001)]
    (repo / ".prd").write_text(json.dumps(items))
    agent = Agent(home, repo)
    listed = agent.plugkit("prd", "list").stdout
    assert len(listed.splitlines()) < 40, listed[:500]
    assert len(listed) < 4000, len(listed)
    assert "more items (" in listed and "1000 in all" in listed and "prd list --all" in listed
    waves = next(line for line in listed.splitlines() if line.startswith("waves"))
    assert len(waves) < 400 and "more" in waves, waves
    every = agent.plugkit("prd", "list", "--all").stdout
    assert all(f"w{i} " in every for i in (1, 500, 1000))
    status = agent.plugkit("gate", "status").stdout
    assert all(len(line) < 400 for line in status.splitlines()), status
