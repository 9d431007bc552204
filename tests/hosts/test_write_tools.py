"""Every write tool of every pinned host, called by the host's model through the real host under
enforced gates in PLAN (issue 28.7: Qwen Code's `edit` changed a committed file there): the hook
denies it, the deny reason reaches the model, and the committed file is unchanged. The rows, and
the write tools without one (and why), are in tests/hosts/write_tools.py; that the table knows
every tool the hosts register is tests/hosts/test_host_tools.py, and every tool they offer their
model is here: each session's requests are read for it (plugkit adds no tool to a host).

One real session per host (per model, where the model picks the tools) calls each of its write
tools in turn, and each tool's refusal is its own test: a host start is most of a run's time
(Kilo 20-75 s on a loaded machine), and a refused call leaves the file as it was for the next one.
The same sessions then stop: where a headless run asks its model again after a turned-back stop,
the Stop gate turns back the first stop with the open item and lets the second through (no loop),
and the hook stdins Claude Code, Qwen Code, Gemini CLI and Codex sent are recorded and read for
every field plugkit reads. (OpenCode's and Kilo's `run` ends on idle: test_more_hosts drives their
Stop gate through `serve`.)

Each host's default session also writes one file with the runner wedged (SIGSTOP: up, holding its
port, answering nothing) from the model's call until the host sends its result: under enforce the
hook refuses the write, naming `plugkit runner restart`, and the file is never written. (The
fail-open counterpart, a workspace that never opted in, is test_real_hosts' runner-unreachable test.)"""

import json
import os
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path

import pytest

from plugkit.host_tools import WRITE, names
from plugkit.hosts import BY_PLATFORM
from tests.hosts.host_sources import FIX, known, offered
from tests.hosts.hosts import ENFORCED, HOSTS, INSTALLED, Run, installed, project, record_hooks, recorded_hooks, run
from tests.hosts.more_hosts import MORE_HOSTS, with_model
from tests.hosts.script import Say, Script
from tests.hosts.sessions import once_each
from tests.hosts.write_tools import FILES, MODEL, PLATFORM, READS, WRITES
from tests.support.runner_home import Home, cli_argv, free_port

pytestmark = pytest.mark.e2e
ALL_HOSTS = {**HOSTS, **MORE_HOSTS}
# (host, the model it is given, None for its default): one session each
SESSIONS = sorted({(host, MODEL.get((host, tool))) for host, tool in WRITES}, key=lambda s: (s[0], s[1] or ""))
# The hosts whose headless run asks the model again after a turned-back stop.
STOPPING = ("claude", "codex", "copilot", "gemini", "qwen")
STOPS = ("Stop", "AfterAgent")
# stop_hook_active on the first and second stop. Qwen Code 0.15 sends true on every Stop
# (hard-coded in its client): plugkit still blocks once, since its loop guard needs the
# same reason to have been given already, not the flag alone.
STOP_FLAGS = {"qwen": [True, True]}


def test_every_row_is_a_write_tool_of_its_host():
    for host, tool in WRITES:
        assert tool in names(PLATFORM.get(host, host), WRITE), (host, tool)


def test_every_host_plays_a_session():
    assert {host for host, _model in SESSIONS} == set(ALL_HOSTS)


@dataclass
class Session:
    work: Path
    script: Script
    result: Run
    turn: dict  # tool -> the script's turn that called it; "new file": the host's own write of new.py
    stop: int  # the turn of the first stop
    item: str  # the open work item
    hooks: Path | None  # where the hook stdins were recorded (hosts with hooks in a config file)
    wedged: list[int] | None  # the runner pids held stopped through the turn "wedged" (default sessions)


class Wedging(Script):
    """The script, with the session's runner held stopped from the model's call of turn `at` until
    the host's next request (the call's result) arrives; never again after that."""

    def __init__(self, turns: list, at: int | None, runner: Home) -> None:
        super().__init__(turns)
        self.at, self.runner = at, runner
        self.stopped: list[int] | None = None  # the pids stopped, once they were
        self.held = False

    def play(self, seen):
        answer = super().play(seen)
        if seen.main and self.at is not None:
            with self.lock:
                if seen.turn == self.at and self.stopped is None:
                    self.stopped = self.runner.runner_pids()
                    self._signal(signal.SIGSTOP)
                    self.held = True
                elif seen.turn > self.at:
                    self.release()
        return answer

    def release(self) -> None:
        if self.held:
            self._signal(signal.SIGCONT)
            self.held = False

    def _signal(self, sig: int) -> None:
        for pid in self.stopped or ():
            try:
                os.kill(pid, sig)
            except ProcessLookupError:
                pass


