"""plugkit inside the real Copilot CLI, OpenCode and Kilo (npm `@github/copilot`,
`opencode-ai`, `@kilocode/cli`), headless against the scripted fake model, after `plugkit
install --platform P` (Copilot: .github/hooks/plugkit.json; OpenCode/Kilo: the relay plugin).
One gated session per host (three critical items open) shows: exec: runs in the runner, its
output (42) is the tool result the next model request carries, the shell never runs the line,
and the session context reaches the model; and a hidden approve from the host's shell tool, in
each of three ways (tests/hosts/hidden_approve.py), is refused. The Stop gate turns back one
stop while .prd has open items and lets the next one through (OpenCode and Kilo here; Copilot's
write refusal and Stop gate are its session in test_write_tools.py). A host whose package is
missing fails, naming the fix.
"""

import json
import socket
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hosts.hidden_approve import ITEMS, STEPS, refusals, turns
from tests.hosts.hosts import (ENFORCED, Host, Run, cache_dir, gated_project, host_env, installed, project, run,
                               shell_spy)
from tests.hosts.model_server import ModelServer
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.hosts.sessions import once_each
from tests.support.runner_home import Home, cli_argv, free_port

pytestmark = pytest.mark.e2e
SPIED = ("exec:python", "exec:bash", "spy-check")
# The hosts whose headless run asks the model again after the Stop gate turned back a stop.
ASKS_AGAIN = ("copilot",)


@pytest.fixture(params=list(MORE_HOSTS))
def host(request) -> Host:
    return installed(MORE_HOSTS[request.param])


@dataclass
class Session:
    work: Path
    script: Script
    result: Run
    shell_ran: list[str]  # the spied programs the host's shell ran, in order
    listing: dict  # `plugkit approve --list --json` once the host was done


def _play(base: Path, name: str) -> Session:
    """One gated session of the host (three critical items open): exec: through its shell tool,
    a line that is not intercepted, then a hidden approve of each item (tests/hosts/hidden_approve.py)."""
    host = installed(MORE_HOSTS[name])
    runner = Home(path=base / "plugkit-home", port=free_port())
    try:
        work, host_home = project(base, host, cli_argv(), runner.env, dict(ENFORCED), steps=STEPS)
        marker = base / "shell-ran"
        shell_spy(host_home, marker, SPIED)
        script = Script([host.shell("exec:python\nprint(6*7)"), host.shell("spy-check"),
                         *turns(host, cli_argv(), work), Say("It ran, and approved."), Say("Done, really.")])
        env = {"PWD": str(work), "PLUGKIT_HOME": str(runner.path), "PLUGKIT_PORT": str(runner.port)}
        result = run(host, script, work, host_home, env=env)
        ran = [line.split()[0].rsplit("/", 1)[-1] for line in marker.read_text().splitlines()] if marker.exists() else []
        listing = json.loads(runner.cli("approve", "--list", "--json", "--cwd", str(work)).stdout)
        return Session(work, script, result, ran, listing)
    finally:
        runner.stop_all()  # the host's hooks started it; no test may leave it running


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """host -> its one session (tests/hosts/sessions.py)."""
    return once_each(tmp_path_factory, _play)


@pytest.mark.parametrize("name", list(MORE_HOSTS))
def test_exec_is_run_by_the_runner_and_session_context_reaches_the_model(sessions, name):
    played = sessions(name)
    script, why = played.script, played.result.explain()
    assert played.result.proc.returncode == 0, why
    first = script.main[0] if script.main else None
    assert first is not None and "plugkit: to run code" in first.everything, why
    reply = script.reply_to(0)
    assert reply is not None and "42" in reply.newest and "ran as task_" in reply.newest, why
    # spy-check (not intercepted) reached the shell and found the spies first on PATH; exec:python never did.
    assert played.shell_ran == ["spy-check"], why
    # The session ends on the final text: OpenCode's and Kilo's `run` end on idle; Copilot CLI asks
    # its model again after the Stop gate turned back the first stop (items are open), once.
    final = len(script.turns) - 2
    if name in ASKS_AGAIN:
        turned_back = script.reply_to(final)
        assert turned_back is not None and "not done yet" in turned_back.newest, why
        final += 1
    assert script.reply_to(final) is None, why


@pytest.mark.parametrize("name", list(MORE_HOSTS))
def test_rejects_a_hidden_approve_from_the_hosts_shell_tool(sessions, name):
    played = sessions(name)
    why = played.result.explain()
    assert played.result.proc.returncode == 0, why
    assert refusals(played.work) == [], why
    assert played.listing["approvals"] == [] and played.listing["waiting"] == list(ITEMS), played.listing


