"""GitHub Copilot CLI's hook protocol (`.github/hooks/*.json`, version 1): its stdin ->
plugkit's field names, and canonical answers -> stdout bytes.

Contract (Copilot CLI hooks reference, camelCase event names, which plugkit installs):
- Config: `{"version": 1, "hooks": {"<event>": [{"type": "command", "bash": "...",
  "timeoutSec": <SECONDS>}]}}`, one file per tool under `.github/hooks/` (plugkit writes
  its own, `plugkit.json`); user-wide `~/.copilot/hooks/` (1.0.102 loads it). No matcher on preToolUse:
  every tool call comes, and the adapter says nothing about those it does not gate.
- stdin: `sessionId`, `timestamp`, `cwd`; sessionStart `source`; preToolUse `toolName`
  (bash, create, edit, ...) and `toolArgs` (an object, or that object as a JSON string);
  agentStop `stopReason`. The PascalCase spellings (`session_id`, `tool_name`,
  `tool_input`) are read too.
- preToolUse: `{"permissionDecision": "allow"|"deny"|"ask", "permissionDecisionReason":
  ...}`; the reason of a deny is what the agent reads. A plain allow prints nothing.
- agentStop: `{"decision": "block", "reason": ...}` forces another turn with the reason as
  its prompt. Copilot sends no stop_hook_active, and nothing bounds its continuations, so
  every stop is read as a continuation: the runner then blocks once per reason, never in
  a loop (the loop guard compares with the reason it gave last).
- sessionStart: `{"additionalContext": ...}`. The reference says its output is not
  processed, but Copilot CLI 1.0.102, driven for real (tests/hosts/test_more_hosts.py),
  hands it to the model as a user message. userPromptSubmitted output is ignored: plugkit
  does not install it.
"""

import json

from client.hooks.events import BadEvent
from client.hooks.output import answer, constant

NOTHING = (b"", 0)
NOOP_OUTPUT = b""
# Copilot tool -> (plugkit's tool name, Copilot's argument -> plugkit's key)
TOOLS = {
    "bash": ("Bash", {"command": "command"}),
    "create": ("Write", {"path": "file_path", "file_text": "content"}),
    "edit": ("Edit", {"path": "file_path", "old_str": "old_string", "new_str": "new_string"}),
}


def normalize(data: object) -> dict:
    if not isinstance(data, dict):
        raise BadEvent("the stdin JSON is not an object")
    out = {"session_id": data.get("sessionId") or data.get("session_id"), "cwd": data.get("cwd"),
           "source": data.get("source"), "stop_hook_active": True}
    tool = data.get("toolName", data.get("tool_name"))
    if isinstance(tool, str):
        raw = data.get("toolArgs", data.get("tool_input"))
        if isinstance(raw, str):
            try:
                raw = json.loads(raw)
            except ValueError:
                raw = {}
        name, keys = TOOLS.get(tool, (tool, {}))
        out["tool_name"] = name
        out["tool_input"] = {keys.get(k, k): v for k, v in raw.items()} if isinstance(raw, dict) else {}
    return out


def pre_tool(a) -> tuple[bytes, int]:
    if a.decision in ("deny", "ask"):
        return answer({"permissionDecision": a.decision, "permissionDecisionReason": a.reason})
    return NOTHING  # a warning has no field the agent reads; the tool runs as it would


def session_start(a) -> tuple[bytes, int]:
    return answer({"additionalContext": a.context}) if a.context else NOTHING


def agent_stop(a) -> tuple[bytes, int]:
    if a.block:
        return answer({"decision": "block", "reason": a.reason or "plugkit: the work is not done yet"})
    return NOTHING


# platform event -> (canonical kind, renderer)
EVENTS = {
    "sessionStart": ("session_start", session_start),
    "userPromptSubmitted": ("prompt", constant(NOTHING)),
    "preToolUse": ("pre_tool", pre_tool),
    "postToolUse": ("post_tool", constant(NOTHING)),
    "agentStop": ("stop", agent_stop),
    "subagentStop": ("stop", agent_stop),
    "sessionEnd": ("session_end", constant(NOTHING)),
}
