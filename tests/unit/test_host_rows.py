"""The one host table (plugkit/hosts.py): a row that lacks a fact fails where it is written or
here, and a new host added as one row plus one adapter module reaches every table derived from
it (the hook, `plugkit install`, the gated tools, the workers, their scopes and sandbox state,
the hook files a worker may not change, the runner's host recognition)."""

import importlib
import json
import os
import subprocess
import sys

import pytest

from plugkit.host_row import PROMPT, AgentHost, Hooks, Tools, Worker
from plugkit.hosts import BY_PLATFORM, HOSTS
from plugkit.work import workers
from plugkit.work.policy.paths import HOOK_CONFIGS
from tests.support.runner_home import ROOT

# Hosts tests/hosts cannot run (no npm package): no markers read, no tool source to re-read.
NOT_RUN = {"cursor"}
FAKE_ROW = """AgentHost(
    platform="fakehost", label="Fake Host", adapter="fakehost_adapter", programs=("fakehost",),
    packages=("@fake/fakehost",), entries=(".fakehost",), markers=("FAKEHOST_SESSION",),
    tools=Tools(source="@fake/fakehost 1.0.0", write="scribble", shell={"sh_run": "line"}, other="peek"),
    hooks=Hooks(fmt="json", path=".fakehost/settings.json", reads=(".fakehost/settings.json",),
                events=(("SessionStart", None, 30), ("PreToolUse", GATED, 60), ("Stop", None, 30))),
    worker=Worker(program="fakehost", argv=("--headless", PROMPT, "--no-prompts"), done="exits 0 when done",
                  model_env=("FAKEHOST_",), home_state=(".fakehost/",)))"""
# Its adapter: Claude Code's protocol under another name, as OpenCode's module reuses it.
FAKE_ADAPTER = "from client.hooks.claude_code import EVENTS, NOOP_OUTPUT  # noqa: F401\n"


def facts(cls) -> list[str]:
    return [name for name in cls.__slots__ if name not in cls._optional]


@pytest.mark.parametrize("cls, fact", [(c, f) for c in (AgentHost, Tools, Hooks, Worker) for f in facts(c)])
def test_a_row_without_a_fact_is_refused_where_it_is_written(cls, fact):
    claude = BY_PLATFORM["claude-code"]
    row = {AgentHost: claude, Tools: claude.tools, Hooks: claude.hooks, Worker: claude.worker}[cls]
    given = {name: getattr(row, name) for name in cls.__slots__ if name != fact}
    with pytest.raises(TypeError, match=f"lacks {fact}"):
        cls(**given)
    with pytest.raises(AttributeError):
        setattr(row, fact, None)  # and a row, once written, is not changed by a reader


@pytest.mark.parametrize("host", HOSTS, ids=lambda h: h.platform)
def test_every_row_holds_every_fact(host):
    assert host.label and host.programs and host.packages and host.entries
    assert host.markers or host.platform in NOT_RUN, "name the variables its tools' shells carry"
    adapter = importlib.import_module(host.adapter)
    assert adapter.EVENTS and isinstance(adapter.NOOP_OUTPUT, bytes)
    events = {event for event, _, _ in host.hooks.events}
    assert events <= set(adapter.EVENTS), f"{host.adapter} handles none of {events - set(adapter.EVENTS)}"
    assert "pre_tool" in {adapter.EVENTS[e][0] for e in events}, "no hook event sees its tool calls"
    assert host.tools.write.split() and host.tools.shell
    assert host.tools.source or host.platform in NOT_RUN, "name the package and version its tools were read from"
    # What install writes is configuration a worker must never change.
    for path in {host.hooks.path, host.hooks.project_path}:
        assert any(path == c or path.startswith(c + "/") for c in host.hooks.reads), path
        assert any(path == c or path.startswith(c + "/") for c in HOOK_CONFIGS), path
    if host.worker is not None:
        assert host.worker.program in host.programs and PROMPT in host.worker.argv
        assert all(w == PROMPT or w in workers.EXPANSIONS or "{" not in w for w in host.worker.argv)
        assert host.worker.done and "\n" not in host.worker.done
        assert host.worker.model_env and host.worker.home_state


