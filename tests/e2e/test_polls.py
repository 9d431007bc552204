"""A poll costs only what is new: exec:status and exec:sleep on a chatty task show the
unread output, bounded and tail-biased, in whole lines, cleaned of colour codes and `\\r`
progress, with one note naming what was cut and the command that prints it."""

import os
import re
import time

import pytest

from tests.support.load import stretched
from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e

LINE = re.compile(r"^line (\d+) x{80}$")
# ~35 KiB every 0.1 s, each line coloured, a progress line overwritten in place between bursts.
CHATTY = """import sys, time
i = 0
while True:
    for _ in range(400):
        i += 1
        sys.stdout.write(f"\\x1b[32mline {i}\\x1b[0m " + "x" * 80 + "\\n")
    sys.stdout.write(f"progress {i}%\\r"); sys.stdout.write(f"progress {i + 1}%\\r\\n")
    sys.stdout.flush(); time.sleep(0.1)
"""


def _start(home, code: str, lang: str = "python") -> str:
    started = home.cli(f"exec:{lang}", "--wait", "0", code)
    return re.search(r"task_\d+", started.stderr + started.stdout).group(0)


def _waited(home, tid: str, **until) -> dict:
    """task.wait on the test's session (the CLI's: $PLUGKIT_SESSION, this cwd): returns once the
    task ends or the text is there, and marks nothing read, so the poll under test sees it all."""
    ref = {"session_id": os.environ["PLUGKIT_SESSION"], "cwd": os.getcwd(), "task_id": int(tid.split("_")[1])}
    return rpc(home, "task.wait", {**ref, "timeout_ms": 60_000, "cursor": 0, **until}, timeout=90)


def _numbers(stdout: str) -> list[int]:
    nums = []
    for line in stdout.splitlines():
        if line.startswith("progress "):
            continue
        match = LINE.match(line)
        assert match, f"a cut or dirty line: {line!r}"
        nums.append(int(match.group(1)))
    return nums


def _notes(stderr: str) -> list[str]:
    return [line for line in stderr.splitlines() if line.startswith("[plugkit]")]


def test_polls_on_a_chatty_task_are_small_new_and_whole(shared_home):
    tid = _start(shared_home, CHATTY)
    try:
        seen = []
        for _ in range(2):
            # Two bursts past the last line seen (not a fixed 1.5 s: beside CPU hogs the task's
            # python may not have printed anything yet): more than a poll shows, so it skips.
            after = seen[-1][0][-1] if seen else 0
            assert _waited(shared_home, tid, until_text=f"line {after + 800}\x1b")["matched"]
            polled = shared_home.cli("exec:status", tid)
            assert polled.returncode == 0, polled.stderr
            assert len(polled.stdout) + len(polled.stderr) < 14_000, (len(polled.stdout), len(polled.stderr))
            nums = _numbers(polled.stdout)
            assert nums == sorted(nums) and nums, polled.stdout[:300]
            skipped = [n for n in _notes(polled.stderr) if "skipped" in n]
            assert len(skipped) == 1 and "cut to fit" not in polled.stderr, polled.stderr
            seen.append((nums, skipped[0]))
        # The second poll repeats nothing of the first: it starts past the first's last line.
        assert seen[1][0][0] > seen[0][0][-1]
        rest = re.search(r"`(plugkit exec:status .* --from (\d+) --to (\d+))`", seen[1][1])
        assert rest and int(rest.group(3)) - int(rest.group(2)) == 12000, seen[1][1]  # a bounded next step
        again = shared_home.cli(*rest.group(1).split()[1:], "--full")
        # The skipped range's first 12000 bytes, raw with --full (colour codes kept), starting right
        # after the first poll's last line.
        assert again.stdout.count("\x1b[32m") > 100 and len(again.stdout) <= 12000
        assert re.search(rf"line {seen[0][0][-1] + 1}\b", again.stdout[:200]), again.stdout[:200]
    finally:
        shared_home.cli("exec:close", tid)


def test_sleep_is_bounded_and_repeats_nothing(shared_home):
    tid = _start(shared_home, CHATTY)
    try:
        # Each sleep starts with two bursts unread (more than it may show), whatever the load.
        assert _waited(shared_home, tid, until_text="line 800\x1b")["matched"]
        first = shared_home.cli("exec:sleep", tid, "2")
        assert _waited(shared_home, tid, until_text=f"line {_numbers(first.stdout)[-1] + 800}\x1b")["matched"]
        second = shared_home.cli("exec:sleep", tid, "2")
        for answer in (first, second):
            assert len(answer.stdout) + len(answer.stderr) < 14_000
            assert len([n for n in _notes(answer.stderr) if "skipped" in n]) == 1, answer.stderr
        assert _numbers(second.stdout)[0] > _numbers(first.stdout)[-1]
    finally:
        shared_home.cli("exec:close", tid)


def test_progress_keeps_its_last_state_and_colour_goes(shared_home):
    code = ('import sys\nfor p in range(0, 101, 10):\n    sys.stdout.write(f"\\x1b[1mprogress {p}%\\x1b[0m\\r")\n'
            '    sys.stdout.flush()\nprint()\nprint("\\x1b[31mdone\\x1b[0m")\n')
    tid = _start(shared_home, code)
    assert _waited(shared_home, tid)["task"]["state"] == "completed"  # it ended: all it prints is there
    polled = shared_home.cli("exec:status", tid)
    assert polled.stdout == "progress 100%\ndone\n", repr(polled.stdout)
    raw = shared_home.cli("exec:status", tid, "--from", "0", "--full")
    # As written (text mode reads each `\r` as a line end here): every state, colours kept.
    assert "\x1b[31mdone" in raw.stdout and raw.stdout.count("progress") == 11


def test_sleep_until_sees_text_printed_before_the_call(shared_home):
    tid = _start(shared_home, "sleep 0.5; echo listening on 8000; sleep 60", lang="bash")
    try:
        assert _waited(shared_home, tid, until_text="listening on 8000")["matched"]  # printed before the call
        began = time.monotonic()
        waited = shared_home.cli("exec:sleep", tid, "20", "--until", "listening")
        assert time.monotonic() - began < stretched(10)  # seen at once, not after the 20 s
        assert "listening on 8000" in waited.stdout and "saw 'listening'" in waited.stderr
        missed = shared_home.cli("exec:sleep", tid, "1", "--until", "ready")
        assert "'ready' not seen in 1s" in missed.stderr, missed.stderr
    finally:
        shared_home.cli("exec:close", tid)
