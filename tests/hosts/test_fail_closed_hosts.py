"""Under gates = "enforce" with the runner wedged (SIGSTOP: there, holding its port, answering
nothing), each real host's file-write tool is refused by plugkit's hook, the refusal naming
`plugkit runner restart` reaches the model, and the file is never written. The fail-open
counterpart (a workspace that never opted in) is test_real_hosts' runner-unreachable test."""

import os
import signal

import pytest

from tests.hosts.hosts import HOSTS, Host, gated_project, installed, run
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
ALL_HOSTS = {**HOSTS, **MORE_HOSTS}


@pytest.fixture(params=list(ALL_HOSTS))
def host(request) -> Host:
    return installed(ALL_HOSTS[request.param])


def test_a_wedged_runner_under_enforce_refuses_the_hosts_write(tmp_path, home, host):
    work, host_home, _item = gated_project(tmp_path, host, cli_argv(), home.env)  # `prd add` started the runner
    pids = home.runner_pids()
    assert pids, "the runner should be up after `plugkit prd add`"
    script = Script([host.write(str(work / "a.py"), "x = 1\n"), Say("Finished."), Say("Finished, really.")])
    for pid in pids:
        os.kill(pid, signal.SIGSTOP)
    try:
        result = run(host, script, work, host_home, env={"PWD": str(work)})
    finally:
        for pid in pids:
            os.kill(pid, signal.SIGCONT)
    why = result.explain()
    assert result.proc.returncode == 0, why
    refused = script.reply_to(0)
    assert refused is not None and "plugkit runner restart" in refused.newest, why
    assert not (work / "a.py").exists(), why
