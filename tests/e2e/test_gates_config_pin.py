"""The workspace's settings are held by the runner (issue 28, item 2): from the moment the
workspace opts in, `.plugkit/config.toml` is a view. Each edit below, made from the agent's
shell, switched enforcement off before (a write before EMIT and Stop went from deny to
allow, and gate status said nothing); now the held setting stays in force, the edit shows
as tampered everywhere, and only a person's `plugkit gate confirm-config` takes it."""

import json
import subprocess
from pathlib import Path

import pytest

from plugkit.enforce_pins import pin_path
from tests.support.agent import SID, Agent, make_repo
from tests.support.person import person_cli
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e

CONFIG = ".plugkit/config.toml"
WEAKENINGS = {
    "sed": "sed -i s/enforce/off/ .plugkit/config.toml",
    "python": "python3 -c \"open('.plugkit/config.toml', 'w').write('gates = \\\"advisory\\\"\\n')\"",
    "rm": "rm .plugkit/config.toml",
}


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "enforce"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")  # the runner sees the workspace opted in
    return agent


def context(agent: Agent) -> str:
    return json.loads(agent.hook("SessionStart", source="resume").stdout)["hookSpecificOutput"]["additionalContext"]


@pytest.mark.parametrize("edit", list(WEAKENINGS))
def test_rejects_switching_enforcement_off_from_the_shell(agent, edit):
    assert agent.write("a.py", "x = 1\n")[0] == "deny"
    subprocess.run(["bash", "-c", WEAKENINGS[edit]], cwd=agent.repo, check=True)

    assert agent.write("a.py", "x = 1\n")[0] == "deny"
    block, reason = agent.stop()
    assert block and CONFIG in reason and "tampered" in reason, reason
    st = agent.json("gate", "status")
    assert st["mode"] == "enforce"
    assert any(t.startswith(f"{CONFIG}: gates says ") and 'the runner holds "enforce"' in t for t in st["tampered"])
    assert "TAMPERED" in context(agent) and "plugkit gate confirm-config" in context(agent)


def test_a_stronger_setting_is_adopted_and_a_weaker_one_is_not(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    (repo / CONFIG).write_text('gates = "enforce"\nverify = "true"\n')
    st = agent.json("gate", "status")
    assert st["mode"] == "enforce" and st["tampered"] == []
    (repo / CONFIG).write_text('gates = "enforce"\nverify = "exit 0"\n')  # one check for another: not ranked
    assert [t.split(" says")[0] for t in agent.json("gate", "status")["tampered"]] == [f"{CONFIG}: verify"]
    (repo / CONFIG).write_text('gates = "enforce"\nverify = "true"\n')  # edited back: nothing to show
    assert agent.json("gate", "status")["tampered"] == []


def test_only_a_person_confirms_a_weaker_setting(agent, home):
    subprocess.run(["bash", "-c", WEAKENINGS["sed"]], cwd=agent.repo, check=True)
    # The agent's shell has no terminal of its own (a new session, whoever runs the suite).
    refused = subprocess.run(cli_argv() + ["gate", "confirm-config", "--session", SID, "--cwd", str(agent.repo)],
                             env=home.env, capture_output=True, text=True, timeout=60, start_new_session=True)
    assert refused.returncode == 1 and "confirmation refused" in refused.stderr, refused.stderr
    assert agent.write("a.py", "x = 1\n")[0] == "deny"
    fail_closed = Path(pin_path(str(home.path), str(agent.repo)))
    assert fail_closed.exists()  # the hooks' own pin: enforced even with no runner answering

    person = person_cli(home, "gate", "confirm-config", "--session", SID, cwd=agent.repo)
    assert person.returncode == 0 and "gates: 'enforce' -> 'off'" in person.stdout, person.stdout
    st = agent.json("gate", "status")
    assert st["mode"] == "off" and st["tampered"] == []
    assert any("settings confirmed by" in n for n in st["notices"])
    assert agent.write("a.py", "x = 1\n")[0] == "allow"
    assert not fail_closed.exists()  # the person's decision reaches the fail-closed hooks too
