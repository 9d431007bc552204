"""`plugkit exec:serial`, `exec:type --eol` and `serial list` end to end: the real CLI and
runner, and a real pseudo-terminal pair from socat. The runner opens the "near" end;
the test plays the device on the "far" one.

No wait-slave on the near end: socat then outlives the runner's close, so the same
device can be opened a second time; a device going away is socat being killed.
"""

import json
import os
import re
import select
import shutil
import subprocess
import threading
import time

import pytest

from tests.support.load import stretched
from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e

SOCAT_MISSING = ("socat is missing; the serial tests need real pseudo-terminals: "
                 "apt-get install -y socat")
MISSING_DEVICE = "/dev/ttyUSB-plugkit-missing"


class Pair:
    def __init__(self, proc: subprocess.Popen, near: str, far: str) -> None:
        self.proc, self.near, self.far = proc, near, far
        # Blocking, as a board's firmware would hold its end; closed by the fixture.
        self.fd = os.open(far, os.O_RDWR | os.O_NOCTTY)

    def send(self, data: bytes) -> None:
        view = memoryview(data)
        while view:
            view = view[os.write(self.fd, view):]

    def receive(self, want: bytes, timeout: float = 5.0) -> bytes:
        """What reaches the far end, until `want` is in it (or the timeout)."""
        got = bytearray()
        deadline = time.monotonic() + timeout
        while want not in got and (left := deadline - time.monotonic()) > 0:
            if select.select([self.fd], [], [], left)[0]:
                got += os.read(self.fd, 4096)
        return bytes(got)


@pytest.fixture
def pty_pair(tmp_path):
    if shutil.which("socat") is None:
        pytest.fail(SOCAT_MISSING)
    log = tmp_path / "socat.log"
    with open(log, "w") as err:  # a file, not a pipe: socat never blocks on its own log
        proc = subprocess.Popen(["socat", "-d", "-d", "pty,raw,echo=0", "pty,raw,echo=0"],
                                stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=err)
    pair = None
    try:
        deadline = time.monotonic() + 10
        while len(paths := re.findall(r"PTY is (\S+)", log.read_text())) < 2:
            assert proc.poll() is None and time.monotonic() < deadline, log.read_text()[-500:]
            time.sleep(0.01)
        pair = Pair(proc, near=paths[1], far=paths[0])
        yield pair
    finally:
        if pair is not None:
            os.close(pair.fd)
        if proc.poll() is None:
            proc.kill()
        proc.wait()


def started_id(result) -> int:
    assert result.returncode == 0, result.stderr
    found = re.search(r"task_(\d+) is still running", result.stderr)
    assert found, result.stderr
    return int(found.group(1))


def one_line_refusal(result, code: int, said: str) -> None:
    err = result.stderr.strip()
    assert result.returncode == code, (result.returncode, err)
    assert said in err and err.startswith("plugkit: "), err
    assert len(err.splitlines()) == 1 and "Traceback" not in err


# --- streaming, typing, closing --------------------------------------------------------

