"""Codex CLI's hook protocol: canonical answers -> stdout bytes.

Contract (HOOK-PROTOCOLS.md "Codex CLI"): Claude Code's fields and answers, plus `model`
and `turn_id` on stdin, with these differences:
- Events: SessionStart, UserPromptSubmit, PreToolUse, PostToolUse, Stop, SessionEnd (0.169:
  hooks/src/events/session_end.rs, fired as the session shuts down). Codex reports
  its shell tool to hooks as `Bash` (`tool_input.command`, sometimes an argv list such
  as ["bash", "-lc", "..."], which core.shell_command unwraps).
- A bare `permissionDecision: "allow"` is rejected: an allow prints NOTHING (exit 0).
  An allow with a warning is `hookSpecificOutput.additionalContext` with no decision.
- Deny: `hookSpecificOutput.permissionDecision: "deny"` + `permissionDecisionReason`.
- "ask" is unsupported: it becomes a deny whose reason says a person must confirm
  (allowing would skip the confirmation the gates asked for; a person can run it).
- `updatedInput` is accepted only with allow: plugkit never sends it.
- SessionStart / UserPromptSubmit: `hookSpecificOutput.additionalContext`.
- Stop: `{"decision": "block", "reason": ...}`; a non-blocking reason has no Codex
  field for the person, so it goes to stderr only.
- A failing hook fails open in Codex itself; plugkit fails open before that anyway.
"""

import sys

from client.hooks.output import answer, constant, context

NOTHING = (b"", 0)
NOOP_OUTPUT = b""
ASK = ("plugkit: this call needs a person's confirmation, which Codex hooks cannot ask for, "
       "so it was not run; ask the user to do it themselves. ")


def _deny(reason: str) -> tuple[bytes, int]:
    return answer({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": "deny",
                                          "permissionDecisionReason": reason}})


def pre_tool(a) -> tuple[bytes, int]:
    if a.decision == "deny":
        return _deny(a.reason)
    if a.decision == "ask":
        return _deny(ASK + a.reason)
    if a.reason:
        return answer({"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": a.reason}})
    return NOTHING


def stop(a) -> tuple[bytes, int]:
    if a.block:
        return answer({"decision": "block", "reason": a.reason or "plugkit: the work is not done yet"})
    if a.reason:
        sys.stderr.write(f"plugkit hook: {a.reason}\n")
    return NOTHING


# platform event -> (canonical kind, renderer)
EVENTS = {
    "SessionStart": ("session_start", context("SessionStart", NOTHING)),
    "UserPromptSubmit": ("prompt", context("UserPromptSubmit", NOTHING)),
    "PreToolUse": ("pre_tool", pre_tool),
    "PostToolUse": ("post_tool", constant(NOTHING)),
    "Stop": ("stop", stop),
    "SessionEnd": ("session_end", constant(NOTHING)),
}
