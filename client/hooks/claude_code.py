"""Claude Code's hook protocol (Qwen Code answers the same way, see qwen.py): canonical answers
-> stdout bytes.

Contract (HOOK-PROTOCOLS.md, "Claude Code"):
- stdin: `session_id`, `cwd`, `hook_event_name`; SessionStart `source`; PreToolUse
  `tool_name` + `tool_input` (Bash: `command`); Stop/SubagentStop `stop_hook_active`.
  Parsed by core.parse_event, the same for every platform.
- Always exit 0 with JSON (or nothing) on stdout; never JSON with exit 2, which Claude
  Code ignores.
- SessionStart / UserPromptSubmit: `hookSpecificOutput.additionalContext` (what the model
  reads; `systemMessage` is only shown to the user). Nothing when there is no context.
- PreToolUse deny / ask: `hookSpecificOutput.permissionDecision` + `permissionDecisionReason`
  (a deny reason is what the model reads). A plain allow prints NOTHING: "allow" in
  Claude Code skips the user's own permission prompt, and a gatekeeper must not grant
  what it was not asked to; with no answer the platform's usual rules apply. An allow with
  a warning (advisory gates) becomes `hookSpecificOutput.additionalContext` alone, which
  reaches the model without touching the permission decision.
- Stop / SubagentStop: `{"decision": "block", "reason": ...}` keeps the agent working; a
  reason without a block (advisory, or the loop guard letting it stop) is a
  `systemMessage` for the person. The runner never blocks twice for one reason while
  `stop_hook_active` is true.
- PostToolUse, SessionEnd: nothing.
"""

from client.hooks.output import answer, constant, context

NOTHING = (b"", 0)
NOOP_OUTPUT = b""


def pre_tool(a) -> tuple[bytes, int]:
    if a.decision in ("deny", "ask"):
        return answer({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": a.decision,
                                              "permissionDecisionReason": a.reason}})
    if a.reason:
        return answer({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": a.reason}})
    return NOTHING


def stop(a) -> tuple[bytes, int]:
    if a.block:
        return answer({"decision": "block", "reason": a.reason or "plugkit: the work is not done yet"})
    if a.reason:
        return answer({"systemMessage": a.reason})
    return NOTHING


# platform event -> (canonical kind, renderer). Adding an event is adding a row.
EVENTS = {
    "SessionStart": ("session_start", context("SessionStart", NOTHING)),
    "UserPromptSubmit": ("prompt", context("UserPromptSubmit", NOTHING)),
    "PreToolUse": ("pre_tool", pre_tool),
    "PostToolUse": ("post_tool", constant(NOTHING)),
    "Stop": ("stop", stop),
    "SubagentStop": ("stop", stop),
    "SessionEnd": ("session_end", constant(NOTHING)),
}
