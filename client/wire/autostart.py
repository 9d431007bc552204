"""Start the runner on demand: start lock, re-check, spawn detached, wait for /health.

Only imported when no healthy runner answered, so its imports (subprocess, time) stay off
the hot path. The start lock is plugkit/locks.py's raw flock(2): filelock's import would cost
this cold path more than the rest of the client.
"""

import os
import subprocess
import sys
import time

from client.wire.rpc import Connection, RunnerUnavailable, connect_verified, read_discovery
from plugkit import locks, paths
from plugkit.vocab import HOME_TAG, IDENTITY_TAGS, SANDBOXED_TAG

START_TIMEOUT_S = float(os.environ.get("PLUGKIT_START_TIMEOUT", "20"))
SAY_AFTER_S = 1.0  # a start slower than this says so on a terminal's stderr, once


def _lock(path: str, deadline: float) -> int:
    try:
        return locks.take(path, deadline)
    except locks.Busy:
        raise RunnerUnavailable(
            f"timed out waiting for another client to start the runner ({path} is locked); "
            "check `plugkit runner status`") from None


def _tail(path: str, limit: int = 600) -> str:
    try:
        with open(path, "rb") as fh:
            fh.seek(0, os.SEEK_END)
            fh.seek(max(0, fh.tell() - limit))
            return fh.read().decode(errors="replace").strip()
    except OSError:
        return ""


def spawn_runner() -> subprocess.Popen:
    home = paths.ensure_home()
    # A runner started from inside a task must not carry that task's tags, or the
    # task's kill (and the boot reaper) would take the new runner down with it.
    env = {k: v for k, v in os.environ.items() if k not in IDENTITY_TAGS}
    env[HOME_TAG] = home
    out = os.open(paths.stdio_file(), os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        # A new session: the runner must outlive this client, its terminal and its
        # process group (a hook's Ctrl-C must not reach it).
        return subprocess.Popen(
            [sys.executable, "-m", "runner", "--detached"],
            stdin=subprocess.DEVNULL, stdout=out, stderr=out, env=env,
            start_new_session=True, close_fds=True, cwd=home,
        )
    finally:
        os.close(out)


# A runner that holds the instance lock but has no answering port file yet may be booting
# (started by hand); longer than this and it is stuck or its port file is garbage.
HOLDER_GRACE_S = 3.0


def _wait_for_holder(deadline: float) -> Connection | None:
    """Spawning beside a runner that holds the lock only fails ("already serves"): wait briefly
    for it to answer, else say who it is and how to recover."""
    from client.wire.instance import lock_holder

    holder = lock_holder()
    if holder is None:
        return None
    until = min(deadline, time.monotonic() + HOLDER_GRACE_S)
    if os.path.exists(paths.port_file()) and (read_discovery() or (0, 0))[1] != holder.pid:
        until = 0  # a port file that names someone else is damaged, not a boot in progress
    while time.monotonic() < until and not holder.stopped:
        conn = connect_verified()
        if conn is not None:
            return conn
        time.sleep(0.05)
        holder = lock_holder()
        if holder is None:
            return None
    state = "is stopped (SIGSTOP or Ctrl-Z)" if holder.stopped else "holds the lock but does not answer"
    raise RunnerUnavailable(f"the runner (pid {holder.pid}) {state} (its port or token file may be "
                            "damaged); `plugkit runner restart` recovers it")


def ensure_runner() -> Connection:
    """A verified connection to a runner of this PLUGKIT_HOME, starting one if needed."""
    conn = connect_verified()
    if conn is not None:
        return conn
    if os.environ.get(SANDBOXED_TAG):  # a runner started in here would be the worker's own, not ours
        raise RunnerUnavailable("the runner does not answer this worker's sandbox; `plugkit work status` "
                                "outside says why")
    try:
        paths.port()  # a malformed PLUGKIT_PORT names itself and exits 2, before any runner starts
    except ValueError as exc:
        from client.args import UsageError

        raise UsageError(str(exc)) from None
    deadline = time.monotonic() + START_TIMEOUT_S
    paths.ensure_home()
    fd = _lock(paths.start_lock(), deadline)
    try:
        conn = connect_verified()  # somebody else may have started it while we waited
        if conn is not None:
            return conn
        conn = _wait_for_holder(deadline)
        if conn is not None:
            return conn
        proc = spawn_runner()
        delay = 0.005
        # A person at a terminal is told why it pauses; an agent's answer stays the task's own output.
        said_at = time.monotonic() + SAY_AFTER_S if sys.stderr.isatty() else 0
        while time.monotonic() < deadline:
            conn = connect_verified()
            if conn is not None:
                return conn
            if said_at and time.monotonic() > said_at:  # a slow start is said once, never a silent pause
                print(f"plugkit: starting the runner (pid {proc.pid}) ...", file=sys.stderr, flush=True)
                said_at = 0
            if proc.poll() is not None:
                detail = _tail(paths.stdio_file()).splitlines()
                reason = detail[-1] if detail else f"exit code {proc.returncode}"
                raise RunnerUnavailable(f"the runner did not start: {reason}")
            time.sleep(delay)
            delay = min(delay * 1.5, 0.01)
        raise RunnerUnavailable(
            f"the runner did not answer within {START_TIMEOUT_S:g}s; see `plugkit runner logs`")
    finally:
        locks.release(fd)
