"""Qwen Code's hook protocol: Claude Code's answers, with the differences Qwen Code 0.15
showed when driven for real (tests/hosts): canonical answers -> stdout bytes.

Contract (as observed in the real host, beside HOOK-PROTOCOLS.md "Claude Code"):
- Config: Claude Code's shape in `.qwen/settings.json`, but command-hook `timeout` is in
  MILLISECONDS (default 60000); install.py writes them so.
- stdin: Claude Code's fields plus `timestamp`; tools keep Gemini CLI's names
  (`run_shell_command` with `tool_input.command`, `write_file`, `replace`, `edit`).
- Answers: exactly Claude Code's (hookSpecificOutput.permissionDecision deny + reason
  reaches the model as the tool's result; additionalContext reaches it as user text, with
  `<` and `>` HTML-escaped; Stop `{"decision": "block", "reason": ...}` re-prompts).
- Headless (`qwen -p`) there is no SessionStart and no SessionEnd; UserPromptSubmit fires
  before every model request (`prompt` "" after tool results). So a qwen prompt may start
  the runner (core.PROMPT_STARTS), and the runner answers a session's first prompt with
  the SessionStart context.
- Stop carries `stop_hook_active: true` every time, the first included: the runner's loop
  guard keys on the reason it already gave, so the first stop is still turned back once.
"""

from client.hooks.claude_code import EVENTS, NOOP_OUTPUT, NOTHING  # noqa: F401  (the same table)
