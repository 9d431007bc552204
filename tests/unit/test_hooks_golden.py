"""Golden tests: each platform's recorded stdin -> the canonical event, and each canonical
answer -> the exact stdout bytes and exit code that platform acts on.

The stdin samples in tests/fixtures/hooks/<platform>/ are written from the platforms'
documented schemas (HOOK-PROTOCOLS.md). A few cases also go through the real `plugkit
hook` command, with no runner, to pin the fail-open and fail-closed answers.
"""

import json
import subprocess
from pathlib import Path

import pytest

from client.hooks import core
from client.hooks.events import NOOP, Answer, is_exec, parse_event, shell_command
from tests.support.runner_home import ROOT, cli_argv

FIXTURES = ROOT / "tests" / "fixtures" / "hooks"
SID = "6f1c2b7e-9d4a-4c1e-8a55-3b2f0e9d7a10"
CWD = "/home/dev/project"


def fixture(platform: str, name: str) -> bytes:
    return (FIXTURES / platform / f"{name}.json").read_bytes()


def render(platform: str, event: str, answer: Answer) -> tuple[bytes, int]:
    return core.adapter(platform).EVENTS[event][1](answer)


def ctx_out(event: str, text: str) -> bytes:
    return (json.dumps({"hookSpecificOutput": {"hookEventName": event, "additionalContext": text}}) + "\n").encode()


def pre_out(decision: str, reason: str) -> bytes:
    return (json.dumps({"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision": decision,
                                               "permissionDecisionReason": reason}}) + "\n").encode()


ASK_GEMINI = ("plugkit: this call needs a person's confirmation, which Gemini CLI hooks cannot ask for, "
              "so it was not run; ask the user to do it themselves. ")
ASK_CODEX = ASK_GEMINI.replace("Gemini CLI hooks", "Codex hooks")
WARN_CTX = b'{"hookSpecificOutput": {"hookEventName": "PreToolUse", "additionalContext": "careful"}}\n'
EMPTY = b"{}\n"

