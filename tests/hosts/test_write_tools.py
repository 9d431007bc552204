"""Every write tool of every pinned host, called by the host's model through the real host under
enforced gates in PLAN (issue 28.7: Qwen Code's `edit` changed a committed file there): the hook
denies it, the deny reason reaches the model, and the committed file is unchanged. The rows, and
the write tools without one (and why), are in tests/hosts/write_tools.py; that the table knows
every tool the hosts register is tests/hosts/test_host_tools.py."""

import subprocess

import pytest

from plugkit.host_tools import WRITE, names
from tests.hosts.hosts import ENFORCED, HOSTS, installed, project, run
from tests.hosts.more_hosts import MORE_HOSTS, with_model
from tests.hosts.script import Say, Script
from tests.hosts.write_tools import FILES, MODEL, PLATFORM, READS, WRITES
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
ALL_HOSTS = {**HOSTS, **MORE_HOSTS}


def test_every_row_is_a_write_tool_of_its_host():
    for host, tool in WRITES:
        assert tool in names(PLATFORM.get(host, host), WRITE), (host, tool)


@pytest.mark.parametrize("host_name, tool", sorted(WRITES))
def test_write_tool_is_denied_in_plan_and_the_committed_file_is_unchanged(tmp_path, home, host_name, tool):
    host = installed(ALL_HOSTS[host_name])
    if (host_name, tool) in MODEL:
        host = with_model(host, MODEL[(host_name, tool)])
    work, host_home = project(tmp_path, host, cli_argv(), home.env, {**ENFORCED, **FILES},
                              steps=(("prd", "add", "ship the feature"),))
    call, kept = WRITES[(host_name, tool)]
    read = [READS[host_name](str(work / kept))] if kept and host_name in READS else []
    script = Script([*read, call(str(work)), Say("Stopping here."), Say("Stopping, really."), Say("Done.")])
    result = run(host, script, work, host_home, env={"PWD": str(work)})
    why = result.explain()
    refused = script.reply_to(len(read))
    assert refused is not None and "PLAN" in refused.newest and "EMIT" in refused.newest, why
    if kept is None:
        assert not (work / "new.py").exists(), why
    else:
        assert (work / kept).read_text() == FILES[kept], why
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=work, capture_output=True,
                            text=True, check=True).stdout
    assert not [line for line in status.splitlines() if line.endswith((".py", ".ipynb"))], status