def test_the_hooks_hot_path_reads_the_table_without_dataclasses_typing_or_pydantic():
    # The hook imports the table on every tool call of the agent: `import dataclasses` alone is ~5 ms.
    probe = ("import sys; import client.hooks.core, client.hooks.claude_code, client.hooks.opencode; print(' '.join("
             "m for m in ('dataclasses', 'typing', 'pydantic', 'inspect') if m in sys.modules))")
    found = subprocess.run([sys.executable, "-c", probe], cwd=ROOT, capture_output=True, text=True, check=True)
    assert found.stdout.split() == []


@pytest.fixture(scope="module")
def one_more_host(tmp_path_factory):
    """Runs the plugkit CLI (or `--tables`) with the fake row added and its adapter importable."""
    lib = tmp_path_factory.mktemp("adapter")
    (lib / "fakehost_adapter.py").write_text(FAKE_ADAPTER)
    home = tmp_path_factory.mktemp("home")  # no runner listens here: every hook fails open or closed
    env = {**os.environ, "ONE_MORE_HOST": FAKE_ROW, "PYTHONPATH": str(lib),
           "PLUGKIT_HOME": str(home), "PLUGKIT_HOOK_STDIN_TIMEOUT": "2", "PLUGKIT_HOOKS_FAIL": ""}

    def run(*argv: str, cwd=None, stdin: bytes = b"") -> subprocess.CompletedProcess:
        return subprocess.run([sys.executable, str(ROOT / "tests" / "fixtures" / "one_more_host.py"), *argv],
                              input=stdin, capture_output=True, env=env, cwd=cwd, timeout=60)
    return run


def test_a_new_host_is_one_row_and_every_derived_table_knows_it(one_more_host):
    done = one_more_host("--tables")
    assert done.returncode == 0, done.stderr.decode()
    t = json.loads(done.stdout)
    assert t["adapter"] == "fakehost_adapter" and "fakehost" in t["hook_usage"]
    assert t["project_path"] == ".fakehost/settings.json" and ".fakehost/settings.json" in t["install_usage"]
    assert t["detect"] == [[".fakehost"], ["fakehost"]]
    assert "scribble" in t["write_tools"] and t["shell_tools"]["sh_run"] == "line"
    assert "fakehost" in t["worker_names"] and "fakehost" in t["work_verb"]
    assert t["worker_argv"] == ["fakehost", "--headless", "PROMPT", "--no-prompts"]
    assert t["worker_hooks_file"] == ".fakehost/settings.json" and t["model"] == ["FAKEHOST_"]
    assert ".fakehost/settings.json" in t["hook_configs"] and t["caches"] == [".fakehost/"]
    assert t["host_of"] == "fakehost" and t["marked_by"] == "fakehost" and t["asks"] is False


def test_a_new_host_installs_its_hooks_and_its_hook_judges_its_tools(one_more_host, tmp_path):
    done = one_more_host("install", "--platform", "fakehost", cwd=tmp_path)
    assert done.returncode == 0, done.stderr.decode()
    settings = json.loads((tmp_path / ".fakehost" / "settings.json").read_text())
    (pre,) = settings["hooks"]["PreToolUse"]
    assert pre["matcher"] == "scribble|sh_run"  # its own write and shell tools, from its row
    assert pre["hooks"][0]["command"].endswith("hook PreToolUse --platform fakehost")
    # No runner, in a workspace that enforces its gates: its write tool is denied (the gates'
    # write list holds it), its other tools pass.
    (tmp_path / ".plugkit").mkdir()
    (tmp_path / ".plugkit" / "config.toml").write_text('gates = "enforce"\n')

    def call(tool: str) -> subprocess.CompletedProcess:
        event = {"session_id": "s1", "cwd": str(tmp_path), "hook_event_name": "PreToolUse", "tool_name": tool,
                 "tool_input": {"file_path": "a.py"}}
        return one_more_host("hook", "PreToolUse", "--platform", "fakehost", cwd=tmp_path,
                             stdin=json.dumps(event).encode())

    wrote, peeked = call("scribble"), call("peek")
    assert wrote.returncode == 0 and b'"permissionDecision": "deny"' in wrote.stdout, wrote.stderr.decode()
    assert peeked.returncode == 0 and b"deny" not in peeked.stdout, peeked.stderr.decode()
    unknown = one_more_host("hook", "PreToolUse", "--platform", "nohost", cwd=tmp_path)
    assert unknown.returncode == 1 and b"unknown platform 'nohost'" in unknown.stderr
