"""plugkit inside the real Copilot CLI, OpenCode and Kilo (npm `@github/copilot`,
`opencode-ai`, `@kilocode/cli`), headless against the scripted fake model, after `plugkit
install --platform P` (Copilot: .github/hooks/plugkit.json; OpenCode/Kilo: the relay plugin).
One gated session per host (three critical items open) shows: exec: runs in the runner, its
output (42) is the tool result the next model request carries, the shell never runs the line,
and the session context reaches the model; and a hidden approve from the host's shell tool, in
each of three ways (tests/hosts/hidden_approve.py), is refused. OpenCode and Kilo play it as their
own server (tests/hosts/serve_run.py: their Stop gate lives in the plugin's idle event, after which
a plain `run` exits), where the same session also shows the plugin refusing a write in PLAN and the
Stop gate turning back one idle while .prd has open items, then letting the next through, no loop.
(Copilot's write refusal and Stop gate are its session in test_write_tools.py.) A host whose
package is missing fails, naming the fix.
"""

import json
from dataclasses import dataclass
from pathlib import Path

import pytest

from tests.hosts.hidden_approve import ITEMS, STEPS, refusals, turns
from tests.hosts.hosts import ENFORCED, Host, Run, cache_dir, installed, project, run, shell_spy
from tests.hosts.more_hosts import MORE_HOSTS
from tests.hosts.script import Say, Script
from tests.hosts.serve_run import SERVED, HookCounter, served_run
from tests.hosts.sessions import once_each
from tests.support.runner_home import Home, cli_argv, free_port

pytestmark = pytest.mark.e2e
SPIED = ("exec:python", "exec:bash", "spy-check")


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
    write: int | None  # served hosts: the turn writing a.py (refused in PLAN)
    stops: int | None  # served hosts: the Stop hooks the plugin answered


def _play(base: Path, name: str) -> Session:
    """One gated session of the host (three critical items open): exec: through its shell tool,
    a line that is not intercepted, then a hidden approve of each item (tests/hosts/hidden_approve.py)."""
    host = installed(MORE_HOSTS[name])
    runner = Home(path=base / "plugkit-home", port=free_port())
    try:
        work, host_home = project(base, host, cli_argv(), runner.env, dict(ENFORCED), steps=STEPS)
        marker = base / "shell-ran"
        shell_spy(host_home, marker, SPIED)
        steps = [host.shell("exec:python\nprint(6*7)"), host.shell("spy-check"), *turns(host, cli_argv(), work)]
        write = len(steps) if name in SERVED else None
        if write is not None:
            steps.append(host.write(str(work / "a.py"), "x = 1\n"))
        script = Script([*steps, Say("It ran, and approved."), Say("Done, really."), Say("Never asked for.")])
        env = {"PWD": str(work), "PLUGKIT_HOME": str(runner.path), "PLUGKIT_PORT": str(runner.port)}
        if name in SERVED:
            counter = HookCounter(host, work, base)
            result = served_run(host, script, work, host_home, base / "serve.log", counter, env=env)
        else:
            counter, result = None, run(host, script, work, host_home, env=env)
        ran = [line.split()[0].rsplit("/", 1)[-1] for line in marker.read_text().splitlines()] if marker.exists() else []
        listing = json.loads(runner.cli("approve", "--list", "--json", "--cwd", str(work)).stdout)
        return Session(work, script, result, ran, listing, write, counter.stops() if counter else None)
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
    # The session ends on the final text: the Stop gate turned back the first stop (items are open)
    # once, and Copilot CLI (headless) and the served OpenCode and Kilo asked their model again.
    final = len(script.turns) - 3
    turned_back = script.reply_to(final)
    assert turned_back is not None and "not done yet" in turned_back.newest, why
    assert script.reply_to(final + 1) is None, why


@pytest.mark.parametrize("name", list(MORE_HOSTS))
def test_rejects_a_hidden_approve_from_the_hosts_shell_tool(sessions, name):
    played = sessions(name)
    why = played.result.explain()
    assert played.result.proc.returncode == 0, why
    assert refusals(played.work) == [], why
    assert played.listing["approvals"] == [] and played.listing["waiting"] == list(ITEMS), played.listing


@pytest.mark.parametrize("name", SERVED)
def test_plugin_refuses_a_write_and_stop_gate_turns_back_one_idle_without_loop(sessions, name):
    played = sessions(name)
    script, why = played.script, played.result.explain()
    assert played.result.proc.returncode == 0, why
    refused = script.reply_to(played.write)
    assert refused is not None and "PLAN" in refused.newest and "EMIT" in refused.newest, why
    assert not (played.work / "a.py").exists(), why
    final = len(script.turns) - 3
    turned_back = script.reply_to(final)
    assert turned_back is not None and "not done yet" in turned_back.newest, why
    assert f"open work items: {', '.join(ITEMS)}" in turned_back.newest, why
    # The second idle, same reason, was let through: no further request, no loop.
    assert script.reply_to(final + 1) is None and played.stops == 2, why


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
