"""Issue 42's majors 2-5 through the real CLI and daemon: answers a caller draws no wrong
conclusion from. `--until` finds text already shown; a cut note counts exactly and offers
bounded next steps (and a hook never shows half a line); a foreground exec names its task
and `last` reaches it; exec:tasks tells tasks apart."""

import json
import re
import subprocess

import pytest

from client.hooks import exec_hook
from client.hooks.events import Event

pytestmark = pytest.mark.e2e
S = {"PLUGKIT_SESSION": "answers"}
# 20972 lines of 100 bytes: 2,097,200 bytes, every line numbered.
BIG = "import sys\nfor i in range(20972): sys.stdout.write(f'{i:07d} ' + 'y' * 91 + '\\n')"
LINE = re.compile(r"^\d{7} y{91}$")


def _tid(answer) -> str:
    return re.search(r"task_\d+", answer.stderr + answer.stdout).group(0)


def test_until_matches_text_the_caller_was_already_shown_and_says_where(shared_home):
    started = shared_home.cli("exec:bash", "--wait", "2", "echo 'Serving HTTP on 0.0.0.0'; exec sleep 60")
    tid = _tid(started)
    try:
        assert "Serving HTTP" in started.stdout, started.stderr
        seen = shared_home.cli("exec:sleep", tid, "20", "--until", "Serving")
        assert "not seen" not in seen.stderr, seen.stderr
        assert "saw 'Serving' at byte 0 (already read by this session): 'Serving HTTP on 0.0.0.0'" in seen.stderr
        assert "still running after" not in seen.stderr  # it returned on the match, not the timeout
        doc = json.loads(shared_home.cli("exec:sleep", tid, "20", "--until", "HTTP", "--json").stdout)
        assert doc["matched"] and doc["match_cursor"] == len("Serving HTTP"), doc
        never = shared_home.cli("exec:sleep", tid, "1", "--until", "Nope")
        assert "'Nope' not seen in 1s (it was never printed)" in never.stderr, never.stderr
    finally:
        shared_home.cli("exec:close", tid)


def test_a_cut_note_counts_exactly_and_offers_bounded_next_steps(shared_home):
    big = shared_home.cli("exec:python", BIG)
    assert big.returncode == 0, big.stderr
    tid = _tid(big)
    notes = [line for line in big.stderr.splitlines() if "cut to fit" in line]
    assert len(notes) == 1, big.stderr
    note = notes[0]
    shown_head = int(re.search(r"the first (\d+) shown", note).group(1))
    assert "2097200 bytes in all" in note and "--full prints all 2097200 bytes" in note, note
    assert "MiB" not in note, note  # exact counts, never a rounded 2.0 MiB of 2.0 MiB
    # Every stdout line is whole: the head ends on a line end, the tail starts on one.
    assert all(LINE.match(line) for line in big.stdout.splitlines()), big.stdout[-300:]
    assert big.stdout.startswith("0000000 ") and big.stdout.endswith("0020971 " + "y" * 91 + "\n")
    assert shown_head == len(big.stdout.split("\n0000")[0]) or shown_head % 100 == 0
    step = re.search(r"`plugkit (exec:status task_\d+ --from (\d+) --to (\d+))`", note)
    assert step and int(step.group(2)) == shown_head and int(step.group(3)) - shown_head <= 12000, note
    nxt = shared_home.cli(*step.group(1).split())
    assert len(nxt.stdout) == int(step.group(3)) - shown_head, len(nxt.stdout)
    assert all(LINE.match(line) for line in nxt.stdout.splitlines()), nxt.stdout[:200]
    assert f"`plugkit exec:status {tid} --grep RE`" in note, note
    grep = shared_home.cli("exec:status", tid, "--grep", "^00123[0-4]")
    rows = grep.stdout.splitlines()
    assert len(rows) == 50 and rows[0] == "1230000: 0012300 " + "y" * 91, rows[:2]
    assert "50 lines match" in grep.stderr, grep.stderr
    bounded = shared_home.cli("exec:status", tid, "--grep", "y")
    assert len(bounded.stdout) <= 12000 and "20972 lines match" in bounded.stderr, bounded.stderr


def test_through_a_hook_a_big_output_never_shows_half_a_line(home, tmp_path):
    runner = home.start_runner()
    event = Event("pre_tool", "claude-code", "sess-lines", str(tmp_path), tool_name="Bash")
    try:
        answer = exec_hook.run(event, "exec:python\n" + BIG).reason
    finally:
        runner.terminate()
        runner.communicate(timeout=10)
    body = answer.split("Output:\n", 1)[1]
    for line in body.splitlines():
        assert LINE.match(line) or line.startswith("[plugkit]") or line.startswith("[...") or not line, line[:120]
    assert "2097200 bytes in all" in answer and "--from" in answer, answer[-600:]


