"""Gemini CLI's hook protocol: canonical answers -> stdout bytes.

Contract (HOOK-PROTOCOLS.md "Gemini CLI", and its hooks reference):
- Events: SessionStart, BeforeAgent (a prompt was submitted), BeforeTool, AfterTool,
  AfterAgent (the turn's answer is ready: Gemini's stop point, with `stop_hook_active`),
  SessionEnd. stdin carries Claude Code's field names (`session_id`, `cwd`, `tool_name`,
  `tool_input`, `source`, `stop_hook_active`) plus `timestamp`; the shell tool is
  `run_shell_command` with `tool_input.command`.
- Exit 0 and stdout holding ONLY one JSON document, always: `{}` when there is nothing
  to say. Exit 2 (stderr as reason) is never used.
- SessionStart / BeforeAgent: `hookSpecificOutput.additionalContext` for the model.
- BeforeTool: `{"decision": "deny", "reason": ...}`; the reason reaches the agent as
  the tool's error. A plain allow is `{}` (no opinion: Gemini's own confirmation rules
  apply). "ask" does not exist here: it becomes a deny whose reason says a person must
  confirm, since allowing would skip the confirmation the gates asked for. An allow
  with a warning is a `systemMessage` (shown to the user; BeforeTool has no
  model-visible field besides a deny reason).
- AfterAgent: `{"decision": "deny", "reason": ...}` rejects the turn's answer and sends
  the reason back as a new prompt (Claude Code's Stop block); a non-blocking reason is a
  `systemMessage`.
The Claude Code event names are accepted as aliases, so `plugkit hook PreToolUse
--platform gemini` answers in Gemini's format.
"""

from client.hooks.output import answer, constant, context

EMPTY = (b"{}\n", 0)
NOOP_OUTPUT = b"{}\n"
ASK = ("plugkit: this call needs a person's confirmation, which Gemini CLI hooks cannot ask for, "
       "so it was not run; ask the user to do it themselves. ")


def before_tool(a) -> tuple[bytes, int]:
    if a.decision == "deny":
        return answer({"decision": "deny", "reason": a.reason})
    if a.decision == "ask":
        return answer({"decision": "deny", "reason": ASK + a.reason})
    if a.reason:
        return answer({"systemMessage": a.reason})
    return EMPTY


def after_agent(a) -> tuple[bytes, int]:
    if a.block:
        return answer({"decision": "deny", "reason": a.reason or "plugkit: the work is not done yet"})
    if a.reason:
        return answer({"systemMessage": a.reason})
    return EMPTY


# platform event -> (canonical kind, renderer); the last four rows are Claude Code aliases.
EVENTS = {
    "SessionStart": ("session_start", context("SessionStart", EMPTY)),
    "BeforeAgent": ("prompt", context("BeforeAgent", EMPTY)),
    "BeforeTool": ("pre_tool", before_tool),
    "AfterTool": ("post_tool", constant(EMPTY)),
    "AfterAgent": ("stop", after_agent),
    "SessionEnd": ("session_end", constant(EMPTY)),
    "UserPromptSubmit": ("prompt", context("BeforeAgent", EMPTY)),
    "PreToolUse": ("pre_tool", before_tool),
    "PostToolUse": ("post_tool", constant(EMPTY)),
    "Stop": ("stop", after_agent),
}
