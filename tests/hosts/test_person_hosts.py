"""A hidden approve from the shell tool of real agent hosts (issue 28, item 4), headless
against the scripted fake model: spelled in base64 so the hook never sees `approve`, once
detached with setsid (reparented to init: no host above it, and no terminal), once run
plainly under the host, once detached in a pty of its own (`setsid script`: a terminal,
and only the environment the host gave its shell left to tell). Before, the runner found
"no agent" and recorded a person's `terminal` approval: for the setsid and pty forms
under every host, and for the plain form under OpenCode, Kilo and Copilot CLI (not in
its four host names). Now all are refused."""

import base64
import json
import shlex

import pytest

from tests.hosts.hosts import ENFORCED, HOSTS, Host, installed, project, run
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
ALL = {**HOSTS, **MORE_HOSTS}
CHECKED = ("claude", "opencode", "kilo", "copilot")


# How the hidden command is started: detached with setsid (no terminal, reparented to init),
# plainly under the host, and detached in a pseudo-terminal of its own (`script`).
STARTS = {
    "setsid": "(setsid sh -c \"$(echo {code} | base64 -d)\" > {out} 2>&1 &)",
    "plain": "sh -c \"$(echo {code} | base64 -d)\" > {out} 2>&1",
    "pty": "(setsid script -qec \"sh -c \\\"\\$(echo {code} | base64 -d)\\\"\" /dev/null > {out} 2>&1 &)",
}
# Each is refused by the first rule it meets: the host's marker in its environment comes
# before the missing terminal (tests/e2e/test_gates_person.py shows each rule alone).
MARKED = "its environment was set by an agent host"
REASONS = {"setsid": (MARKED, "no terminal of its own"), "plain": ("approval refused",), "pty": (MARKED,)}


def hidden(command: str, how: str, out: str) -> str:
    code = base64.b64encode(f"{command}; echo rc=$?".encode()).decode()
    start = STARTS[how].format(code=code, out=out)
    return f"{start}; for i in $(seq 200); do grep -q rc= {out} && break; sleep 0.1; done; cat {out}"


@pytest.mark.parametrize("name", CHECKED)
def test_rejects_a_hidden_approve_from_the_hosts_shell_tool(tmp_path, home, name):
    host: Host = installed(ALL[name])
    items = dict(zip(("c1", "c2", "c3"), STARTS))
    steps = tuple(("prd", "add", f"risky {i}", "--id", i, "--risk", "critical") for i in items)
    work, host_home = project(tmp_path, host, cli_argv(), home.env, dict(ENFORCED), steps=steps)
    approve = shlex.join(cli_argv()) + f" approve {{}} --cwd {shlex.quote(str(work))}"
    script = Script([host.shell(hidden(approve.format(i), how, f"{i}.out")) for i, how in items.items()]
                    + [Say("Approved.")])
    result = run(host, script, work, host_home, env={"PWD": str(work)})
    why = result.explain()
    assert result.proc.returncode == 0, why
    for item, how in items.items():
        said = (work / f"{item}.out").read_text()
        assert "rc=1" in said and any(r in said for r in REASONS[how]), (how, said, why)
    listing = json.loads(home.cli("approve", "--list", "--json", "--cwd", str(work)).stdout)
    assert listing["approvals"] == [] and listing["waiting"] == list(items), listing
