"""The supervisor's end of a remote attempt, as the runner's task for the item's worker: a thin
relay to the run's Ray gateway (gateway.py), which places the attempt on a node.

    python -m runner.node.driver SPEC.json

Why a relay and not Ray in this process: every attempt paid for Ray's import, its connection to
the cluster, the token check and fresh Ray worker processes on every node (4-5 s of a loaded
2-core machine per item); the gateway pays them once and keeps its node processes warm. This
process stays the attempt's task, so the task machinery the runner has (live output, `work logs
--follow`, the stall watchdog on output, the kill of the task's tree, the boot reaper) applies to
a remote attempt unchanged: when it ends for any reason its connection closes, and the gateway
cancels the attempt's Ray task, which ends the worker on its node (the node's runner, whose task
the worker is, kills its tree when the Ray worker process goes: runner/system/pidfd_watch.py).

Standard library only: this runs once per attempt, and importing pydantic and Ray cost more than
the rest of it. It hands the gateway the spec's path (the gateway reads it once and removes it),
copies what the gateway frames back (FRAME_OUT: output; FRAME_RC: the worker's exit code, or
NODE_LOST_RC, CLUSTER_RC, BAD_OBJECTS_RC) and exits with that code.
"""

import json
import os
import signal
import socket
import struct
import sys
import time

FRAME_OUT, FRAME_RC = b"o", b"x"
HEADER = struct.Struct(">cI")  # a frame: its kind, its length, then its bytes
NODE_LOST_RC, CLUSTER_RC = 75, 76  # as plugkit/protocol/node.py (not imported: pydantic)
CONNECT_WAIT_S = 60.0  # the gateway binds its socket before anything slow; a loaded machine is slow


def say(text: str) -> None:
    sys.stdout.buffer.write(f"[plugkit ray] {text}\n".encode())
    sys.stdout.flush()


def connect(path: str, wait_s: float = CONNECT_WAIT_S) -> socket.socket:
    """A connection to the gateway's socket, waiting while the gateway task starts. By a relative
    name from the socket's directory: a unix socket's path is at most 107 bytes, a home's is not."""
    folder, name = os.path.split(path)
    os.chdir(folder)  # nothing else here uses the cwd
    deadline, pause = time.monotonic() + wait_s, 0.01
    while True:
        sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        try:
            sock.connect(name)
            return sock
        except (FileNotFoundError, ConnectionRefusedError):
            sock.close()
            if time.monotonic() > deadline:
                raise
            time.sleep(pause)
            pause = min(pause * 2, 0.2)


def read_exact(sock: socket.socket, n: int) -> bytes:
    data = b""
    while len(data) < n:
        chunk = sock.recv(n - len(data))
        if not chunk:
            raise EOFError
        data += chunk
    return data


def relay(sock: socket.socket) -> int:
    """The gateway's frames to stdout until its exit code; NODE_LOST_RC when it went away first
    (its Ray job ended with it, and the attempt with that: the item is placed again)."""
    out = sys.stdout.buffer
    try:
        while True:
            kind, size = HEADER.unpack(read_exact(sock, HEADER.size))
            data = read_exact(sock, size)
            if kind == FRAME_OUT:
                out.write(data)
                out.flush()
            elif kind == FRAME_RC:
                return int(data)
    except (EOFError, OSError, ValueError, struct.error):
        say("node lost: the Ray gateway went away before the attempt ended")
        return NODE_LOST_RC


def main(argv: list[str]) -> int:
    spec_path = os.path.abspath(argv[0]) if argv else ""
    try:
        with open(spec_path) as fh:
            gateway = json.load(fh)["gateway"]
        assert isinstance(gateway, str) and os.path.isabs(gateway)
    except (OSError, ValueError, KeyError, TypeError, AssertionError) as exc:
        say(f"a malformed spec from the runner ({type(exc).__name__}: no gateway socket named)")
        _unlink(spec_path)  # it holds the worker's scoped environment
        return CLUSTER_RC

    def stop(signum, _frame):  # `work stop`, the stall watchdog: our socket closes, the gateway cancels
        os._exit(128 + signum)

    signal.signal(signal.SIGTERM, stop)
    signal.signal(signal.SIGINT, stop)
    try:
        sock = connect(gateway)
    except OSError as exc:
        say(f"the run's Ray gateway did not answer at {gateway} ({type(exc).__name__}); "
            "`plugkit work logs` of its task says why")
        _unlink(spec_path)
        return CLUSTER_RC
    sock.sendall(spec_path.encode() + b"\n")
    return relay(sock)


def _unlink(path: str) -> None:
    try:
        os.unlink(path)
    except OSError:
        pass


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
