"""The canonical event model: a platform's hook event and plugkit's answer, in plugkit's
terms, and the readings of a tool call every platform shares (its shell command line,
whether that is an exec: command, a slimmed tool_input for the gates).

Plain classes with __slots__ rather than dataclasses: `import dataclasses` costs ~5 ms,
paid on every tool call of the agent.
"""

import os

from plugkit.host_tools import SHELL_TOOLS  # tool name -> the tool_input key of its command line
# The gates read paths and commands, not contents: a 5 MB Write must not outgrow the
# runner's 1 MiB body cap and turn into a failed check.
SLIM_AT = 64 << 10
SLIM_NESTED_AT = 1 << 10  # a string inside a list or object (MultiEdit's edits): contents, never a path
PATCH_KEYS = ("input", "patch")  # apply_patch: the file names live in its `*** ... File:` headers


class Event:
    """A platform event in plugkit's terms. kind: session_start | prompt | pre_tool |
    post_tool | stop | session_end."""

    __slots__ = ("kind", "platform", "session_id", "cwd", "tool_name", "tool_input", "source",
                 "stop_hook_active")

    def __init__(self, kind: str, platform: str, session_id: str, cwd: str, tool_name: str = "",
                 tool_input: dict | None = None, source: str = "", stop_hook_active: bool = False) -> None:
        self.kind, self.platform, self.session_id, self.cwd = kind, platform, session_id, cwd
        self.tool_name, self.tool_input = tool_name, tool_input or {}
        self.source, self.stop_hook_active = source, stop_hook_active


class Answer:
    """plugkit's decision, before any platform's spelling of it. decision (pre_tool):
    allow | deny | ask, with reason (for deny: what the model reads; for allow: a warning);
    context: text for the model (session_start, prompt); block + reason (stop)."""

    __slots__ = ("decision", "reason", "context", "block")

    def __init__(self, decision: str = "allow", reason: str = "", context: str = "", block: bool = False) -> None:
        self.decision, self.reason, self.context, self.block = decision, reason, context, block

    def __eq__(self, other: object) -> bool:
        return isinstance(other, Answer) and all(getattr(self, s) == getattr(other, s) for s in self.__slots__)

    def __repr__(self) -> str:
        return "Answer(" + ", ".join(f"{s}={getattr(self, s)!r}" for s in self.__slots__) + ")"


NOOP = Answer()


class BadEvent(Exception):
    """stdin did not hold a usable event; str() says why, in one line."""


def parse_event(kind: str, platform: str, data: object) -> Event:
    """The fields every platform shares (Claude Code's names; Gemini CLI and Codex CLI use them too)."""
    if not isinstance(data, dict):
        raise BadEvent("the stdin JSON is not an object")
    sid = data.get("session_id")
    if not isinstance(sid, str) or not sid.strip() or len(sid) > 256:
        raise BadEvent("no usable session_id")
    cwd = data.get("cwd")
    if not isinstance(cwd, str) or not cwd:
        cwd = os.getcwd()  # platforms start hooks in the project directory
    tool_input = data.get("tool_input")
    tool_name = data.get("tool_name")
    source = data.get("source")
    return Event(kind, platform, sid, cwd, tool_name if isinstance(tool_name, str) else "",
                 tool_input if isinstance(tool_input, dict) else {}, source if isinstance(source, str) else "",
                 data.get("stop_hook_active") is True)


def shell_command(event: Event) -> str | None:
    """The command line of a shell tool call, else None. Codex may send argv lists."""
    key = SHELL_TOOLS.get(event.tool_name)
    raw = event.tool_input.get(key) if key else None
    if isinstance(raw, list):
        words = [str(w) for w in raw]
        return words[2] if len(words) >= 3 and words[1] in ("-c", "-lc") else " ".join(words)
    return raw if isinstance(raw, str) else None


def is_exec(command: str) -> bool:
    """`exec:<x> ...` or `plugkit exec:<x> ...` / `plugkit kill-port N` (plugkit may be a path)."""
    words = command[:512].split(None, 2)
    if words and (words[0] == "plugkit" or words[0].endswith("/plugkit")):
        return len(words) > 1 and (words[1].startswith("exec:") or words[1] == "kill-port")
    return bool(words) and words[0].startswith("exec:")


def slim(tool_input: dict) -> dict:
    """tool_input with long contents cut (the gates need paths and commands only), in lists and
    objects too (MultiEdit's edits): what is left must fit the runner's request limit, else the
    call is one nobody could check (core.unread)."""
    return {key: _slim(key, value, SLIM_AT) for key, value in tool_input.items()}


def _slim(key, value, at: int):
    if isinstance(value, dict):
        return {k: _slim(k, v, SLIM_NESTED_AT) for k, v in value.items()}
    if isinstance(value, list):
        return [_slim(key, v, SLIM_NESTED_AT) for v in value]
    if isinstance(value, str) and len(value) > at and key not in ("command", "cmd"):
        if key in PATCH_KEYS:
            return "\n".join(line for line in value.splitlines() if line.startswith("*** "))
        return value[:at]
    return value
