"""kill-port, session-cleanup, doctor, help, and what the shim's hot path imports."""

import json
import os
import shutil
import signal
import socket
import subprocess
import sys

import pytest

from client.wire.rpc import RpcFailure
from tests.support.procs import alive, wait_gone
from tests.support.runner_home import ROOT, free_port, rpc

pytestmark = pytest.mark.e2e

HEAVY = ("asyncio", "http.client", "urllib", "pydantic", "aiohttp", "psutil")

# Listens on a free port, starts a child (its tree), prints "port child_pid", then waits.
LISTENER = """
import socket, subprocess, sys, time
s = socket.socket()
s.bind(("127.0.0.1", 0))
s.listen()
child = subprocess.Popen([sys.executable, "-c", "import time; time.sleep(60)"])
print(s.getsockname()[1], child.pid, flush=True)
time.sleep(60)
"""


class Listener:
    def __init__(self, python: str = sys.executable, **popen) -> None:
        self.proc = subprocess.Popen([python, "-c", LISTENER], stdout=subprocess.PIPE, text=True, **popen)
        self.port, self.child = map(int, self.proc.stdout.readline().split())

    def gone(self, timeout: float = 5.0) -> bool:
        self.proc.wait(timeout=timeout)
        return wait_gone(self.child, timeout)

    def stop(self) -> None:
        for pid in (self.child, self.proc.pid):
            try:
                os.kill(pid, signal.SIGKILL)
            except ProcessLookupError:
                pass
        self.proc.wait(timeout=5)
        self.proc.stdout.close()


@pytest.fixture
def listener():
    found = Listener()
    yield found
    found.stop()


def modules_after(code: str, *flags: str, env: dict | None = None) -> set[str]:
    """Modules loaded after running `code` (less those it put in `startup`, if it did)."""
    out = subprocess.run([sys.executable, *flags, "-c", code + "\nimport sys, json\n"
                          "print(json.dumps(sorted(set(sys.modules) - globals().get('startup', set()))))"],
                         cwd=ROOT, env={**os.environ, "PYTHONPATH": str(ROOT), **(env or {})},
                         capture_output=True, text=True, timeout=60)
    assert out.returncode == 0, out.stderr
    return set(json.loads(out.stdout.splitlines()[-1]))


def heavy(modules: set[str]) -> list[str]:
    return sorted(m for m in modules if m in HEAVY or m.split(".")[0] in HEAVY)


# --- the hot path ------------------------------------------------------------------------------

def test_importing_the_shim_loads_no_heavy_module():
    # -S: no site-packages at all, so nothing (not even the editable-install finder,
    # which itself pulls in urllib) can hide a heavy import.
    shim = "import client.cli, client.verbs.exec, client.verbs.task, client.verbs.killport, client.verbs.doctor"
    assert heavy(modules_after(shim, "-S")) == []


def test_a_warm_exec_and_status_load_no_heavy_module_nor_argparse(home):
    assert home.cli("runner", "start").returncode == 0
    # Measured from interpreter start-up, so whatever site itself loaded does not count.
    code = ("import sys\nstartup = set(sys.modules)\nfrom client.cli import run\n"
            "assert run(['exec:bash', 'true']) == 0\nassert run(['exec:status', 'task_1']) == 0\n")
    loaded = modules_after(code, env=home.env)
    assert {"client.verbs.exec", "client.verbs.task"} <= loaded and heavy(loaded) == []
    assert not {"argparse", "subprocess", "plugkit.protocol", "plugkit.languages"} & loaded


# --- kill-port ---------------------------------------------------------------------------------

def test_kill_port_refuses_a_process_that_is_not_this_sessions_task_unless_forced(home, listener):
    assert home.cli("runner", "start").returncode == 0
    refused = home.cli("kill-port", str(listener.port))
    assert refused.returncode == 1 and "not one of this session's tasks" in refused.stderr
    assert f"plugkit kill-port {listener.port} --force" in refused.stderr
    assert listener.proc.poll() is None and alive(listener.child)  # nothing was signalled
    home.stop_all()
    local = home.cli("kill-port", str(listener.port))  # no runner: nothing running is a session's task
    assert local.returncode == 1 and "one of this session's tasks" in local.stderr and "--force" in local.stderr
    assert len(local.stderr.strip().splitlines()) == 1  # the holder's multi-line command is one line
    assert listener.proc.poll() is None
    assert home.runner_pids() == []


