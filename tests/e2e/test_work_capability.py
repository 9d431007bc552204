"""A sandboxed worker reaches the runner only with its own capability (runner/system/
capabilities.py, runner/rpc/scope.py): a hostile command worker (tests/fixtures/
capability_attacks.py) against the real runner, real bwrap and real git. The token its
sandbox shows is not the runner's; with it, every call beyond its item and worktree is
refused and kept on its item; the task it runs through exec: does not see the token either;
its own item still lands; and the capability dies with the attempt."""

import sys
from pathlib import Path

import pytest

from tests.support.work_cli import Work
from tests.support.agent import make_repo
from tests.support.attempts import PRELUDE
from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e
ATTACKS = str(Path(__file__).resolve().parents[1] / "fixtures" / "capability_attacks.py")
EXPECTED = ("update_another_item", "update_its_item_in_the_main_checkout", "approve", "confirm_config",
            "read_another_sessions_tasks", "read_another_sessions_output", "stop_the_run",
            "shut_the_runner_down", "debug_snapshot", "leave_a_detached_task")


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def test_a_worker_reaches_the_runner_only_with_its_own_capability(home, repo):
    w = Work(home, repo, {})
    w.add("w1", "--verify", "test -f done.txt")
    w.add("w2", "--verify", "true")
    # A person's session in the main checkout, with output the worker must not read.
    home.cli("exec:bash", "--session", "person", "echo person-secret", cwd=repo)
    w.cli("work", "--items", "w1", "--run", f"{sys.executable} {ATTACKS} {repo} person", "--json")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    logs = w.cli("work", "logs", "w1").stdout
    token = home.token()
    assert token not in logs, "the runner's token reached the worker"
    seen = next(line.split()[1] for line in logs.splitlines() if line.startswith("TOKEN "))
    assert seen.startswith("pkw_"), logs  # its own capability, at the token's path
    results = dict(line.split()[1:3] for line in logs.splitlines() if line.startswith("ATTACK "))
    assert set(results) == set(EXPECTED) and set(results.values()) == {"denied"}, logs
    assert "person-secret" not in logs
    exec_line = next(line for line in logs.splitlines() if line.startswith("EXEC") or "Error" in line)
    assert token not in exec_line, logs
    assert (it["state"], it["reason"]) == ("completed", "landed"), run
    assert w.prd()["w2"]["status"] == "pending"
    refused = " ".join(it.get("refused") or [])
    assert "approval.grant" in refused and "gate.confirm_config" in refused and "prd.update on w2" in refused, it
    # Revoked with the attempt: the capability the worker held calls nothing now.
    from client.wire.rpc import Client, Connection, RunnerUnavailable  # the project's own client

    stale = Client(Connection(home.port), token=seen)
    with pytest.raises(RunnerUnavailable, match="HTTP 401"):
        stale.call("task.list", {"session_id": "x", "cwd": str(repo)})
    stale.close()
    assert rpc(home, "runner.info")["pid"] == home.discovery()["pid"]  # the runner still up


LEAK = PRELUDE + """
attempt("verify_reads_the_token", lambda: open({token!r}).read())
attempt("verify_writes_outside", lambda: open({outside!r}, "w").write("pwned"))
"""


def test_the_check_that_runs_the_workers_code_runs_in_its_sandbox_too(home, repo, tmp_path):
    """The runner's verify runs what the worker committed (a module its check imports): that code
    meets the same sandbox, or the worker would get out through its own check."""
    leak = LEAK.format(token=str(home.path / "token"), outside=str(tmp_path / "verify-leak.txt"))
    w = Work(home, repo, {"w1": [["write", "leakmod.py", leak], ["commit", "a module the check imports"]]})
    w.add("w1", "--verify", f"{sys.executable} -m leakmod")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    out = w.cli("work", "logs", "w1", "--verify").stdout
    assert "ATTACK verify_reads_the_token denied" in out and "ATTACK verify_writes_outside denied" in out, out
    assert not (tmp_path / "verify-leak.txt").exists() and home.token() not in out
    assert w.items(run)["w1"]["state"] == "completed", run
