"""hook.* — platform hooks as canonical events. Params and results as pydantic models (the wire contract)."""

from typing import Literal

from pydantic import Field

from plugkit.protocol import Cwd, Params, Result, SessionId


# --- hook.* (platform hooks, as canonical events; client/hooks/ speaks each platform) ---
# The client adapters turn Claude Code / Qwen Code / Gemini CLI / Codex CLI stdin into these;
# session_id and cwd always come from the platform's stdin, never from an environment variable.

HookDecisionKind = Literal["allow", "deny", "ask"]


class HookSessionParams(Params):
    session_id: str = SessionId
    cwd: Cwd
    # The PLUGKIT_SESSION_ID tag of the hook's process, sent only when set: a `plugkit work`
    # worker's host inherits the one the runner gave the worker's task, and the worker policy
    # applies only to the session that carries it (a host's hooks get its own environment,
    # which the agent's shell cannot change), never to any session whose cwd is in a worktree.
    worker_session: str = Field(default="", max_length=256)


class HookSessionStartParams(HookSessionParams):
    platform: str = Field(default="", max_length=32)
    source: str = Field(default="", max_length=64)  # startup | resume | clear | compact


class HookPreToolParams(HookSessionParams):
    tool_name: str = Field(default="", max_length=128)
    tool_input: dict = {}
    platform: str = Field(default="", max_length=32)  # whether the host can ask the person


class HookStopParams(HookSessionParams):
    stop_hook_active: bool = False


class HookContext(Result):
    context: str


class HookPromptResult(Result):
    context: str
    changed: bool


class HookDecision(Result):
    decision: HookDecisionKind
    reason: str


class HookStopResult(Result):
    block: bool
    reason: str


class HookSessionEnded(Result):
    killed: list[int]
