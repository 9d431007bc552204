"""A bounded answer keeps the last lines of every stream: a flood on one stream never hides
the final line of the other, through the CLI and through the PreToolUse hook's answer."""

import json
import re
import subprocess

import pytest

from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e

# 1 MB on one stream, then one final line on the other (the case and its mirror).
FLOODS = {
    "stderr": 'import sys; sys.stderr.write("e" * 1000000); sys.stderr.flush(); print("done-ok")',
    "stdout": 'import sys; sys.stdout.write("o" * 1000000 + "\\n"); sys.stdout.flush(); '
              'sys.stderr.write("final-err\\n")',
}
FINAL = {"stderr": ("stdout", "done-ok\n"), "stdout": ("stderr", "final-err\n")}


@pytest.mark.parametrize("flooded", FLOODS)
def test_cli_keeps_the_final_line_of_the_quiet_stream(shared_home, flooded):
    result = shared_home.cli("exec:python", FLOODS[flooded])
    assert result.returncode == 0, result.stderr
    quiet, line = FINAL[flooded]
    shown = {"stdout": result.stdout, "stderr": result.stderr}
    # stderr ends with the one line naming the task (issue 42): the quiet line comes just before it.
    # (and the runner may read the flood's last chunk after the quiet line: its cut marker may follow).
    rest = re.sub(r"\[plugkit\] task_\d+ completed.*\n$", "", shown[quiet])
    assert re.sub(r"\n\[\.\.\. \d+ bytes of \w+ cut here \.\.\.\]\n$", "", rest).endswith(line), shown[quiet][-200:]
    note = re.search(r"\[plugkit\] output cut to fit: .*", result.stderr)
    assert note, result.stderr[-400:]
    # Per stream: what was cut, and the command that prints it all.
    assert f"{flooded} " in note.group(0) and "not shown" in note.group(0)
    assert f"{quiet} shown whole" in note.group(0)
    tid = re.search(r"exec:status task_(\d+) --from", note.group(0)).group(1)
    assert len(result.stdout) + len(result.stderr) < 70_000
    rest = shared_home.cli("exec:status", f"task_{tid}", "--full")
    assert line in {"stdout": rest.stdout, "stderr": rest.stderr}[quiet]
    assert len({"stdout": rest.stdout, "stderr": rest.stderr}[flooded]) >= 900_000


@pytest.mark.parametrize("flooded", FLOODS)
def test_json_says_per_stream_what_was_cut(shared_home, flooded):
    doc = json.loads(shared_home.cli("exec:python", "--json", FLOODS[flooded]).stdout)
    quiet, line = FINAL[flooded]
    assert "".join(c["text"] for c in doc["output"] if c["stream"] == quiet).endswith(line)
    assert doc["cuts"][quiet]["shown"] == doc["cuts"][quiet]["total"] == len(line)
    assert doc["cuts"][flooded]["total"] - doc["cuts"][flooded]["shown"] > 900_000


@pytest.mark.parametrize("flooded", FLOODS)
def test_hook_answer_keeps_the_final_line_of_the_quiet_stream(shared_home, tmp_path, flooded):
    event = {"session_id": "bounds", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
             "tool_name": "Bash", "tool_input": {"command": "exec:python\n" + FLOODS[flooded]}}
    done = subprocess.run(cli_argv() + ["hook", "PreToolUse", "--platform", "claude-code"],
                          input=json.dumps(event), capture_output=True, text=True, env=shared_home.env, timeout=90)
    assert done.returncode == 0, done.stderr
    reason = json.loads(done.stdout)["hookSpecificOutput"]["permissionDecisionReason"]
    quiet, line = FINAL[flooded]
    # The two pipes are read independently, so the quiet line may land anywhere in the
    # flood's last bytes; it must be in what the answer shows after the cut.
    assert line in reason[reason.index("cut to fit"):], reason[-300:]
    assert "not shown" in reason and f"{quiet} shown whole" in reason and "exec:status task_" in reason
    assert len(reason) < 20_000
