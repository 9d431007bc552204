"""The managed Chromium as another local user would attack it, against the real daemon.

Issue 16: DevTools on a loopback port let any local user read the runner's files and take
over its token. Now: no listening socket another user can open anywhere in the browser's
process tree, no DevTools on any loopback port it holds, and Chromium dies with the runner.
Each attack is first shown to work against a Chromium started the old way (a control), so
a broken attack cannot pass for a closed door.
"""

import base64
import json
import os
import pwd
import signal
import socket
import subprocess
import tempfile
import time

import psutil
import pytest

from plugkit.chromium import find_chromium
from runner.system import kill as kill_mod
from runner.system.chromium import BROWSER_TAG
from tests.support.load import stretched
from tests.support.runner_home import Home, rpc

pytestmark = pytest.mark.e2e
NOBODY = pwd.getpwnam("nobody").pw_uid
_SO_ACCEPTCON = 0x10000  # /proc/net/unix Flags bit of a listening socket
HANGING = "await new Promise(resolve => setTimeout(resolve, 60000))"


def browser_tree(runner_id: str) -> list[psutil.Process]:
    return [p for p in kill_mod.find_tagged(runner_id, BROWSER_TAG) if _alive(p)]


def _alive(p: psutil.Process) -> bool:
    try:
        return p.status() != psutil.STATUS_ZOMBIE
    except psutil.Error:
        return False


def socket_inodes(pid: int) -> set[int]:
    found = set()
    for fd in os.listdir(f"/proc/{pid}/fd"):
        try:
            target = os.readlink(f"/proc/{pid}/fd/{fd}")
        except OSError:
            continue
        if target.startswith("socket:["):
            found.add(int(target[8:-1]))
    return found


def listening_unix() -> dict[int, str]:
    """inode -> path ('@name' for abstract, '' unnamed) of every listening UNIX socket."""
    found = {}
    with open("/proc/net/unix") as fh:
        next(fh)
        for line in fh:
            parts = line.split()
            if int(parts[3], 16) & _SO_ACCEPTCON:
                found[int(parts[6])] = parts[7] if len(parts) > 7 else ""
    return found


def doors(procs: list[psutil.Process]) -> tuple[list, list, set[int]]:
    """(listening TCP, listening UNIX (pid, path), loopback TCP ports held) over the tree."""
    tcp, unix, ports = [], [], set()
    listening = listening_unix()
    for p in procs:
        try:
            for c in p.net_connections(kind="inet"):
                if c.status == psutil.CONN_LISTEN:
                    tcp.append((p.pid, c.laddr))
                if c.laddr and c.laddr.ip in ("127.0.0.1", "::1"):
                    ports.add(c.laddr.port)
            unix += [(p.pid, listening[i]) for i in socket_inodes(p.pid) if i in listening]
        except (psutil.Error, OSError):
            continue
    return tcp, unix, ports


def connect_as_nobody(path: str) -> str:
    """Connect to a UNIX socket as another user: 'connected' or the error."""
    code = ("import socket, sys\ns = socket.socket(socket.AF_UNIX)\n"
            "try:\n    s.connect(sys.argv[1]); print('connected')\nexcept OSError as e:\n    print(e.strerror)")
    run = subprocess.run(["/usr/bin/python3", "-I", "-c", code, path], user=NOBODY, group=NOBODY,
                         capture_output=True, text=True, timeout=30, cwd="/")
    return run.stdout.strip() or run.stderr.strip()


