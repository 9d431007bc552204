"""runner/rpc/hook.py with hand-written fakes for the gates and the task manager: what the
runner answers for each canonical event, the UserPromptSubmit change detection, the Stop
loop guard, and the "no gates registered: allow" fallback."""

from types import SimpleNamespace

import dataclasses
import pytest

from plugkit import errors
from plugkit.lifecycle.errors import Conflict
from runner.rpc import hook
from plugkit.config import RunnerConfig
from plugkit.lazy import Lazy
from runner.rpc.context import Context, Runtime
from runner.rpc.hook_memory import HookMemory


class FakeTasks:
    """TaskManager's public surface the hooks use: open_session, list_tasks, end_session."""

    def __init__(self) -> None:
        self.live: list = []
        self.opened: list = []
        self.ended: list = []

    def open_session(self, session_id: str, cwd: str) -> None:
        self.opened.append((session_id, cwd))

    def list_tasks(self, session_id: str, cwd: str) -> list:
        return self.live

    async def end_session(self, session_id: str, cwd: str) -> list[int]:
        self.ended.append((session_id, cwd))
        return [t.id for t in self.live]


class FakeGates:
    """GateManager's public surface: workspace, check, stop, context."""

    def __init__(self) -> None:
        self.decision = ("allow", "")
        self.stop_reason: str | None = "open work items: 2"
        self.lines = ["plugkit gates (enforce): phase PLAN"]
        self.broken = False
        self.opted_in = True

    def workspace(self, session_id: str, cwd: str) -> SimpleNamespace:
        if self.broken:
            raise Conflict("state.json is unreadable")
        return SimpleNamespace(root=cwd, opted_in=self.opted_in)

    async def check(self, ws, event, tool_name, tool_input, platform=""):
        assert event == "PreToolUse"
        return SimpleNamespace(decision=self.decision[0], reason=self.decision[1]), "enforce"

    async def stop(self, ws, stop_hook_active):
        block = self.stop_reason is not None
        return SimpleNamespace(block=block, reason=self.stop_reason or "", missing=[]), "enforce"

    async def context(self, ws) -> list[str]:
        return list(self.lines)

    async def seal_ledger(self, why: str) -> None:
        self.sealed = why


def task(tid: int, state: str = "running") -> SimpleNamespace:
    """What the hooks read of a core Task."""
    return SimpleNamespace(id=tid, session_id="s", lang="python", state=state, pid=100 + tid)


@pytest.fixture
def ctx(tmp_path, monkeypatch):
    monkeypatch.setattr(hook, "index_for_context", lambda cwd, home, lines, size: "")
    runtime = Runtime(home=str(tmp_path), port=1, token="t", runner_id="r")
    return Context(runtime=runtime, config=RunnerConfig(home=str(tmp_path), port=1), tasks=FakeTasks(),
                   gates=Lazy(FakeGates))


async def call(method, ctx, **params) -> dict:
    reply = await method(ctx, **params)
    assert not hasattr(reply, "_error"), reply._error
    return reply._value.result


def ids(tmp_path) -> dict:
    return {"session_id": "s1", "cwd": str(tmp_path)}


async def test_without_gates_everything_is_allowed_and_nothing_blocks(ctx, tmp_path):
    ctx = dataclasses.replace(ctx, gates=None)
    assert await call(hook.pre_tool, ctx, **ids(tmp_path), tool_name="Write",
                      tool_input={"file_path": "/w/a"}) == {"decision": "allow", "reason": ""}
    assert await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=False) == {"block": False, "reason": ""}
    start = await call(hook.session_start, ctx, **ids(tmp_path), platform="claude-code", source="startup")
    assert start["context"] == hook.USAGE_LINE + "\n" + hook.SEARCH_LINE


async def test_pre_tool_answers_with_the_gates_decision(ctx, tmp_path):
    ctx.gates.get().decision = ("deny", "no writes in PLAN")
    assert await call(hook.pre_tool, ctx, **ids(tmp_path), tool_name="Write", tool_input={}) == {
        "decision": "deny", "reason": "no writes in PLAN"}


async def test_a_gate_that_cannot_answer_allows_with_a_warning(ctx, tmp_path):
    ctx.gates.get().broken = True
    answer = await call(hook.pre_tool, ctx, **ids(tmp_path), tool_name="Write", tool_input={})
    assert answer["decision"] == "allow" and "state.json is unreadable" in answer["reason"]
    stop = await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=False)
    assert stop["block"] is False and "could not check" in stop["reason"]