def test_stream_until_type_with_each_eol_close_and_reopen(shared_home, pty_pair):
    opened = shared_home.cli("exec:serial", pty_pair.near, "9600", "--wait", "0.3")
    tid = started_id(opened)
    assert f"{pty_pair.near} open at 9600 8N1" in opened.stderr
    for follow_up in (f"plugkit exec:status task_{tid}", f"plugkit exec:sleep task_{tid} 30 --until TEXT",
                      f"plugkit exec:type task_{tid} TEXT", f"plugkit exec:close task_{tid}"):
        assert follow_up in opened.stderr

    pty_pair.send(b"boot 1\nboot 2\nprompt> ")
    woke = shared_home.cli("exec:sleep", f"task_{tid}", "10", "--until", "prompt>")
    assert woke.returncode == 0 and woke.stdout == "boot 1\nboot 2\nprompt> ", woke.stderr

    for args, arrives in ((["AT+GMR"], b"AT+GMR\n"),  # default: lf
                          (["reset", "now", "--eol", "crlf"], b"reset now\r\n"),
                          (["ab", "--no-newline"], b"ab"),
                          (["cd", "--eol", "cr"], b"cd\r"),
                          (["--eol", "lf", "ef"], b"ef\n")):
        sent = shared_home.cli("exec:type", str(tid), *args)
        assert sent.returncode == 0 and f"sent {len(arrives)} bytes to task_{tid}" in sent.stdout, sent.stderr
        assert pty_pair.receive(arrives) == arrives

    closed = shared_home.cli("exec:close", f"task_{tid}")
    assert closed.returncode == 0 and f"task_{tid} completed: closed (serial" in closed.stdout

    # The port was freed: a second open of the same device works, and it returns as soon
    # as --until sees the text, well inside its --wait.
    device = threading.Thread(target=speak_once_open, args=(shared_home, pty_pair, b"ready\n"), daemon=True)
    device.start()
    began = time.monotonic()
    again = shared_home.cli("exec:serial", pty_pair.near, "--session", "s", "--json", "--until", "ready",
                     "--wait", "20")
    device.join()
    doc = json.loads(again.stdout)
    assert again.returncode == 0 and doc["matched"] is True and time.monotonic() - began < stretched(15)
    assert doc["running"] is True and doc["task"]["lang"] == "serial"
    assert [c["text"] for c in doc["output"] if c["stream"] == "stdout"] == ["ready\n"]
    assert f"plugkit exec:close task_{doc['task']['task_id']} --session s" in doc["next"]
    assert shared_home.cli("exec:close", str(doc["task"]["task_id"]), "--session", "s").returncode == 0


