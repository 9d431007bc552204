"""`plugkit work --network loopback-model` with real agent hosts as workers: each reaches the
scripted fake model on loopback through the runner's relay (the run completes, the model
answered every turn) and this runner (its hooks: the boot heartbeat), while another
loopback port of the machine, tried from the host's own shell tool, is not there. Claude
Code, Qwen Code and Gemini CLI name their endpoint in a *_BASE_URL variable; Codex reads
its own from its config file, which the relay does not read (README: Network)."""

import json
import socket

import pytest

from tests.hosts.hosts import HOSTS, installed
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Scripts
from tests.hosts.work_run import committing, make_repo, prompt_line
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


@pytest.fixture(params=("claude", "qwen", "gemini"))
def relayed_host(request):
    return installed(HOSTS[request.param])


def test_a_real_worker_on_loopback_only_reaches_its_model_and_nothing_else(tmp_path, home, relayed_host):
    host = relayed_host
    with ModelServer(Scripts([])) as server, socket.socket() as other:
        other.bind(("127.0.0.1", 0))
        other.listen(8)
        port = other.getsockname()[1]
        work = make_repo(tmp_path, host, cli_argv(), server.url, {"w1": ("test -f w1.txt", ())})
        probe = (f"python3 -c \"import socket; socket.create_connection(('127.0.0.1', {port}), 3)\" "
                 "&& echo OTHER-REACHED || echo OTHER-NOT-REACHED")
        server.script = scripts = Scripts([committing(host, work, "w1", before=(host.shell(probe),))])
        work.cli("work", "--worker", host.platform, "--afk", "--network", "loopback-model", "--stall-min", "2")
        run = work.until(lambda r: r["ended_at"] is not None)
        it = run["items"][0]
        assert (it["state"], run["network"]) == ("completed", "loopback-model"), json.dumps(run, indent=1)
        assert "boot" in it["phases"], it  # its hooks reached the runner through the relay
        answer = scripts[prompt_line("w1")].reply_to(0)
        assert answer is not None and "OTHER-NOT-REACHED" in answer.newest, answer