def cdp_over_websocket(port: int) -> str | None:
    """The attack: find the DevTools endpoint on a port (no Origin header, no auth) and call
    Browser.getVersion over a raw websocket. Returns the product, or None when it fails."""
    try:
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(b"GET /json/version HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n")
            raw = b""
            while b"}" not in raw.rpartition(b"\r\n\r\n")[2] and (chunk := s.recv(65536)):
                raw += chunk
        endpoint = json.loads(raw.split(b"\r\n\r\n", 1)[1])["webSocketDebuggerUrl"]
        path = "/devtools/" + endpoint.split("/devtools/", 1)[1]
        key = base64.b64encode(os.urandom(16)).decode()
        with socket.create_connection(("127.0.0.1", port), timeout=2) as s:
            s.sendall(f"GET {path} HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\n"
                      f"Connection: Upgrade\r\nSec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n\r\n".encode())
            head = b""
            while b"\r\n\r\n" not in head:
                head += s.recv(1)
            if b" 101 " not in head.split(b"\r\n", 1)[0]:
                return None
            payload = json.dumps({"id": 1, "method": "Browser.getVersion"}).encode()
            mask = os.urandom(4)
            s.sendall(bytes([0x81, 0x80 | len(payload)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))
            frame = b""
            while b"product" not in frame and len(frame) < 65536:
                chunk = s.recv(65536)
                if not chunk:
                    break
                frame += chunk
            start = frame.find(b"{")
            return json.loads(frame[start:])["result"]["product"] if start >= 0 else None
    except (OSError, ValueError, KeyError, IndexError):
        return None


@pytest.fixture
def old_style_chromium(tmp_path):
    """The control: Chromium with DevTools on a loopback port, as plugkit started it before."""
    profile = tempfile.mkdtemp(prefix="control-", dir=tmp_path)
    proc = subprocess.Popen([find_chromium(), "--headless", "--no-sandbox", "--disable-gpu", "--no-first-run",
                             "--remote-debugging-address=127.0.0.1", "--remote-debugging-port=0",
                             f"--user-data-dir={profile}"], stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL,
                            stderr=subprocess.PIPE, start_new_session=True)
    try:
        for line in proc.stderr:
            if b"DevTools listening on ws://127.0.0.1:" in line:
                yield proc, int(line.split(b"127.0.0.1:")[1].split(b"/")[0])
                break
        else:
            raise AssertionError("the control Chromium did not open its port")
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        proc.stderr.close()


@pytest.fixture
def runner(home: Home, tmp_path):
    proc = home.start_runner()
    work = tmp_path / "work"
    work.mkdir()
    try:
        yield home, proc, str(work), rpc(home, "debug.snapshot")["snapshot"]["runner"]["runner_id"]
    finally:
        if proc.poll() is None:
            proc.terminate()
        proc.wait(timeout=30)
        proc.stdout.close()
        proc.stderr.close()


def start_hanging_task(home: Home, work: str, site: str = "about:blank") -> int:
    first = rpc(home, "task.exec", {"session_id": "s", "cwd": work, "lang": "browser", "wait_ms": 60_000,
                                    "code": f"goto {site}\nreturn 1"}, timeout=90)
    assert first["task"]["state"] == "completed", first
    hung = rpc(home, "task.exec", {"session_id": "s", "cwd": work, "lang": "browser", "wait_ms": 0,
                                   "code": HANGING})
    return hung["task"]["task_id"]


def test_the_attacks_work_against_a_chromium_with_a_debugging_port(old_style_chromium):
    proc, port = old_style_chromium
    assert cdp_over_websocket(port).startswith("Chrome/")
    tree = [psutil.Process(proc.pid)] + psutil.Process(proc.pid).children(recursive=True)
    tcp, _, ports = doors(tree)
    assert any(addr.port == port for _, addr in tcp) and port in ports


def test_a_connect_as_another_user_reaches_a_socket_that_lets_it(tmp_path):
    """The control for the UNIX socket attack: an open socket is reached, a private one is not."""
    shared = tempfile.mkdtemp(prefix="shared-")
    try:
        os.chmod(shared, 0o755)
        for mode, expected in ((0o777, "connected"), (0o700, "Permission denied")):
            path = os.path.join(shared, f"s{mode:o}")
            with socket.socket(socket.AF_UNIX) as srv:
                srv.bind(path)
                os.chmod(path, mode)
                srv.listen()
                assert connect_as_nobody(path) == expected
    finally:
        subprocess.run(["rm", "-rf", shared], check=True)


def test_a_running_browser_task_leaves_no_door_in_the_browser_tree(runner):
    home, _, work, runner_id = runner
    task_id = start_hanging_task(home, work)
    tree = browser_tree(runner_id)
    assert len(tree) >= 3, tree  # the browser, its zygotes, a renderer: the whole tree is checked
    tcp, unix, ports = doors(tree)
    assert tcp == []  # no DevTools port, no other listening TCP socket
    assert [path for _, path in unix if not path.startswith("/")] == []  # abstract sockets have no permissions
    for pid, path in unix:
        # Chromium's process singleton (SingletonSocket) lives in a 0700 directory of the runner's user.
        assert connect_as_nobody(path) == "Permission denied", (pid, path)
    assert all(cdp_over_websocket(port) is None for port in ports), ports
    argv = {" ".join(p.cmdline()) for p in tree}
    assert not any("--remote-debugging-port" in a for a in argv)
    assert any("--remote-debugging-pipe" in a for a in argv)
    assert any("--no-sandbox" in a for a in argv) is (os.geteuid() == 0)  # as root only (see test_browser_sandbox)
    status = rpc(home, "task.status", {"session_id": "s", "cwd": work, "task_id": task_id})
    assert status["state"] == "running"  # the doors were counted while the task ran


def test_kill_9_of_the_runner_takes_the_browser_tree_with_it(runner):
    home, proc, work, runner_id = runner
    start_hanging_task(home, work)
    tree = browser_tree(runner_id)
    assert tree
    proc.kill()
    proc.wait()
    deadline = time.monotonic() + stretched(2.0)  # the bound: gone within 2 s, not at the next boot
    while browser_tree(runner_id) and time.monotonic() < deadline:
        time.sleep(0.05)
    left = browser_tree(runner_id)
    assert left == [], [" ".join(p.cmdline())[:100] for p in left]


def test_runner_status_names_the_browser_sandbox_and_why(runner):
    home, _, work, _ = runner
    start_hanging_task(home, work)
    status = home.cli("runner", "status")
    assert status.returncode == 0, status.stderr
    line = next(ln for ln in status.stdout.splitlines() if ln.strip().startswith("browser:"))
    assert "browser: running (pid " in line
    if os.geteuid() == 0:
        assert "sandbox off: running as root" in line
    else:
        assert "sandbox on" in line
    as_json = json.loads(home.cli("runner", "status", "--json").stdout)
    assert as_json["browser"]["sandbox"]["on"] is (os.geteuid() != 0)
    assert as_json["browser"]["pid"] == rpc(home, "debug.snapshot")["snapshot"]["executors"]["browser"]["pid"]