def test_kill_port_kills_this_sessions_task_and_refuses_another_sessions(shared_home, tmp_path):
    # One write of "port N": the task's python is unbuffered (-u); print('port', n) wrote them apart.
    code = ("import socket, time\ns = socket.socket(); s.bind(('127.0.0.1', 0)); s.listen()\n"
            "print(f'port {s.getsockname()[1]}', flush=True); time.sleep(60)")
    started = shared_home.cli("exec:python", "--wait", "0", "--session", "a", code)
    task = started.stderr.split("] ", 1)[1].split()[0]
    seen = shared_home.cli("exec:sleep", task, "60", "--until", "port ", "--session", "a")
    # Under load the task may print before the start returns: then the start showed the line
    # and --until, answering what is new, says it was already seen.
    port = int((started.stdout + seen.stdout).split("port ", 1)[1].split()[0])
    other = shared_home.cli("kill-port", str(port), "--session", "b")
    assert other.returncode == 1 and "not one of this session's tasks" in other.stderr, other.stderr
    mine = shared_home.cli("kill-port", str(port), "--session", "a")
    assert mine.returncode == 0 and f"port {port} is free" in mine.stdout, mine.stderr
    listed = json.loads(shared_home.cli("exec:tasks", "--session", "a", "--json").stdout)
    assert all(t["state"] != "running" for t in listed["tasks"]), listed


def test_kill_port_through_the_runner_kills_the_listener_and_its_child(shared_home, listener):
    assert shared_home.cli("runner", "start").returncode == 0
    result = shared_home.cli("kill-port", str(listener.port), "--force")
    assert result.returncode == 0, result.stderr
    assert f"killed pid {listener.proc.pid}" in result.stdout and "and 1 child process" in result.stdout
    assert f"port {listener.port} is free" in result.stdout
    assert listener.gone()
    assert listener.proc.returncode == -signal.SIGTERM


def test_kill_port_without_a_runner_works_locally_and_starts_none(home, listener):
    result = home.cli("kill-port", str(listener.port), "--json", "--force")
    doc = json.loads(result.stdout)
    assert doc["local"] is True and [k["pid"] for k in doc["killed"]] == [listener.proc.pid]
    assert doc["killed"][0]["processes"] == 2 and doc["survivors"] == []
    assert listener.gone() and home.runner_pids() == []


def test_kill_port_when_nothing_listens(shared_home):
    assert shared_home.cli("runner", "start").returncode == 0
    port = free_port()
    result = shared_home.cli("kill-port", str(port))
    assert result.returncode == 0 and result.stdout.strip() == f"nothing listens on port {port}; it is free"


@pytest.mark.parametrize("word", ["0", "65536", "http", "-1"])
def test_kill_port_rejects_what_is_not_a_port(home, word):
    result = home.cli("kill-port", "--", word)
    assert result.returncode == 2 and "not a TCP port" in result.stderr


def test_runner_refuses_to_kill_itself_when_asked_over_rpc(shared_home):
    assert shared_home.cli("runner", "start").returncode == 0
    with pytest.raises(RpcFailure) as refused:
        rpc(shared_home, "port.kill", {"port": shared_home.port})
    assert refused.value.code == -32002 and "the plugkit runner itself" in refused.value.message
    assert "kill-port" in refused.value.data["next"]
    assert len(shared_home.runner_pids()) == 1


def test_runner_refuses_a_tree_holding_the_caller_and_kills_nothing(shared_home, listener):
    assert shared_home.cli("runner", "start").returncode == 0
    with pytest.raises(RpcFailure) as refused:
        rpc(shared_home, "port.kill", {"port": listener.port, "caller_pid": listener.child})
    assert refused.value.code == -32002 and f"pid {listener.proc.pid}" in refused.value.message
    assert listener.proc.poll() is None and alive(listener.child)  # a zombie would not count


def test_kill_port_on_the_runners_own_port_is_done_locally(home):
    assert home.cli("runner", "start").returncode == 0
    pid = home.runner_pids()[0]
    result = home.cli("kill-port", str(home.port))
    assert result.returncode == 0, result.stderr
    assert f"killed pid {pid}" in result.stdout and "that was the plugkit runner" in result.stdout
    assert home.runner_pids() == [] and home.cli("runner", "status").returncode == 3


@pytest.mark.skipif(os.getuid() != 0 or not os.access("/usr/bin/python3", os.X_OK),
                    reason="needs root to start a process as another user")
def test_kill_port_refuses_another_users_process(home):
    other = Listener(python="/usr/bin/python3", user=65534, cwd="/")
    try:
        assert home.cli("runner", "start").returncode == 0
        remote = home.cli("kill-port", str(other.port))
        assert remote.returncode == 1 and "only kills your own processes" in remote.stderr
        home.stop_all()
        local = home.cli("kill-port", str(other.port), "--force")  # even forced: never another user's
        assert local.returncode == 1 and "only kills your own processes" in local.stderr
        assert other.proc.poll() is None
    finally:
        other.stop()


# --- session-cleanup ---------------------------------------------------------------------------

def test_session_cleanup_kills_and_forgets_only_this_sessions_tasks(home):
    for session in ("s", "s", "other"):
        assert home.cli("exec:bash", "--session", session, "--wait", "0", "sleep 30").returncode == 0
    result = home.cli("session-cleanup", "--session", "s")
    assert result.returncode == 0 and "killed task_1, task_2" in result.stdout
    assert home.cli("exec:tasks", "--session", "s").stdout.startswith("no tasks")
    assert "task_3" in home.cli("exec:tasks", "--session", "other").stdout
    assert json.loads(home.cli("session-cleanup", "--session", "other", "--json").stdout)["killed"] == [3]