async def test_stop_never_blocks_twice_in_a_row_for_one_reason_while_active(ctx, tmp_path):
    gates = ctx.gates.get()
    first = await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=False)
    assert first == {"block": True, "reason": "open work items: 2"}
    looped = await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=True)
    assert looped["block"] is False and looped["reason"].endswith("open work items: 2")
    assert (await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=False))["block"] is True
    gates.stop_reason = "open work items: 1"  # something changed: a new reason may block again
    assert (await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=True))["block"] is True
    gates.stop_reason = None
    assert await call(hook.stop, ctx, **ids(tmp_path), stop_hook_active=True) == {"block": False, "reason": ""}


async def test_prompt_injects_the_status_only_when_it_changed(ctx, tmp_path):
    tasks = ctx.tasks
    start = await call(hook.session_start, ctx, **ids(tmp_path), platform="gemini", source="resume")
    assert "phase PLAN" in start["context"] and tasks.opened
    assert await call(hook.prompt, ctx, **ids(tmp_path)) == {"context": "", "changed": False}
    tasks.live = [task(3)]
    changed = await call(hook.prompt, ctx, **ids(tmp_path))
    assert changed["changed"] and "task_3 running (python, pid 103)" in changed["context"]
    assert await call(hook.prompt, ctx, **ids(tmp_path)) == {"context": "", "changed": False}
    tasks.live = []
    ctx.gates.get().lines = []
    ended = await call(hook.prompt, ctx, **ids(tmp_path))
    assert ended == {"context": "plugkit: no task of this session is running now.", "changed": True}


async def test_a_session_never_started_gets_the_start_context_on_its_first_prompt(ctx, tmp_path):
    # Qwen Code fires no SessionStart headless: its first prompt is where the session begins.
    first = await call(hook.prompt, ctx, **ids(tmp_path))
    assert first["changed"] and first["context"].startswith("plugkit: to run code") and "phase PLAN" in first["context"]
    assert ctx.tasks.opened
    assert await call(hook.prompt, ctx, **ids(tmp_path)) == {"context": "", "changed": False}


async def test_session_start_context_is_bounded(ctx, tmp_path, monkeypatch):
    ctx.tasks.live = [task(i) for i in range(1, 30)]
    ctx.gates.get().lines = [f"gate line {i}" for i in range(15)]
    monkeypatch.setattr(hook, "index_for_context", lambda cwd, home, lines, size: "\n".join(
        ["Memories:"] + [f"- m{i}" for i in range(lines - 1)]))
    lines = (await call(hook.session_start, ctx, **ids(tmp_path)))["context"].splitlines()
    assert len(lines) == hook.MAX_CONTEXT_LINES
    assert "... and 21 more (exec:tasks lists them)" in "\n".join(lines)


async def test_session_start_includes_the_memory_index(ctx, tmp_path, monkeypatch):
    seen = []
    monkeypatch.setattr(hook, "index_for_context",
                        lambda cwd, home, lines, size: seen.append((cwd, home, lines, size)) or "Memories:\n- x")
    context = (await call(hook.session_start, ctx, **ids(tmp_path)))["context"]
    assert context.endswith("Memories:\n- x") and seen == [(str(tmp_path), str(tmp_path), 15, 2048)]


async def test_session_end_ends_the_tasks_and_forgets_the_session(ctx, tmp_path):
    ctx.tasks.live = [task(4)]
    await call(hook.session_start, ctx, **ids(tmp_path))
    assert await call(hook.session_end, ctx, **ids(tmp_path)) == {"killed": [4]}
    assert ctx.tasks.ended == [("s1", str(tmp_path))]
    assert ctx.hooks.snapshot() == {"sessions_with_status": 0, "sessions_blocked": 0}


async def test_params_are_validated(ctx):
    reply = await hook.pre_tool(ctx, session_id="", cwd="/w")
    assert reply._error.code == errors.INVALID_PARAMS
    reply = await hook.stop(ctx, session_id="s", cwd="/w", stop_hook_active=False, extra=1)
    assert reply._error.code == errors.INVALID_PARAMS


def test_hook_memory_is_bounded():
    memory = HookMemory(cap=2)
    for name in "abc":
        memory.remember_sent(name, name)
        memory.remember_block(name, name)
    assert memory.sent("a") == "" and memory.sent("c") == "c" and memory.last_block("a") is None
    memory.remember_block("c", None)
    assert memory.last_block("c") is None


def test_the_composed_context_is_frozen(tmp_path):
    # CONVENTIONS 17: the composition root builds every part, then no handler swaps one.
    from runner.boot.compose import compose
    from runner.http.keys import CONTEXT

    app = compose(RunnerConfig(home=str(tmp_path), port=1), token="t", runner_id="r")
    ctx = app[CONTEXT]
    with pytest.raises(AttributeError, match="frozen"):
        ctx.gates = None
    assert ctx.gates is not None and ctx.work is not None and ctx.search is not None
