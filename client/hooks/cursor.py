"""Cursor's hook protocol (`.cursor/hooks.json`, version 1): its stdin -> plugkit's field
names, and canonical answers -> stdout bytes.

Contract (Cursor's agent hooks reference; Cursor has no CLI that installs here, so this is
tested from its documented payloads only, tests/fixtures/hooks/cursor/):
- Config: `{"version": 1, "hooks": {"<event>": [{"command": "...", "timeout": <SECONDS>,
  "matcher": "..."}]}}` in `.cursor/hooks.json` or `~/.cursor/hooks.json`; flat entries,
  no groups; `stop` entries take `loop_limit` (continuations Cursor allows, default 5).
- stdin, every event: `conversation_id`, `generation_id`, `hook_event_name`,
  `workspace_roots`; sessionStart adds `session_id`; beforeShellExecution `command` and
  `cwd`; preToolUse `tool_name` (Shell, Write, StrReplace, Edit, Delete, ...) and
  `tool_input`; stop `status` and `loop_count` (0 on the first stop of a turn).
  The conversation is the session: `conversation_id` (else `session_id`).
- sessionStart: `{"additional_context": ...}` reaches the model.
- beforeShellExecution / preToolUse: `{"permission": "allow"|"deny"|"ask",
  "user_message": ..., "agent_message": ...}`; `agent_message` is what the model reads.
  A plain allow prints `{}` (no opinion), as for the other hosts.
- beforeSubmitPrompt can only let a prompt through or not: no model context, so prompt
  context is not sent there.
- stop: `{"followup_message": ...}` is submitted as the next user message (Claude Code's
  Stop block); a `loop_count` above 0 is Cursor's stop_hook_active.
- afterFileEdit, sessionEnd: nothing to answer.
"""

from client.hooks.events import BadEvent
from client.hooks.output import answer, constant

EMPTY = (b"{}\n", 0)
NOOP_OUTPUT = b"{}\n"
# Cursor tool -> (plugkit's tool name, Cursor's tool_input key -> plugkit's key)
TOOLS = {
    "Shell": ("Bash", {"command": "command"}),
    "Write": ("Write", {"file_path": "file_path", "path": "file_path", "contents": "content"}),
    "StrReplace": ("Edit", {"file_path": "file_path", "path": "file_path"}),
    "Edit": ("Edit", {"file_path": "file_path", "path": "file_path"}),
    "Delete": ("Write", {"file_path": "file_path", "path": "file_path"}),
}


def normalize(data: object) -> dict:
    """Cursor's stdin in the names core.parse_event reads (Claude Code's)."""
    if not isinstance(data, dict):
        raise BadEvent("the stdin JSON is not an object")
    out = {"session_id": data.get("conversation_id") or data.get("session_id")}
    roots = data.get("workspace_roots")
    cwd = data.get("cwd") or (roots[0] if isinstance(roots, list) and roots else None)
    if isinstance(cwd, str):
        out["cwd"] = cwd
    if isinstance(data.get("command"), str):  # beforeShellExecution
        out["tool_name"], out["tool_input"] = "Bash", {"command": data["command"]}
    elif isinstance(data.get("tool_name"), str):
        name, keys = TOOLS.get(data["tool_name"], (data["tool_name"], {}))
        raw = data.get("tool_input") if isinstance(data.get("tool_input"), dict) else {}
        out["tool_name"] = name
        out["tool_input"] = {keys.get(k, k): v for k, v in raw.items()}
    out["source"] = "startup"
    loops = data.get("loop_count")
    out["stop_hook_active"] = isinstance(loops, int) and loops > 0
    return out


def permission(a) -> tuple[bytes, int]:
    if a.decision in ("deny", "ask"):
        return answer({"permission": a.decision, "user_message": a.reason, "agent_message": a.reason})
    if a.reason:  # an allow with a warning: the agent reads it beside the call
        return answer({"permission": "allow", "agent_message": a.reason})
    return EMPTY


def session_start(a) -> tuple[bytes, int]:
    return answer({"additional_context": a.context}) if a.context else EMPTY


def stop(a) -> tuple[bytes, int]:
    if a.block:
        return answer({"followup_message": a.reason or "plugkit: the work is not done yet"})
    return EMPTY


# platform event -> (canonical kind, renderer)
EVENTS = {
    "sessionStart": ("session_start", session_start),
    "beforeShellExecution": ("pre_tool", permission),
    "preToolUse": ("pre_tool", permission),
    "afterFileEdit": ("post_tool", constant(EMPTY)),
    "stop": ("stop", stop),
    "sessionEnd": ("session_end", constant(EMPTY)),
}
