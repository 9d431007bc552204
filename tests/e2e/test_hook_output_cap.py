"""The hooks cap what an exec: verb shows by their own setting (PLUGKIT_HOOK_MAX_OUTPUT),
handed to the verb, not by rewriting the process's environment for it to find."""

import os
import re

import pytest

from client.hooks import exec_hook
from client.hooks.events import Event

pytestmark = pytest.mark.e2e


def test_status_through_the_hook_is_capped_by_the_hook_and_leaves_the_environment_alone(home, tmp_path,
                                                                                           monkeypatch):
    monkeypatch.setenv("PLUGKIT_HOOK_MAX_OUTPUT", "2000")
    monkeypatch.setenv("PLUGKIT_MAX_OUTPUT", "0")  # the CLI's own setting: no cap at all
    runner = home.start_runner()  # started here, so the hook has nothing to auto-start
    event = Event("pre_tool", "claude-code", "sess-cap", str(tmp_path), tool_name="Bash")
    before = dict(os.environ)
    try:
        started = exec_hook.run(event, "exec:bash\nhead -c 30000 /dev/zero | tr '\\0' Q; echo")
        tid = re.search(r"task_(\d+)", started.reason).group(1)
        # The first answer showed head and tail; the middle stays unread in the runner for exec:status.
        status = exec_hook.run(event, f"exec:status task_{tid}")
    finally:
        runner.terminate()
        runner.communicate(timeout=10)
    assert dict(os.environ) == before
    assert "Q" * 500 in status.reason and status.reason.count("Q") <= 2000
    # The poll names exactly the range it cut, in the hook's own form.
    assert re.search(rf"`exec:status task_{tid} --from \d+ --to \d+`", status.reason), status.reason[:400]