def _play(base: Path, host_name: str, model: str | None) -> Session:
    """One gated session of the host calling each of its write tools (those its model gets) in turn."""
    host = installed(ALL_HOSTS[host_name])
    if model is not None:
        host = with_model(host, model)
    tools = sorted(t for (h, t) in WRITES if h == host_name and MODEL.get((h, t)) == model)
    runner = Home(path=base / "plugkit-home", port=free_port())
    try:
        work, host_home = project(base, host, cli_argv(), runner.env, {**ENFORCED, **FILES},
                                  steps=(("prd", "add", "ship the feature"),))
        item = json.loads((work / ".prd").read_text())[0]["id"]
        hooks = base / "hooks" if model is None and host.platform in INSTALLED else None
        if hooks is not None:
            record_hooks(work, host, cli_argv()[0], hooks)
            subprocess.run(["git", "commit", "-qam", "record hooks"], cwd=work, check=True, capture_output=True)
        kept = list(dict.fromkeys(WRITES[(host_name, t)][1] for t in tools if WRITES[(host_name, t)][1]))
        # The hosts' edit tools refuse a file the model has not read: each file is read first.
        turns = [READS[host_name](str(work / f)) for f in kept] if host_name in READS else []
        turn = {}
        for tool in tools:
            turn[tool] = len(turns)
            turns.append(WRITES[(host_name, tool)][0](str(work)))
        if host_name in HOSTS:  # and a file that does not exist yet, written with the host's own write call
            turn["new file"] = len(turns)
            turns.append(host.write(str(work / "new.py"), "x = 1\n"))
        if model is None:  # and one written while the runner is wedged
            turn["wedged"] = len(turns)
            turns.append(host.write(str(work / "wedged.py"), "x = 1\n"))
        stop = len(turns)
        script = Wedging([*turns, Say("Stopping here."), Say("Stopping, really."), Say("Done.")], turn.get("wedged"),
                         runner)
        env = {"PWD": str(work), "PLUGKIT_HOME": str(runner.path), "PLUGKIT_PORT": str(runner.port)}
        try:
            result = run(host, script, work, host_home, env=env)
        finally:
            script.release()
        return Session(work, script, result, turn, stop, item, hooks, script.stopped)
    finally:
        runner.stop_all()  # the host's hooks started it; no test may leave it running


@pytest.fixture(scope="module")
def sessions(tmp_path_factory):
    """(host, model) -> its one session (tests/hosts/sessions.py)."""
    return once_each(tmp_path_factory, _play)


@pytest.mark.parametrize("host_name, tool", sorted(WRITES))
def test_write_tool_is_denied_in_plan_and_the_committed_file_is_unchanged(sessions, host_name, tool):
    played = sessions(host_name, MODEL.get((host_name, tool)))
    work, why = played.work, played.result.explain()
    refused = played.script.reply_to(played.turn[tool])
    assert refused is not None and "PLAN" in refused.newest and "EMIT" in refused.newest, f"{tool}: {why}"
    kept = WRITES[(host_name, tool)][1]
    if kept is None:
        assert not (work / "new.py").exists(), why
    else:
        assert (work / kept).read_text() == FILES[kept], why
    status = subprocess.run(["git", "status", "--porcelain", "--untracked-files=all"], cwd=work, capture_output=True,
                            text=True, check=True).stdout
    assert not [line for line in status.splitlines() if line.endswith((".py", ".ipynb"))], status


@pytest.mark.parametrize("host_name, model", SESSIONS)
def test_every_tool_the_host_offers_its_model_is_in_the_table(sessions, host_name, model):
    played = sessions(host_name, model)
    seen = set().union(*(offered(s.body) for s in played.script.main))
    assert seen, played.result.explain()
    platform = PLATFORM.get(host_name, host_name)
    unknown = sorted(seen - known(platform))
    source = BY_PLATFORM[platform].tools.source
    assert not unknown, f"{source} offers its model tools the table does not know: {unknown}; {FIX}"


@pytest.mark.parametrize("host_name", sorted(HOSTS))
def test_a_new_file_written_in_plan_is_refused(sessions, host_name):
    played = sessions(host_name, None)
    refused = played.script.reply_to(played.turn["new file"])
    why = played.result.explain()
    assert refused is not None and "PLAN" in refused.newest and "EMIT" in refused.newest, why
    assert not (played.work / "new.py").exists(), why


@pytest.mark.parametrize("host_name", STOPPING)
def test_the_stop_gate_turns_back_one_stop_while_an_item_is_open_then_lets_it_through(sessions, host_name):
    played = sessions(host_name, None)
    why = played.result.explain()
    assert played.result.proc.returncode == 0, why
    turned_back = played.script.reply_to(played.stop)
    assert turned_back is not None and "not done yet" in turned_back.newest, why
    assert f"open work items: {played.item}" in turned_back.newest, why
    assert played.script.reply_to(played.stop + 1) is None, why  # the second stop let through: no loop


@pytest.mark.parametrize("host_name", sorted(HOSTS))
def test_every_hook_field_plugkit_reads_arrives_from_the_real_host(sessions, host_name):
    played = sessions(host_name, None)
    recorded = recorded_hooks(played.hooks)
    stops = [h.get("stop_hook_active") for h in recorded if h.get("hook_event_name") in STOPS]
    assert stops == STOP_FLAGS.get(host_name, [False, True]), played.result.explain()
    for stdin in recorded:  # spelled as plugkit reads it
        assert isinstance(stdin.get("session_id"), str) and stdin.get("cwd") == str(played.work), stdin
        if stdin.get("hook_event_name") in ("PreToolUse", "BeforeTool"):
            assert isinstance(stdin.get("tool_name"), str) and isinstance(stdin.get("tool_input"), dict), stdin


@pytest.mark.parametrize("host_name", sorted(ALL_HOSTS))
def test_a_wedged_runner_under_enforce_refuses_the_hosts_write(sessions, host_name):
    played = sessions(host_name, None)
    why = played.result.explain()
    assert played.wedged, f"the runner should be up by the wedged turn (`plugkit prd add` started it); {why}"
    assert played.result.proc.returncode == 0, why
    refused = played.script.reply_to(played.turn["wedged"])
    assert refused is not None and "plugkit runner restart" in refused.newest, why
    assert not (played.work / "wedged.py").exists(), why
