"""A hidden approve from the shell tool of a real agent host (issue 28, item 4; the three ways
are tests/hosts/hidden_approve.py), headless against the scripted fake model. Before, the runner
found "no agent" and recorded a person's `terminal` approval: for the setsid and pty forms under
every host, and for the plain form under OpenCode, Kilo and Copilot CLI (not in its four host
names). Now all are refused: Claude Code here; OpenCode, Kilo and Copilot CLI in their one gated
session of tests/hosts/test_more_hosts.py (a host start is most of a test's time)."""

import json

import pytest

from tests.hosts.hidden_approve import ITEMS, STEPS, refusals, turns
from tests.hosts.hosts import ENFORCED, HOSTS, installed, project, run
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


def test_rejects_a_hidden_approve_from_the_hosts_shell_tool(tmp_path, home):
    host = installed(HOSTS["claude"])
    work, host_home = project(tmp_path, host, cli_argv(), home.env, dict(ENFORCED), steps=STEPS)
    script = Script([*turns(host, cli_argv(), work), Say("Approved.")])
    result = run(host, script, work, host_home, env={"PWD": str(work)})
    why = result.explain()
    assert result.proc.returncode == 0, why
    assert refusals(work) == [], why
    listing = json.loads(home.cli("approve", "--list", "--json", "--cwd", str(work)).stdout)
    assert listing["approvals"] == [] and listing["waiting"] == list(ITEMS), listing