# (platform, event, answer) -> (stdout, exit code)
GOLDEN = [
    ("claude-code", "SessionStart", Answer(context="phase PLAN"), ctx_out("SessionStart", "phase PLAN"), 0),
    ("claude-code", "SessionStart", NOOP, b"", 0),
    ("claude-code", "UserPromptSubmit", Answer(context="task_3 running"), ctx_out("UserPromptSubmit", "task_3 running"), 0),
    ("claude-code", "UserPromptSubmit", NOOP, b"", 0),
    ("claude-code", "PreToolUse", Answer("deny", "no writes in PLAN"), pre_out("deny", "no writes in PLAN"), 0),
    ("claude-code", "PreToolUse", Answer("ask", "a person approves"), pre_out("ask", "a person approves"), 0),
    ("claude-code", "PreToolUse", Answer("allow", "careful"), WARN_CTX, 0),
    ("claude-code", "PreToolUse", NOOP, b"", 0),
    ("claude-code", "PostToolUse", Answer("deny", "ignored"), b"", 0),
    ("claude-code", "Stop", Answer(block=True, reason="2 items open"), b'{"decision": "block", "reason": "2 items open"}\n', 0),
    ("claude-code", "Stop", Answer(reason="advisory: 2 items open"), b'{"systemMessage": "advisory: 2 items open"}\n', 0),
    ("claude-code", "Stop", NOOP, b"", 0),
    ("claude-code", "SubagentStop", Answer(block=True, reason="r"), b'{"decision": "block", "reason": "r"}\n', 0),
    ("claude-code", "SessionEnd", NOOP, b"", 0),
    ("qwen", "SessionStart", Answer(context="c"), ctx_out("SessionStart", "c"), 0),
    ("qwen", "PreToolUse", Answer("deny", "x"), pre_out("deny", "x"), 0),
    ("qwen", "PreToolUse", NOOP, b"", 0),
    ("qwen", "Stop", Answer(block=True, reason="r"), b'{"decision": "block", "reason": "r"}\n', 0),
    ("gemini", "SessionStart", Answer(context="phase PLAN"), ctx_out("SessionStart", "phase PLAN"), 0),
    ("gemini", "SessionStart", NOOP, EMPTY, 0),
    ("gemini", "BeforeAgent", Answer(context="task_3 running"), ctx_out("BeforeAgent", "task_3 running"), 0),
    ("gemini", "BeforeAgent", NOOP, EMPTY, 0),
    ("gemini", "BeforeTool", Answer("deny", "no writes in PLAN"), b'{"decision": "deny", "reason": "no writes in PLAN"}\n', 0),
    ("gemini", "BeforeTool", Answer("ask", "approve"),
     (json.dumps({"decision": "deny", "reason": ASK_GEMINI + "approve"}) + "\n").encode(), 0),
    ("gemini", "BeforeTool", Answer("allow", "careful"), b'{"systemMessage": "careful"}\n', 0),
    ("gemini", "BeforeTool", NOOP, EMPTY, 0),
    ("gemini", "PreToolUse", Answer("deny", "x"), b'{"decision": "deny", "reason": "x"}\n', 0),
    ("gemini", "AfterTool", Answer("deny", "ignored"), EMPTY, 0),
    ("gemini", "AfterAgent", Answer(block=True, reason="2 items open"), b'{"decision": "deny", "reason": "2 items open"}\n', 0),
    ("gemini", "AfterAgent", Answer(reason="advisory"), b'{"systemMessage": "advisory"}\n', 0),
    ("gemini", "AfterAgent", NOOP, EMPTY, 0),
    ("gemini", "SessionEnd", NOOP, EMPTY, 0),
    ("codex", "SessionStart", Answer(context="phase PLAN"), ctx_out("SessionStart", "phase PLAN"), 0),
    ("codex", "SessionStart", NOOP, b"", 0),
    ("codex", "UserPromptSubmit", Answer(context="c"), ctx_out("UserPromptSubmit", "c"), 0),
    ("codex", "PreToolUse", Answer("deny", "no writes in PLAN"), pre_out("deny", "no writes in PLAN"), 0),
    ("codex", "PreToolUse", Answer("ask", "approve"), pre_out("deny", ASK_CODEX + "approve"), 0),
    ("codex", "PreToolUse", Answer("allow", "careful"), WARN_CTX, 0),
    ("codex", "PreToolUse", NOOP, b"", 0),
    ("codex", "PostToolUse", NOOP, b"", 0),
    ("codex", "Stop", Answer(block=True, reason="2 items open"), b'{"decision": "block", "reason": "2 items open"}\n', 0),
    ("codex", "Stop", Answer(reason="advisory"), b"", 0),
    ("codex", "Stop", NOOP, b"", 0),
]


@pytest.mark.parametrize("platform, event, answer, stdout, code", GOLDEN,
                         ids=[f"{p}-{e}-{i}" for i, (p, e, *_rest) in enumerate(GOLDEN)])
def test_answer_renders_exactly(platform, event, answer, stdout, code):
    assert render(platform, event, answer) == (stdout, code)


VARIANTS = [NOOP, Answer("deny", "d"), Answer("ask", "a"), Answer("allow", "w"), Answer(context="c"),
            Answer(block=True, reason="b"), Answer(reason="r")]


@pytest.mark.parametrize("platform", sorted(core.PLATFORMS))
def test_no_platform_ever_gets_json_with_exit_2_or_a_bare_codex_allow(platform):
    for event, (kind, renderer) in core.adapter(platform).EVENTS.items():
        for answer in VARIANTS:
            out, code = renderer(answer)
            assert code == 0, (event, answer)
            if platform == "gemini":
                json.loads(out)  # Gemini CLI: stdout is only ever one JSON document
            elif out:
                doc = json.loads(out)
                assert "systemMessage" not in doc or kind == "stop", (event, answer)  # never model context
                decision = doc.get("hookSpecificOutput", {}).get("permissionDecision")
                assert decision != "allow", (event, answer)  # never grant what was not asked for


# --- stdin -> canonical event ---------------------------------------------------------------

