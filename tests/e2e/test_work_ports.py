"""Ports per worker and the teardown of what a worker started (issue 48 #2, #3), through the real
runner, real git, real bwrap and the scripted command worker: two workers serve on their own
leased ports at once, find them in PORT, PLUGKIT_PORTS and .env, and once their attempts end
(one landed, one killed by `work stop`) nothing they started listens or runs, not a background
server, not a `setsid nohup` child, not an `exec:` task, and the run's journal says what was
torn down."""

import socket
import sys
import time
import urllib.request
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import git, make_repo
from tests.support.escapees import gone, kill_all, unique_seconds

pytestmark = pytest.mark.e2e


def serve(seconds: str) -> str:
    """A worker's dev servers: one in the background, one as an `exec:` task of the runner (its
    own sandbox, outside the worker's), and a `setsid nohup` child; then it reports its ports
    and waits for the test's go."""
    return ("python3 -m http.server $PORT --bind 127.0.0.1 >srv.log 2>&1 & "
            f"setsid nohup sleep {seconds} >/dev/null 2>&1 & "
            f"{sys.executable} -m client.cli exec:bash --wait 0.5 "
            "\"exec python3 -m http.server $(( PORT + 1 )) --bind 127.0.0.1\" > exec.out 2>&1; "
            "echo $PORT $PLUGKIT_PORTS > served.txt.tmp; grep -E '^(PORT|PLUGKIT_PORTS)=' .env >> served.txt.tmp; "
            "mv served.txt.tmp served.txt; until [ -f go ]; do sleep 0.05; done")


def answers(port: int) -> bool:
    try:
        with urllib.request.urlopen(f"http://127.0.0.1:{port}/", timeout=2) as r:
            return r.status == 200
    except OSError:
        return False


def listened(port: int) -> bool:
    with socket.socket() as s:
        return s.connect_ex(("127.0.0.1", port)) == 0


def until(check, timeout: float = 30):
    deadline = time.monotonic() + timeout
    while not (got := check()) and time.monotonic() < deadline:
        time.sleep(0.05)
    return got


@pytest.fixture
def repo(tmp_path) -> Path:
    path = make_repo(tmp_path / "repo", 'gates = "advisory"\nwork_ports = 3\nwork_ports_env = true\n')
    (path / ".gitignore").write_text("*.txt.tmp\nserved.txt\nexec.out\nsrv.log\ngo\n")  # each worker's own
    git(path, "add", ".gitignore")
    git(path, "commit", "-qm", "ignore what the workers report")
    return path


def test_two_workers_serve_on_their_own_ports_at_once_and_leave_nothing_behind(home, repo):
    seconds = unique_seconds()
    steps = [["shell", serve(seconds)], *commit_file("done.txt")]
    w = Work(home, repo, {"w1": [*steps[:1], *commit_file("w1.txt")], "w2": [*steps[:1], *commit_file("w2.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    try:
        w.start("--parallel", "2")
        trees = [repo / ".plugkit" / "worktrees" / i for i in ("w1", "w2")]
        said = until(lambda: all((t / "served.txt").exists() for t in trees) and
                     [(t / "served.txt").read_text().split() for t in trees])
        ports = []
        for words in said:
            port, block, env_port, env_block = words
            first, last = map(int, block.split("-"))
            assert (int(port), last - first + 1) == (first, 3), words
            assert (env_port, env_block) == (f"PORT={port}", f"PLUGKIT_PORTS={block}"), words
            ports.append(range(first, last + 1))
        assert not set(ports[0]) & set(ports[1]), ports  # two workers never share a port
        # Both workers' servers, and their exec: tasks, answer at once, each on its own port.
        for block, t in zip(ports, trees):
            assert until(lambda b=block: answers(b[0])), (t / "srv.log").read_text()
            assert until(lambda b=block: answers(b[1])), (t / "exec.out").read_text()
        # w1 goes on to land; w2 is still serving when a person stops the run: two ends, one teardown.
        (trees[0] / "go").write_text("")
        w.until(lambda r: w.items(r)["w1"]["state"] == "completed")
        w.cli("work", "stop")
        run = w.until(lambda r: r["ended_at"] is not None)
        items = w.items(run)
        assert [items[i]["state"] for i in ("w1", "w2")] == ["completed", "killed"], run
        assert {items[i]["ports"] for i in ("w1", "w2")} == {f"{b[0]}-{b[-1]}" for b in ports}, run
        # Nothing either started is left: no listener on their ports, no detached child.
        left = [p for block in ports for p in block if listened(p)]
        assert not left, (left, [it["teardown"] for it in items.values()])
        assert gone(seconds), "a worker's setsid nohup child outlived its attempt"
        for i in ("w1", "w2"):
            assert items[i]["teardown"].startswith("teardown: ended task_"), items[i]
            assert "http.server" in items[i]["teardown"], items[i]
            assert items[i]["teardown"] in w.cli("work", "trace", i).stdout
        shown = w.cli("work", "status", ok=False).stdout
        assert all(items[i]["teardown"][:300] in shown and f"ports {items[i]['ports']}" in shown for i in items), shown
    finally:
        kill_all(seconds)