def wait_for(condition, what: str, limit_s: float = 600.0) -> None:
    """Until condition() holds; a host that never gets there fails naming what it waited for (the
    limit only ends a hung host: a Kilo start took 80-300 s to its first model request under load)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {limit_s:g}s for {what}")
        time.sleep(0.2)


# OpenCode and Kilo hold the Stop gate in the plugin's session.idle event, and `run` exits on
# that same idle, before a continuation could be sent: so the host is driven as its own
# server (`serve`), with `run --attach` as the client, and the plugin's answers are counted
# by a wrapper around the plugkit command it calls.
@pytest.mark.parametrize("name", ("opencode", "kilo"))
def test_plugin_refuses_a_write_and_stop_gate_turns_back_one_idle_without_loop(tmp_path, home, name):
    host = installed(MORE_HOSTS[name])
    work, host_home, item = gated_project(tmp_path, host, cli_argv(), home.env)
    answered = tmp_path / "answered"
    wrapper = tmp_path / "count-hooks"
    wrapper.write_text(f'#!/bin/sh\n"$@"\nrc=$?\necho "$*" >> "{answered}"\nexit $rc\n')  # the whole command line
    wrapper.chmod(0o755)
    plugin = work / (".opencode" if name == "opencode" else ".kilo") / "plugins" / "plugkit.js"
    relay = plugin.read_text().replace("const PLUGKIT = [", f"const PLUGKIT = [{json.dumps(str(wrapper))}, ", 1)
    plugin.write_text(relay)

    def stops() -> int:  # the Stop hooks the plugin called (the word after `hook`)
        lines = answered.read_text().splitlines() if answered.exists() else []
        return sum(" hook Stop " in f"{line} " for line in lines)

    script = Script([host.write(str(work / "a.py"), "x = 1\n"), Say("Finished."), Say("Finished, really."),
                     Say("Never asked for.")])
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ModelServer(script) as server:
        for rel, text in host.files(server.url, str(work)).items():
            (host_home / rel).parent.mkdir(parents=True, exist_ok=True)
            (host_home / rel).write_text(text)
        env = host_env(host_home, {**host.env(server.url), "PWD": str(work)})
        log = tmp_path / "serve.log"
        with open(log, "w") as out:
            serve = subprocess.Popen([str(host.binary), "serve", "--port", str(port), "--hostname", "127.0.0.1"],
                                     cwd=work, env=env, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: "listening" in log.read_text(), f"{name} serve to listen")
            done = subprocess.run([str(host.binary), "run", "--attach", f"http://127.0.0.1:{port}", script.prompt],
                                  cwd=work, env=env, capture_output=True, text=True, timeout=600,
                                  stdin=subprocess.DEVNULL)
            why = f"run: {done.returncode} {done.stderr[-1500:]}\nserve: {log.read_text()[-1500:]}"
            assert done.returncode == 0, why
            wait_for(lambda: stops() >= 2, f"two Stop answers from the plugin; {why}")
        finally:
            serve.terminate()
            serve.wait(30)
    refused = script.reply_to(0)
    assert refused is not None and "PLAN" in refused.newest and "EMIT" in refused.newest, why
    assert not (work / "a.py").exists(), why
    turned_back = script.reply_to(1)
    assert turned_back is not None and "not done yet" in turned_back.newest, why
    assert f"open work items: {item}" in turned_back.newest, why
    # The second idle, same reason, was let through: no further request, no loop.
    assert script.reply_to(2) is None and stops() == 2, why


def test_runner_unreachable_the_host_keeps_working_with_at_most_one_line(tmp_path, home, host):
    work, host_home = project(tmp_path, host, cli_argv(), home.env)
    blocker = tmp_path / "not-a-dir"
    blocker.write_text("a file where the runner's home would have to be created")
    script = Script([host.shell("echo ok > side.txt"), Say("All done.")])
    result = run(host, script, work, host_home, env={"PWD": str(work), "PLUGKIT_HOME": str(blocker / "home")})
    why = result.explain()
    assert result.proc.returncode == 0, why
    assert (work / "side.txt").read_text() == "ok\n", why
    assert script.reply_to(0) is not None, why
    cache = str(cache_dir())  # the hosts' own prompts may name their install directory
    lines = {line for seen in script.main for line in seen.everything.replace(cache, "").splitlines()
             if "plugkit" in line}
    assert len(lines) <= 1, lines