def test_a_foreground_exec_names_its_task_and_last_reaches_it(shared_home, tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    run = lambda *a: shared_home.cli(*a, cwd=str(tmp_path))  # noqa: E731
    ran = run("exec:bash", "echo 5432")
    assert ran.stdout == "5432\n" and ran.returncode == 0
    named = re.fullmatch(r"\[plugkit\] (task_\d+) completed: exit 0 \(bash, [\d.]+s.*\)\n", ran.stderr)
    assert named, ran.stderr
    failed = run("exec:bash", "exit 3")
    assert re.fullmatch(r"\[plugkit\] task_\d+ failed: exit 3 \(bash, .*\)\n", failed.stderr), failed.stderr
    assert run("mutable", "add", "db_port", "--expected", "5432").returncode == 0
    run("exec:bash", "echo 5432")
    started = run("exec:bash", "--wait", "0", "exec sleep 60")  # running: `last` skips it
    try:
        resolved = run("mutable", "resolve", "db_port", "last")
        assert resolved.returncode == 0, resolved.stderr + resolved.stdout
        last = int(re.search(r"last = task_(\d+)", resolved.stderr).group(1))
        assert last == int(_tid(started)[5:]) - 1, resolved.stderr
        receipt = run("evidence", "add", "--task", "last")
        assert receipt.returncode == 0, receipt.stderr
        assert f"last = task_{last}" in receipt.stderr
    finally:
        run("exec:close", _tid(started))
    other = shared_home.cli("mutable", "resolve", "db_port", "last", cwd=str(tmp_path), env={"PLUGKIT_SESSION": "empty"})
    assert other.returncode != 0 and "has none yet" in other.stderr, other.stderr


# One write of "port N": a task's python runs unbuffered (-u), and print('port', n) writes "port"
# and the number apart, so --until port could return before the number had arrived.
SERVER = ("import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
          "print(f'port {s.getsockname()[1]}', flush=True); time.sleep(60)")


def test_exec_tasks_tells_tasks_apart(shared_home):
    web = shared_home.cli("exec:python", "--name", "web", "--wait", "0", SERVER)
    ids = [_tid(web)]
    try:
        said = shared_home.cli("exec:sleep", ids[0], "30", "--until", "port")
        # The line may have come with the start's own answer (then --until says it was already read).
        found = re.search(r"port (\d+)", web.stdout + said.stdout + said.stderr)
        assert found, (web.stdout, web.stderr, said.stdout, said.stderr)
        port = found.group(1)
        ids.append(_tid(shared_home.cli("exec:bash", "--wait", "0", "exec sleep 61")))
        table = shared_home.cli("exec:tasks").stdout.splitlines()
        assert table[0].split() == ["TASK", "NAME", "STATE", "EXIT", "LANG", "TIME", "CPU", "MEM", "OUT", "PORTS",
                                    "COMMAND"], table
        row = next(r for r in table if r.startswith(ids[0] + " "))
        assert " web " in row and f" {port} " in row and row.endswith("import socket, time ..."), row
        assert next(r for r in table if r.startswith(ids[1] + " ")).endswith("exec sleep 61")
        doc = json.loads(shared_home.cli("exec:tasks", "--json").stdout)
        mine = {t["task_id"]: t for t in doc["tasks"]}[int(ids[0][5:])]
        assert mine["name"] == "web" and mine["ports"] == [int(port)], mine
        assert mine["command"] == "import socket, time ..." and mine["cpu_s"] is not None, mine
        status = shared_home.cli("exec:status", ids[0]).stderr
        assert f"{ids[0]} (web) running (python: import socket, time ..., pid" in status, status
        assert f"listening on {port}" in status, status
        runner = shared_home.cli("runner", "status").stdout
        assert re.search(r"^\s+SESSION\s+TASK\s+NAME\s+STATE\s+EXIT\s+LANG\s+TIME\s+CPU\s+MEM\s+OUT\s+PORTS\s+COMMAND$",
                         runner, re.M), runner
    finally:
        for tid in ids:
            shared_home.cli("exec:close", tid)


def test_until_says_so_when_the_text_may_lie_in_output_the_ring_dropped(home):
    # A 64 KiB ring (the runner reads its limits at boot): "Serving" is pushed out by 200 KB.
    env = dict(S, PLUGKIT_OUTPUT_CAP_BYTES="65536")
    ran = home.cli("exec:python", "print('Serving'); print('x' * 200000)", env=env)
    assert ran.returncode == 0, ran.stderr
    said = home.cli("exec:sleep", _tid(ran), "1", "--until", "Serving", env=env)
    assert "'Serving' not seen before the task ended; the first" in said.stderr, said.stderr
    assert "bytes of its output were dropped" in said.stderr and "never printed" not in said.stderr, said.stderr
