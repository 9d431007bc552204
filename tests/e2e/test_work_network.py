"""`plugkit work --network loopback-model` (runner/system/netrelay.py): a command worker in its
own network namespace reaches the scripted fake model on loopback and this runner, and
nothing else: another loopback port of the machine is not there. Real runner, real bwrap,
real git, the fake model from tests/hosts."""

import socket
import sys
from pathlib import Path

import pytest

from tests.support.work_cli import Work
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Script
from tests.support.agent import make_repo
from tests.support.work_network import PROBE, _grant, _net

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


@pytest.fixture
def other_port():
    """A loopback service the worker must not reach."""
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        s.listen(8)
        yield s.getsockname()[1]



@pytest.mark.parametrize("network", ["loopback-model", "host"])
def test_a_loopback_only_worker_reaches_its_model_and_the_runner_and_nothing_else(home, repo, other_port, network):
    with ModelServer(Script([])) as model:
        w = Work(home, repo, {})
        _grant(w, repo, model.url)
        w.add("w1", "--verify", "test -f done.txt")
        w.cli("work", "--network", network, "--run", f"{sys.executable} {PROBE} {other_port}")
        run = w.until(lambda r: r["ended_at"] is not None)
        seen = _net(w)
        assert seen["model"] == "reached" and seen["runner"] == "reached", seen
        assert any("sandbox-probe" in u for u in model.unknown), model.unknown
        # What the option adds: on the host network the other port answers.
        expected = "denied" if network == "loopback-model" else "reached"
        assert seen["other_loopback_port"] == seen["exec_other_loopback_port"] == expected, seen
        assert (w.items(run)["w1"]["state"], run["network"]) == ("completed", network), run
    if network == "loopback-model":
        assert "network: loopback + model endpoints" in w.cli("work", "status").stdout


def test_an_endpoint_the_namespace_cannot_relay_refuses_the_worker(home, repo):
    w = Work(home, repo, {})
    _grant(w, repo, "http://10.1.2.3:8080")
    w.add("w1", "--verify", "test -f done.txt")
    w.cli("work", "--network", "loopback-model", "--run", f"{sys.executable} {PROBE} 1")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert it["state"] != "completed" and "10.1.2.3" in (it.get("message") or ""), it