def test_session_cleanup_without_a_runner_starts_none(home):
    result = home.cli("session-cleanup")
    assert result.returncode == 0 and "no runner is running" in result.stdout
    assert home.runner_pids() == []


# --- doctor ------------------------------------------------------------------------------------

def test_doctor_passes_on_a_fresh_home_and_names_each_check(home):
    result = home.cli("doctor")
    assert result.returncode == 0, result.stdout
    for name in ("bash", "python", "chromium", "socat", "serial", f"port {home.port}", "state dir"):
        assert name in result.stdout
    checks = {c["check"]: c for c in json.loads(home.cli("doctor", "--json").stdout)}
    assert checks["python"]["level"] == "ok" and checks["state dir"]["level"] == "ok"
    last = result.stdout.splitlines()[-1]  # one summary line, counting what the rows said
    counts = {lv: sum(1 for c in checks.values() if c["level"] == lv) for lv in ("ok", "warn")}
    assert last.startswith(f"doctor: {counts['ok']} ok") and "FAIL" not in last, last


def test_doctor_fails_on_a_foreign_port_holder_and_a_loose_state_dir(home):
    home.path.mkdir(mode=0o700)
    os.chmod(home.path, 0o755)
    with socket.socket() as squatter:
        squatter.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
        squatter.bind(("127.0.0.1", home.port))
        squatter.listen()
        result = home.cli("doctor")
    assert result.returncode == 1
    lines = [line for line in result.stdout.splitlines() if line.startswith("FAIL")]
    last = result.stdout.splitlines()[-1]
    assert last.startswith("doctor: ") and f"{len(lines)} FAIL: plugkit will not work" in last, last
    assert any(f"plugkit kill-port {home.port}" in line for line in lines), result.stdout
    assert any(f"chmod 700 {home.path}" in line for line in lines), result.stdout


def test_doctor_reports_our_running_runner(shared_home):
    assert shared_home.cli("runner", "start").returncode == 0
    result = shared_home.cli("doctor", "--json")
    port = next(c for c in json.loads(result.stdout) if c["check"] == f"port {shared_home.port}")
    assert port["level"] == "ok" and "our runner" in port["detail"]


# --- help and usage ----------------------------------------------------------------------------

def test_help_lists_every_verb_and_each_verb_has_its_own(home):
    text = home.cli("help").stdout
    for verb in ("exec:<lang>", "exec:status", "exec:sleep", "exec:type", "exec:close", "exec:tasks",
                 "session-cleanup", "kill-port", "doctor", "runner"):
        assert verb in text
    assert "python" in text  # the language list comes from the table
    for verb in ("exec:bash", "exec", "exec:status", "exec:sleep", "exec:close", "exec:type",
                 "exec:tasks", "session-cleanup", "kill-port", "doctor"):
        shown = home.cli(verb, "--help")
        assert shown.returncode == 0 and shown.stdout.startswith("usage: plugkit"), verb
    assert home.runner_pids() == []


@pytest.mark.parametrize("argv", [["exec:"], ["nope"], ["exec:status"], ["exec:sleep", "1", "2", "3"]])
def test_usage_errors_exit_2_without_a_traceback(home, argv):
    result = home.cli(*argv)
    assert result.returncode == 2 and "Traceback" not in result.stderr and result.stderr.strip()


def test_console_script_runs_the_venv_interpreter_directly():
    script = os.path.join(os.path.dirname(sys.executable), "plugkit")
    if not os.path.exists(script):
        pytest.skip("no console script installed")
    with open(script) as fh:
        shebang = fh.readline()
    # A shell shim (pyenv, a wrapper script) would add ~100 ms to every call.
    assert shebang.startswith("#!") and "python" in shebang and shutil.which("sh") not in shebang


def test_doctor_reports_broken_language_plugins_and_chromium(home, tmp_path):
    lang_dir = tmp_path / ".plugkit" / "lang"
    lang_dir.mkdir(parents=True)
    (lang_dir / "broken.toml").write_text("run = [unclosed\n")
    result = home.cli("doctor", cwd=tmp_path)
    lines = result.stdout.splitlines()
    assert any(line.startswith("warn") and "broken.toml" in line for line in lines), result.stdout
    assert any(" chromium " in f" {line} " for line in lines)
    assert any(line.split()[:2] == ["ok", "bash"] for line in lines)


def test_exec_browser_help_needs_no_runner(home):
    result = home.cli("exec:browser", "--help")
    assert result.returncode == 0
    for command in ("goto URL", "screenshot [PATH]", "wait SELECTOR [MS]", "close"):
        assert command in result.stdout
    assert not (home.path / "port").exists()