def speak_once_open(home, pair: Pair, data: bytes) -> None:
    """Play the device: say `data` once the runner holds the port (before, nobody listens)."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        tasks = rpc(home, "task.list", {"session_id": "s", "cwd": os.getcwd()})["tasks"] if home.discovery() else []
        if any(t["state"] == "running" for t in tasks):
            pair.send(data)
            return
        time.sleep(0.02)


def test_device_going_away_ends_the_task_device_lost_and_the_runner_serves_on(shared_home, pty_pair):
    tid = started_id(shared_home.cli("exec:serial", pty_pair.near, "--wait", "0.2"))
    pty_pair.proc.kill()  # the other end of the line disappears, like an unplugged adapter
    pty_pair.proc.wait()
    ended = shared_home.cli("exec:sleep", f"task_{tid}", "10")
    assert ended.returncode == 1 and f"task_{tid} failed: device_lost (serial" in ended.stderr, ended.stderr
    assert f"{pty_pair.near} was lost" in ended.stderr and "Traceback" not in ended.stderr
    assert shared_home.cli("exec:bash", "echo alive").stdout == "alive\n"


def test_hex_mode_dumps_bytes_and_types_hex_digits_with_the_eol_ignored(shared_home, pty_pair):
    opened = shared_home.cli("exec:serial", pty_pair.near, "--hex", "--wait", "0.2")
    tid = started_id(opened)
    assert f"plugkit exec:type task_{tid} '41 54 0d 0a'" in opened.stderr
    pty_pair.send(b"OK\r\n")
    assert shared_home.cli("exec:sleep", str(tid), "10", "--until", "0d 0a").stdout == "4f 4b 0d 0a "
    # The default lf (and crlf) are whitespace to the runner's hex reader: only the digits go out.
    assert shared_home.cli("exec:type", str(tid), "41 54 0d 0a").returncode == 0
    assert shared_home.cli("exec:type", str(tid), "5a", "--eol", "crlf").returncode == 0
    assert pty_pair.receive(b"Z") == b"AT\r\nZ"
    one_line_refusal(shared_home.cli("exec:type", str(tid), "hello"), 2, "hex mode")
    assert shared_home.cli("exec:close", str(tid)).returncode == 0


# --- refusals ----------------------------------------------------------------------------

def test_bad_words_are_usage_errors_before_any_runner_starts(home, pty_pair):
    for args, said in ((["exec:serial", pty_pair.near, "fast"], "BAUD must be a whole number"),
                       (["exec:serial", pty_pair.near, "--bytesize", "eight"], "--bytesize must be a whole number"),
                       (["exec:serial", pty_pair.near, "--stopbits", "one"], "--stopbits must be 1, 1.5 or 2"),
                       (["exec:serial", pty_pair.near, "115200", "extra"], "usage: plugkit exec:serial"),
                       (["exec:serial", "--nope", pty_pair.near], "unknown option --nope"),
                       (["exec:type", "1", "x", "--eol", "lfcr"], "--eol must be one of lf, crlf, cr, none"),
                       (["exec:type", "1", "x", "--eol", "crlf", "--no-newline"], "disagree"),
                       (["serial", "ls"], "unknown serial verb 'ls'")):
        result = home.cli(*args)
        assert result.returncode == 2 and said in result.stderr, (args, result.stderr)
        assert "Traceback" not in result.stderr
    assert home.runner_pids() == []


def test_refused_ports_and_settings_give_one_line_and_leave_nothing_open(shared_home, pty_pair):
    for args, code, said in (
        (["socket://127.0.0.1:9"], 2, "socket:// ports are refused"),
        (["rfc2217://127.0.0.1:9"], 2, "rfc2217:// ports are refused"),
        (["/etc/passwd"], 2, "not under /dev"),
        (["/dev/null"], 2, "not a serial line"),
        ([pty_pair.near, "10"], 2, "baud: Input should be greater than or equal to 50"),
        ([pty_pair.near, "--parity", "X"], 2, "parity"),
        ([pty_pair.near, "--stopbits", "3"], 2, "stopbits"),
        ([MISSING_DEVICE], 1, "no such device"),
    ):
        one_line_refusal(shared_home.cli("exec:serial", *args, "--wait", "0"), code, said)
    assert json.loads(shared_home.cli("exec:tasks", "--json").stdout)["tasks"] == []

    tid = started_id(shared_home.cli("exec:serial", pty_pair.near, "--wait", "0"))
    one_line_refusal(shared_home.cli("exec:serial", pty_pair.near, "--wait", "0"), 1, f"already open in task_{tid}")
    one_line_refusal(shared_home.cli("exec:serial", pty_pair.near, "--session", "other", "--wait", "0"), 1,
                     f"already open in task_{tid} of another session")
    assert shared_home.cli("exec:close", str(tid)).returncode == 0


# --- listing and help --------------------------------------------------------------------

def test_serial_list_as_a_table_and_as_json(home):
    table = home.cli("serial", "list")
    assert table.returncode == 0, table.stderr
    assert table.stdout.startswith(("no serial ports found", "DEVICE  ")), table.stdout
    doc = json.loads(home.cli("serial", "list", "--json").stdout)
    assert isinstance(doc["ports"], list)
    for port in doc["ports"]:
        assert port["device"].startswith("/dev/") and port["device"] in table.stdout


def test_help_documents_the_verbs_without_a_runner(home):
    serial_help = home.cli("exec:serial", "--help")
    assert serial_help.returncode == 0
    for word in ("PORT [BAUD]", "--parity", "--stopbits", "--hex", "--timeout", "exec:type", "exec:close"):
        assert word in serial_help.stdout
    type_help = home.cli("exec:type", "--help").stdout
    assert "--eol lf|crlf|cr|none" in type_help and "hex" in type_help
    overview = home.cli("help").stdout
    assert "exec:serial PORT [BAUD]" in overview and "serial list" in overview
    assert home.cli("serial", "--help").returncode == 0
    assert home.runner_pids() == []


def test_exec_serial_through_a_claude_code_hook_opens_the_port_in_the_hooks_session(shared_home, pty_pair, tmp_path):
    import json

    event = {"session_id": "hooked", "cwd": str(tmp_path), "hook_event_name": "PreToolUse",
             "tool_name": "Bash", "tool_input": {"command": f"exec:serial {pty_pair.near} 9600"}}
    result = shared_home.cli("hook", "PreToolUse", "--platform", "claude-code", input=json.dumps(event))
    assert result.returncode == 0, result.stderr
    answer = json.loads(result.stdout)["hookSpecificOutput"]
    assert answer["permissionDecision"] == "deny"  # delivered, never run in the shell
    tid = int(re.search(r"task_(\d+)", answer["permissionDecisionReason"]).group(1))
    listed = shared_home.cli("exec:tasks", "--json", "--session", "hooked", "--cwd", str(tmp_path))
    task = [t for t in json.loads(listed.stdout)["tasks"] if t["task_id"] == tid][0]
    assert task["lang"] == "serial" and task["state"] == "running"
    assert shared_home.cli("exec:close", str(tid), "--session", "hooked", "--cwd", str(tmp_path)).returncode == 0