STDIN = [
    ("claude-code", "SessionStart", "SessionStart", {"source": "startup"}),
    ("claude-code", "UserPromptSubmit", "UserPromptSubmit", {}),
    ("claude-code", "PreToolUse", "PreToolUse", {"tool_name": "Bash", "command": "npm test", "exec": False}),
    ("claude-code", "PreToolUse-exec", "PreToolUse", {"command": "exec:python\nprint(6 * 7)", "exec": True}),
    ("claude-code", "PreToolUse-write", "PreToolUse", {"tool_name": "Write", "command": None}),
    ("claude-code", "PostToolUse", "PostToolUse", {}),
    ("claude-code", "Stop", "Stop", {"stop_hook_active": False}),
    ("claude-code", "Stop-active", "Stop", {"stop_hook_active": True}),
    ("claude-code", "SubagentStop", "SubagentStop", {"stop_hook_active": False}),
    ("claude-code", "SessionEnd", "SessionEnd", {}),
    ("qwen", "SessionStart", "SessionStart", {"source": "startup"}),
    ("qwen", "PreToolUse", "PreToolUse", {"tool_name": "run_shell_command", "command": "exec:bash\nls", "exec": True}),
    ("qwen", "Stop", "Stop", {"stop_hook_active": False}),
    ("gemini", "SessionStart", "SessionStart", {"source": "startup"}),
    ("gemini", "BeforeAgent", "BeforeAgent", {}),
    ("gemini", "BeforeTool", "BeforeTool", {"tool_name": "run_shell_command", "command": "npm test", "exec": False}),
    ("gemini", "BeforeTool-exec", "BeforeTool", {"command": "exec:python\nprint(6 * 7)", "exec": True}),
    ("gemini", "AfterTool", "AfterTool", {}),
    ("gemini", "AfterAgent", "AfterAgent", {"stop_hook_active": False}),
    ("gemini", "SessionEnd", "SessionEnd", {}),
    ("codex", "SessionStart", "SessionStart", {"source": "startup"}),
    ("codex", "UserPromptSubmit", "UserPromptSubmit", {}),
    ("codex", "PreToolUse", "PreToolUse", {"tool_name": "Bash", "command": "npm test", "exec": False}),
    ("codex", "PreToolUse-argv", "PreToolUse", {"command": "exec:python\nprint(6 * 7)", "exec": True}),
    ("codex", "PostToolUse", "PostToolUse", {}),
    ("codex", "Stop", "Stop", {"stop_hook_active": False}),
]
KINDS = {"SessionStart": "session_start", "UserPromptSubmit": "prompt", "BeforeAgent": "prompt",
         "PreToolUse": "pre_tool", "BeforeTool": "pre_tool", "PostToolUse": "post_tool", "AfterTool": "post_tool",
         "Stop": "stop", "SubagentStop": "stop", "AfterAgent": "stop", "SessionEnd": "session_end"}


@pytest.mark.parametrize("platform, name, event_name, want", STDIN, ids=[f"{p}-{n}" for p, n, _e, _w in STDIN])
def test_recorded_stdin_parses_to_the_canonical_event(platform, name, event_name, want):
    kind = core.adapter(platform).EVENTS[event_name][0]
    assert kind == KINDS[event_name]
    event = parse_event(kind, platform, json.loads(fixture(platform, name)))
    # The session is the platform's own id and cwd from stdin, never an environment variable.
    assert (event.kind, event.platform, event.session_id, event.cwd) == (kind, platform, SID, CWD)
    for field in ("source", "stop_hook_active", "tool_name"):
        if field in want:
            assert getattr(event, field) == want[field]
    if "command" in want:
        assert shell_command(event) == want["command"]
    if "exec" in want:
        assert is_exec(shell_command(event)) is want["exec"]


# --- through the real command, no runner ------------------------------------------------------

def hook(home, platform: str, event: str, stdin: bytes, **env: str) -> subprocess.CompletedProcess:
    return subprocess.run(cli_argv() + ["hook", event, "--platform", platform], input=stdin, capture_output=True,
                          env={**home.env, "PLUGKIT_HOOK_STDIN_TIMEOUT": "0.5", **env}, timeout=30)


@pytest.mark.parametrize("platform, event, name, stdout", [
    ("claude-code", "PreToolUse", "PreToolUse", b""),
    ("claude-code", "UserPromptSubmit", "UserPromptSubmit", b""),
    ("claude-code", "Stop", "Stop", b""),
    ("qwen", "Stop", "Stop", b""),
    ("gemini", "BeforeTool", "BeforeTool", b"{}\n"),
    ("gemini", "AfterAgent", "AfterAgent", b"{}\n"),
    ("codex", "PreToolUse", "PreToolUse", b""),
    ("codex", "Stop", "Stop", b""),
])
def test_cli_fails_open_without_a_runner(home, platform, event, name, stdout):
    result = hook(home, platform, event, fixture(platform, name))
    assert (result.stdout, result.returncode) == (stdout, 0)
    assert result.stderr.decode().count("\n") == 1 and "fail-open" in result.stderr.decode()
    assert home.runner_pids() == []  # only SessionStart and exec: commands start a runner


