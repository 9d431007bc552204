"""An item completes only on a receipt of its own check, run green by the runner at the
current git HEAD, and only a person changes a check once it exists (issue 28, item 3).
Tried for real against the runner in a git repository with gates = "enforce": receipts of
`true`, of the right command run outside the runner's HEAD-pinned check, of a red run,
of a run before the last commit; `prd update --verify` from the agent, from under an agent
host, and from a person's terminal."""

import json
import shlex
import subprocess

import pytest

from tests.support.agent import Agent, git, make_repo
from tests.support.approvals import fake_host, person, run_under_host, status
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e

CHECK = "test -f done.txt"


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\nverify = "test -f README"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    agent.plugkit("prd", "add", "make done.txt", "--id", "w1", "--risk", "high", "--verify", CHECK)
    return agent


def receipt_of(agent: Agent, code: str) -> str:
    ran, _ = agent.exec_task(code)
    return agent.json("evidence", "add", "--task", str(ran), "--subject", "w1")["id"]


def complete(agent: Agent, receipt: str, ok: bool) -> subprocess.CompletedProcess:
    return agent.plugkit("prd", "update", "w1", "--status", "completed", "--evidence", receipt, ok=ok)


def test_a_receipt_of_another_command_does_not_complete_the_item(agent):
    for code in ("true", "test -f README"):  # any green run; the workspace's check, not the item's own
        refused = complete(agent, receipt_of(agent, code), ok=False)
        assert "is not a receipt of w1's check" in refused.stderr, refused.stderr
        assert "plugkit prd verify w1" in refused.stderr
    assert status(agent, "w1") == "pending"


def test_only_the_runners_run_of_the_check_at_head_completes_it(agent):
    (agent.repo / "done.txt").write_text("done\n")
    # The right command, run by the runner, but not as the item's check: at which HEAD is unknown.
    refused = complete(agent, receipt_of(agent, CHECK), ok=False)
    assert "at no known git HEAD" in refused.stderr and "plugkit prd verify w1" in refused.stderr

    (agent.repo / "done.txt").unlink()
    red = agent.plugkit("prd", "verify", "w1", "--json", ok=False)
    red = json.loads(red.stdout)
    assert red["outcome"] == "red"
    assert "ended failed" in complete(agent, red["receipt"], ok=False).stderr

    (agent.repo / "done.txt").write_text("done\n")
    green = agent.json("prd", "verify", "w1")
    assert green["outcome"] == "green" and green["head"] == git(agent.repo, "rev-parse", "HEAD").strip()
    assert f"run as a check at git HEAD {green['head']}" in agent.plugkit("evidence", "show", green["receipt"]).stdout
    git(agent.repo, "add", "done.txt")
    git(agent.repo, "commit", "-q", "-m", "done")  # HEAD moves: the run no longer checked what is there
    refused = complete(agent, green["receipt"], ok=False)
    assert "HEAD moved since" in refused.stderr and "plugkit prd verify w1" in refused.stderr

    fresh = agent.json("prd", "verify", "w1")["receipt"]
    done = agent.json("prd", "update", "w1", "--status", "completed", "--evidence", fresh)
    assert done["status"] == "completed" and done["evidence"] == [fresh]


def in_task(home, agent: Agent, *args: str) -> str:
    """The agent's own code run by the runner (an `exec:` call) typing a plugkit verb: what it printed."""
    argv = cli_argv() + list(args) + ["--session", agent.session, "--cwd", str(agent.repo)]
    line = f"env -u PLUGKIT_TASK_ID PLUGKIT_HOME={shlex.quote(str(home.path))} {shlex.join(argv)}"
    return agent.exec_task(line)[1]


def verify_of(agent: Agent, item_id: str) -> str:
    return next(i for i in agent.json("prd", "list")["items"] if i["id"] == item_id)["verify"]


def test_the_agent_cannot_weaken_a_check_and_a_person_can_change_it(agent, home, tmp_path):
    said = in_task(home, agent, "prd", "update", "w1", "--verify", "true")
    assert "changing w1's check is a person's act" in said, said
    assert "`plugkit prd update w1 --verify CMD`" in said
    # From under an agent host (its prompt never asked the person): refused the same way, in one line.
    under = run_under_host(home, agent, fake_host(tmp_path), "plugkit prd update w1 --verify true")
    assert under.returncode == 1 and "person's act" in under.stderr
    assert len(under.stderr.strip().splitlines()) == 1, under.stderr
    # An item with no check of its own is checked by the workspace's: overriding it is a change too.
    agent.plugkit("prd", "add", "more", "--id", "w2")
    assert "person's act" in in_task(home, agent, "prd", "update", "w2", "--verify", "true")
    assert (verify_of(agent, "w1"), verify_of(agent, "w2")) == (CHECK, None)

    changed = person(home, agent, "prd", "update", "w1", "--verify", "true")
    assert changed.returncode == 0, (changed.stdout, changed.stderr)
    assert verify_of(agent, "w1") == "true"


def test_a_check_may_be_added_where_there_was_none(home, tmp_path):
    repo = make_repo(tmp_path / "bare", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    agent.plugkit("prd", "add", "a thing", "--id", "w1")
    refused = agent.plugkit("prd", "update", "w1", "--status", "completed", "--evidence",
                            receipt_of(agent, "true"), ok=False)
    assert "w1 has no check" in refused.stderr and "--verify" in refused.stderr
    agent.plugkit("prd", "update", "w1", "--verify", "test -f README")
    done = agent.json("prd", "update", "w1", "--status", "completed", "--evidence",
                      agent.json("prd", "verify", "w1")["receipt"])
    assert done["status"] == "completed"
