"""The client's JSON-RPC calls to its runner (plugkit.wire's connection), plus runner discovery:
the port file, the token, /health before the token is ever sent, a restart in place waited out.

Hot path of every `plugkit` call: standard library only, and the C halves of it where the Python
halves import more than they give (plugkit/wire.py and plugkit/codec.py say which and why).
"""

import os

from client import ClientError  # at the package root, as client.args needs it too; callers still import it here
from plugkit import SERVICE, codec, paths
from plugkit.errors import LIMIT
from plugkit.wire import Connection
from plugkit.vocab import SANDBOXED_TAG


class RunnerUnavailable(ClientError):
    exit_code = 69  # EX_UNAVAILABLE


class RunnerSilent(RunnerUnavailable):
    """The runner took the call and sent no byte of its answer in time: there, but not answering
    (busy beside CPU hogs, flooded, wedged), not lost; the next call may be answered."""

    def __init__(self, method: str, timeout: float) -> None:
        self.method, self.timeout = method, timeout
        super().__init__(f"{self.said()}; check `plugkit runner status`")

    def said(self) -> str:
        return f"the runner did not answer within {self.timeout:g}s ({self.method}; wedged or overloaded)"


class RpcFailure(ClientError):
    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code, self.message, self.data = code, message, data


def read_discovery() -> tuple[int, int] | None:
    """(port, pid) from the port file, or None when there is none or it is unreadable."""
    try:
        with open(paths.port_file()) as fh:
            info = codec.loads(fh.read())
        return int(info["port"]), int(info["pid"])
    except (OSError, ValueError, KeyError, TypeError):
        return None


