"""A plain tool call's hook process imports neither json nor re (with enum, functools and
collections behind it): Qwen Code runs two hook processes per tool call (PreToolUse, then
UserPromptSubmit before the next model request), and every host runs at least one, so what a
hook imports is paid on every call of the agent. The real CLI entry against a real runner."""

import json
import subprocess
import sys

import pytest

from tests.support.runner_home import ROOT

pytestmark = pytest.mark.e2e

# The hook as the console script runs it (client.cli.run), then which heavy modules it loaded.
PROBE = ("import sys\n"
         "from client.cli import run\n"
         "code = run(sys.argv[1:])\n"
         "sys.stdout.flush()\n"
         "heavy = sorted(m for m in ('json', 're', 'enum', 'socket', 'selectors', 'asyncio') if m in sys.modules)\n"
         "sys.stderr.write('\\nHEAVY ' + ' '.join(heavy) + '\\n')\n"
         "raise SystemExit(code)\n")


def _hook(home, event: str, data: dict, platform: str) -> tuple[subprocess.CompletedProcess, list[str]]:
    done = subprocess.run([sys.executable, "-S", "-c", PROBE, "hook", event, "--platform", platform],
                          input=json.dumps(data).encode(), capture_output=True, env=home.env, cwd=ROOT, timeout=60)
    line = [ln for ln in done.stderr.decode().splitlines() if ln.startswith("HEAVY")][-1]
    return done, line.split()[1:]


@pytest.fixture(scope="module")
def served(tmp_path_factory):
    from tests.support.runner_home import Home, free_port

    home = Home(path=tmp_path_factory.mktemp("hot") / "home", port=free_port())
    proc = home.start_runner()
    yield home
    proc.terminate()
    proc.communicate(timeout=10)


@pytest.mark.parametrize("platform, event, extra", [
    ("qwen", "PreToolUse", {"tool_name": "run_shell_command", "tool_input": {"command": "ls"}}),
    ("qwen", "UserPromptSubmit", {"prompt": ""}),
    ("claude-code", "PreToolUse", {"tool_name": "Write", "tool_input": {"file_path": "a.txt", "content": "x"}}),
])
def test_a_plain_tool_calls_hook_imports_no_json_or_re(served, tmp_path, platform, event, extra):
    data = {"session_id": "hot-1", "cwd": str(tmp_path), "hook_event_name": event, **extra}
    done, heavy = _hook(served, event, data, platform)
    assert done.returncode == 0, done.stderr.decode()[-800:]
    assert b"plugkit hook:" not in done.stderr, done.stderr.decode()[-800:]  # the runner answered
    assert heavy == [], f"the hook of a plain tool call imported {heavy}"


def test_the_prompt_hook_still_answers_the_sessions_first_prompt_with_context(served, tmp_path):
    # The same fast path still says what it must: a qwen session's first prompt gets the
    # SessionStart context (qwen -p fires no SessionStart), rendered as JSON for the host.
    data = {"session_id": "hot-ctx", "cwd": str(tmp_path), "hook_event_name": "UserPromptSubmit", "prompt": "go"}
    done, heavy = _hook(served, "UserPromptSubmit", data, "qwen")
    assert done.returncode == 0, done.stderr.decode()[-800:]
    answer = json.loads(done.stdout)
    assert answer["hookSpecificOutput"]["hookEventName"] == "UserPromptSubmit"
    assert "plugkit" in answer["hookSpecificOutput"]["additionalContext"]
    assert heavy == []
