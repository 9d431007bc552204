"""A hidden approve from the shell tool of real agent hosts (issue 28, item 4), headless
against the scripted fake model: spelled in base64 so the hook never sees `approve`, once
detached with setsid (reparented to init: no host above it, and no terminal) and once run
plainly under the host. Before, the runner found "no agent" and recorded a person's
`terminal` approval: for the setsid form under every host, and for the plain form under
OpenCode, Kilo and Copilot CLI (not in its four host names). Now both are refused."""

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


def hidden(command: str, setsid: bool, out: str) -> str:
    code = base64.b64encode(f"{command}; echo rc=$?".encode()).decode()
    start = f"(setsid sh -c \"$(echo {code} | base64 -d)\" > {out} 2>&1 &)" if setsid else \
        f"sh -c \"$(echo {code} | base64 -d)\" > {out} 2>&1"
    return f"{start}; for i in $(seq 200); do grep -q rc= {out} && break; sleep 0.1; done; cat {out}"


@pytest.mark.parametrize("name", CHECKED)
def test_rejects_a_hidden_approve_from_the_hosts_shell_tool(tmp_path, home, name):
    host: Host = installed(ALL[name])
    steps = tuple(("prd", "add", f"risky {i}", "--id", i, "--risk", "critical") for i in ("c1", "c2"))
    work, host_home = project(tmp_path, host, cli_argv(), home.env, dict(ENFORCED), steps=steps)
    approve = shlex.join(cli_argv()) + f" approve {{}} --cwd {shlex.quote(str(work))}"
    script = Script([host.shell(hidden(approve.format("c1"), True, "c1.out")),
                     host.shell(hidden(approve.format("c2"), False, "c2.out")), Say("Approved.")])
    result = run(host, script, work, host_home, env={"PWD": str(work)}, timeout=150)
    why = result.explain()
    assert result.proc.returncode == 0, why
    said = [(work / f).read_text() for f in ("c1.out", "c2.out")]
    assert "rc=1" in said[0] and "no terminal of its own" in said[0], (said, why)
    assert "rc=1" in said[1] and "approval refused" in said[1], (said, why)
    listing = json.loads(home.cli("approve", "--list", "--json", "--cwd", str(work)).stdout)
    assert listing["approvals"] == [] and listing["waiting"] == ["c1", "c2"], listing
