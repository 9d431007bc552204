"""OpenCode's (and Kilo's) plugin bridge: what the plugin plugkit installs sends ->
plugkit's field names, and canonical answers -> the bytes the plugin reads.

OpenCode has no command hooks: it loads JS/TS plugins from `.opencode/{plugin,plugins}/`
(Kilo, built on OpenCode: `.kilo/`, see install). The plugin (client/hooks/assets/
opencode_plugin.js) stays a thin relay so the logic lives here: on each event it runs
`plugkit hook <Event> --platform opencode` with Claude Code's stdin fields and reads
Claude Code's answers back:
- SessionStart: sent at a session's first `experimental.chat.system.transform`;
  `hookSpecificOutput.additionalContext` is appended to the system prompt.
- PreToolUse: from `tool.execute.before` (input `{tool, sessionID, callID}`, output
  `{args}`). A deny (or ask: the plugin cannot ask a person) makes the plugin throw the
  reason, which OpenCode hands to the model as the tool's error; the tool never runs.
- Stop: on the `session.idle` event; `{"decision": "block", "reason"}` makes the plugin
  send the reason as the next user message. OpenCode has no stop_hook_active, so the
  plugin always sends true: the runner blocks once per reason, never in a loop.
Tool names are OpenCode's (bash, write, edit, patch, apply_patch; args in camelCase:
`filePath`, `patchText`) and are renamed to Claude Code's here for the gates.
"""

from client.hooks.claude_code import EVENTS, NOOP_OUTPUT, NOTHING  # noqa: F401  (the same answers)
from client.hooks.events import BadEvent

# OpenCode tool -> (plugkit's tool name, OpenCode's argument -> plugkit's key)
TOOLS = {
    "bash": ("Bash", {"command": "command"}),
    "write": ("Write", {"filePath": "file_path", "content": "content"}),
    "edit": ("Edit", {"filePath": "file_path", "oldString": "old_string", "newString": "new_string"}),
    "multiedit": ("MultiEdit", {"filePath": "file_path"}),
    "patch": ("apply_patch", {"patchText": "input"}),
    "apply_patch": ("apply_patch", {"patchText": "input"}),
}


def normalize(data: object) -> dict:
    if not isinstance(data, dict):
        raise BadEvent("the stdin JSON is not an object")
    tool = data.get("tool_name")
    if not isinstance(tool, str) or tool not in TOOLS:
        return data
    name, keys = TOOLS[tool]
    raw = data.get("tool_input") if isinstance(data.get("tool_input"), dict) else {}
    return {**data, "tool_name": name, "tool_input": {keys.get(k, k): v for k, v in raw.items()}}