def read_token() -> str:
    path = paths.token_file()
    try:
        fd = os.open(path, os.O_RDONLY | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        raise RunnerUnavailable(f"cannot read the runner token ({exc.strerror}); try `plugkit runner restart`") from None
    try:
        st = os.fstat(fd)
        # Someone else's token, or one others can read, may be a trap or already leaked.
        if st.st_uid != os.getuid() or st.st_mode & 0o077:
            raise ClientError(
                f"refusing token file {path}: it must be owned by you with mode 0600 "
                f"(it is uid {st.st_uid}, mode {oct(st.st_mode & 0o777)}); "
                "remove it and run `plugkit runner restart`")
        return os.read(fd, 4096).decode().strip()
    finally:
        os.close(fd)


def _pid_is_ours(pid: int) -> bool:
    try:
        return os.stat(f"/proc/{pid}").st_uid == os.getuid()
    except FileNotFoundError:
        return False
    except OSError:
        try:
            os.kill(pid, 0)
            return True
        except OSError:
            return False


# A live runner answers /health in milliseconds; one that does not within this is stopped or
# wedged, and waiting longer only hides that (clients used to hang 5-20 s, issue 17.6).
HEALTH_TIMEOUT_S = 1.5
RECOVER = "`plugkit runner restart` recovers it"


def _state(pid: int) -> str:
    try:
        with open(f"/proc/{pid}/stat", "rb") as fh:
            data = fh.read()
        return data[data.rfind(b")") + 2:][:1].decode()
    except OSError:
        return ""


def _holds_lock(pid: int) -> bool:
    """The pid is our runner (not a stopped stranger that inherited a stale port file's pid)."""
    from client.wire.instance import lock_holder

    holder = lock_holder()
    return holder is not None and holder.pid == pid


def connect_verified() -> Connection | None:
    """A connection to our live runner, or None when there is none. The token is never sent
    before /health on the same connection confirms a plugkit runner whose pid matches the
    port file. A runner that is there but cannot answer (stopped, wedged) is RunnerUnavailable
    at once, naming the command that recovers it."""
    found = read_discovery()
    if found is None:
        return None
    port, pid = found
    # In a worker's sandbox the runner's pid is in another PID namespace: /health alone vouches.
    outside = bool(os.environ.get(SANDBOXED_TAG))
    if not outside and not _pid_is_ours(pid):
        return None
    state = "" if outside else _state(pid)
    if state in ("Z", "X"):  # a runner killed -9 whose parent has not reaped it yet: gone
        return None
    if state in ("T", "t") and _holds_lock(pid):
        raise RunnerUnavailable(f"the runner (pid {pid}) is stopped (SIGSTOP or Ctrl-Z) and cannot "
                                f"answer; {RECOVER}")
    try:
        conn = Connection(port, timeout=HEALTH_TIMEOUT_S)
    except TimeoutError:  # socket.timeout, by its Python 3.10+ name
        raise RunnerUnavailable(f"the runner (pid {pid}) does not accept connections on port {port}; "
                                f"{RECOVER}") from None
    except OSError:
        return None
    try:
        status, body = conn.request("GET", "/health")
        info = codec.loads(body) if status == 200 else {}
        if info.get("service") == SERVICE and info.get("pid") == pid:
            conn.sock.settimeout(5.0)
            return conn
    except TimeoutError:  # socket.timeout, by its Python 3.10+ name
        conn.close()
        raise RunnerUnavailable(f"the runner (pid {pid}) did not answer within {HEALTH_TIMEOUT_S:g}s "
                                f"(wedged or overloaded); {RECOVER}") from None
    except (OSError, ValueError, AttributeError):
        pass
    conn.close()
    return None


RESTART_WAIT_S = 60.0  # how long a call refused by a runner restarting in place is asked again
# What a client may ask again when the connection closes under it (see Client._call): reads.
ASKED_AGAIN = frozenset({"task.wait", "task.status", "task.output", "task.list", "task.last", "runner.info",
                         "debug.snapshot"})


class Client:
    """JSON-RPC calls over one verified connection."""

    def __init__(self, conn: Connection, token: str | None = None) -> None:
        self.conn = conn
        self.token = token if token is not None else read_token()
        self._next_id = 0

    def call(self, method: str, params: dict | None = None, timeout: float = 30.0) -> dict:
        deadline = None
        while True:
            try:
                return self._call(method, params, timeout)
            except RpcFailure as exc:
                # A runner restarting in place refuses new work (an exec) between its answer and
                # its exec, saying so: asked again once the new image serves, on the same port.
                if not (isinstance(exc.data, dict) and exc.data.get("restarting")):
                    raise
                import time  # this rare path only: the hot one does without

                deadline = deadline or time.monotonic() + RESTART_WAIT_S
                if time.monotonic() > deadline:
                    raise
                time.sleep(0.05)
                self.conn.close()
                self.conn = Connection(self.conn.port, timeout=timeout)

    def _call(self, method: str, params: dict | None, timeout: float) -> dict:
        self._next_id += 1
        try:
            try:
                status, payload = self.conn.rpc(self.token, self._next_id, method, params or {}, timeout)
            except ConnectionError:
                # A runner restarting in place answers the waits it had begun, then its exec closes
                # every connection, a request that came since unanswered. A read is asked again,
                # of the new image, on the same port (its backlog holds the connection until it
                # serves); anything else is not: it may have been taken up.
                if method not in ASKED_AGAIN:
                    raise
                self.conn.close()
                self.conn = Connection(self.conn.port, timeout=timeout)
                status, payload = self.conn.rpc(self.token, self._next_id, method, params or {}, timeout)
        except TimeoutError:  # no byte of the answer within the timeout: there, but not answering
            raise RunnerSilent(method, timeout) from None
        except (OSError, ValueError) as exc:
            raise RunnerUnavailable(
                f"lost the runner during {method} ({exc.__class__.__name__}); "
                "check `plugkit runner status`") from None
        if status == 413:  # the runner is fine; this request is too big for it: a restart changes nothing
            size = len(codec.dumps({"params": params or {}}))
            raise RpcFailure(LIMIT, f"{method}'s request ({size >> 10} KiB as JSON) is over the runner's body limit "
                                    "(PLUGKIT_MAX_BODY_BYTES, 1 MiB by default): pass large code as a file it reads, "
                                    "large input on stdin")
        if status != 200:
            raise RunnerUnavailable(f"runner refused {method} (HTTP {status}); try `plugkit runner restart`")
        reply = codec.loads(payload)
        if "error" in reply:
            err = reply["error"]
            raise RpcFailure(err.get("code", 0), err.get("message", "error"), err.get("data"))
        return reply["result"]

    def close(self) -> None:
        self.conn.close()