CLOSED = ("plugkit hooks fail closed (PLUGKIT_HOOKS_FAIL=closed) and could not check this call: no plugkit "
          "runner is running. Ask the user to check `plugkit runner status`.")


@pytest.mark.parametrize("platform, event, name, stdout", [
    ("claude-code", "PreToolUse", "PreToolUse", pre_out("deny", CLOSED)),
    ("gemini", "BeforeTool", "BeforeTool", (json.dumps({"decision": "deny", "reason": CLOSED}) + "\n").encode()),
    ("codex", "PreToolUse", "PreToolUse", pre_out("deny", CLOSED)),
])
def test_cli_fail_closed_denies_exactly(home, platform, event, name, stdout):
    result = hook(home, platform, event, fixture(platform, name), PLUGKIT_HOOKS_FAIL="closed")
    assert (result.stdout, result.returncode) == (stdout, 0)


def test_cli_fail_closed_blocks_a_stop_once_but_never_while_stop_hook_active(home):
    first = hook(home, "claude-code", "Stop", fixture("claude-code", "Stop"), PLUGKIT_HOOKS_FAIL="closed")
    assert json.loads(first.stdout)["decision"] == "block" and first.returncode == 0
    again = hook(home, "claude-code", "Stop", fixture("claude-code", "Stop-active"), PLUGKIT_HOOKS_FAIL="closed")
    assert (again.stdout, again.returncode) == (b"", 0)


@pytest.mark.parametrize("stdin", [b"garbage", b"[1, 2]", b'{"cwd": "/x"}', b"\xff\xfe", b""])
@pytest.mark.parametrize("platform, event, noop", [("claude-code", "PreToolUse", b""),
                                                   ("gemini", "BeforeTool", b"{}\n"), ("codex", "Stop", b"")])
def test_cli_malformed_stdin_is_a_noop_with_one_note(home, platform, event, noop, stdin):
    result = hook(home, platform, event, stdin)
    assert (result.stdout, result.returncode) == (noop, 0)
    err = result.stderr.decode()
    assert err.startswith("plugkit hook: malformed event") and err.count("\n") == 1 and "Traceback" not in err


def test_cli_unknown_event_and_platform_never_exit_2(home):
    unknown = hook(home, "gemini", "Notification", b"{}")
    assert (unknown.stdout, unknown.returncode) == (b"{}\n", 0)
    bad = hook(home, "nosuchhost", "PreToolUse", b"{}")
    assert bad.returncode == 1 and bad.stdout == b"" and "unknown platform" in bad.stderr.decode()


def test_cli_stdin_that_never_closes_costs_the_budget_not_the_timeout(home):
    proc = subprocess.Popen(cli_argv() + ["hook", "PreToolUse"], stdin=subprocess.PIPE, stdout=subprocess.PIPE,
                            stderr=subprocess.PIPE, env={**home.env, "PLUGKIT_HOOK_STDIN_TIMEOUT": "0.3"})
    try:
        proc.stdin.write(b'{"session_id": "s", ')  # half an event, and stdin stays open
        proc.stdin.flush()
        proc.wait(timeout=10)
        out, err = proc.stdout.read(), proc.stderr.read().decode()
    finally:
        proc.stdin.close()
        if proc.poll() is None:
            proc.kill()
        proc.wait()
        proc.stdout.close()
        proc.stderr.close()
    assert (out, proc.returncode) == (b"", 0)
    assert "no whole event JSON arrived on stdin within 0.3s" in err


def test_fixtures_are_all_used():
    used = {(p, n) for p, n, _e, _w in STDIN}
    platforms = {p for p, _n in used}  # the later hosts' fixtures are tests/unit/test_hooks_more_hosts.py's
    on_disk = {(f.parent.name, f.stem) for f in Path(FIXTURES).glob("*/*.json") if f.parent.name in platforms}
    assert on_disk == used
