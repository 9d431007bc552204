"""The runner's one Ray driver per cluster: a long-lived process that places every remote attempt
(placing.py), so Ray's import, its connection, the cluster's token check and each node's proof
are paid once, not per attempt, and the nodes keep this Ray job's worker processes warm.

    python -m runner.node.gateway CLUSTER SOCKET RUNNER_PID

The runner starts it as a task of its own (runner/core/work/placement/ray_gateway.py), outside
every attempt's task (an attempt's cgroup dies with its attempt). Each attempt's task
(driver.py) connects to SOCKET (in the runner's 0700 placement directory), names its spec and
reads frames back; when that connection closes before the attempt's end (`work stop`, the stall
watchdog, the runner's kill), the attempt's Ray task is cancelled with force.

Its life: it ends when the runner does (a pidfd on RUNNER_PID: no polling), when its cluster
connection ends (Ray ends a driver whose GCS went away), or soon after it failed to reach the
cluster or the cluster refused (its attempts are told why; the next attempt starts another
gateway, which checks again). It does not end when idle: it is what keeps the nodes warm. Ray's ownership does the rest: when this
process ends, Ray kills its job's worker processes on the nodes, and each node's runner the
worker task it ran for one (it watches that process through a pidfd). Why once per gateway is enough for the token check (today it was per
attempt): a GCS restarted open is a new cluster (a new cluster id) that this connection does not
follow; its Ray core worker ends, and the next gateway checks the new one.
"""

import os
import select
import socket
import sys
import threading

from plugkit.protocol import node as msg
from plugkit.work.cluster import GATEWAY_CHECKED
from plugkit.protocol.node import CLUSTER_RC
from runner.node import auth, choice, placing, warm
from runner.node.driver import FRAME_OUT, FRAME_RC, HEADER

BROKEN_LINGER_S = 2.0  # a broken gateway answers the attempts already sent to it, then ends


class Gateway:
    def __init__(self, cluster: str) -> None:
        self.cluster = cluster
        self.ready = threading.Event()
        self.broken: str | None = None  # why no attempt can be placed through this gateway
        self.nodes = choice.Nodes()
        self.lock = threading.Lock()
        self.live = 0

    def connect(self) -> None:
        """The token check, then Ray's connection: `broken` says why not."""
        try:
            # The check (a process of its own) and Ray's import at once: a second or two each on a
            # loaded machine. Nothing reaches the cluster with the token before the check said yes.
            said: dict[str, str | None] = {}
            check = threading.Thread(target=lambda: said.update(why=auth.token_refusal(self.cluster, os.environ)))
            check.start()
            auth.keep_loopback(self.cluster)  # before Ray's import, which reads it
            import ray  # only the gateway ever loads Ray on the supervisor's machine

            check.join()
            why = said.get("why", f"the token check of the Ray cluster at {self.cluster} failed")
            if why is None:  # the runner reads it: a run on this cluster needs no check while we live
                print(GATEWAY_CHECKED, flush=True)
            if why is None:
                try:
                    ray.init(address=self.cluster, logging_level="ERROR", log_to_driver=False)
                except Exception as exc:  # noqa: BLE001 - any way of failing to reach it is the same answer
                    why = f"cannot reach the Ray cluster at {self.cluster}: {exc}"
            self.broken = why
            if why is None:  # the nodes proven and warmed now, before the first attempt needs them
                warm.start(self.nodes)
        except Exception as exc:  # noqa: BLE001 - no attempt goes through a gateway that did not start
            self.broken = f"the Ray gateway could not start: {type(exc).__name__}: {str(exc)[:300]}"
        finally:
            self.ready.set()

    def serve(self, conn: socket.socket) -> None:
        """One attempt's connection: its spec's path in, its frames out."""
        send_lock = threading.Lock()

        def send(kind: bytes, data: bytes) -> None:
            with send_lock:
                try:
                    conn.sendall(HEADER.pack(kind, len(data)) + data)
                except OSError:
                    pass  # its driver is gone: the cancel below ends the attempt

        def say(data: bytes) -> None:
            send(FRAME_OUT, data)

        answered = []

        def answer(rc: int) -> None:
            if not answered:
                answered.append(rc)
                send(FRAME_RC, str(rc).encode())

        with self.lock:
            self.live += 1
        try:
            answer(self._attempt(conn, say, answer))
        finally:
            with self.lock:
                self.live -= 1
            conn.close()

    def _attempt(self, conn: socket.socket, say: placing.Say, answer) -> int:
        line = b""
        while not line.endswith(b"\n"):
            chunk = conn.recv(4096)
            if not chunk:
                return CLUSTER_RC
            line += chunk
        try:
            spec = placing.read_spec(line.decode().strip())
        except (OSError, UnicodeDecodeError, msg.Malformed) as exc:
            say(f"[plugkit ray] {exc}\n".encode())
            return CLUSTER_RC
        self.ready.wait()
        if self.broken:
            say(f"[plugkit ray] {self.broken}\n".encode())
            return CLUSTER_RC
        cancel = placing.Cancel()
        threading.Thread(target=_watch, args=(conn, cancel), daemon=True).start()
        return placing.place(spec, self.nodes, say, cancel, answer)

    def done(self) -> bool:
        """Broken, and every attempt sent to it told why."""
        with self.lock:
            return self.ready.is_set() and bool(self.broken) and self.live == 0


def _watch(conn: socket.socket, cancel: placing.Cancel) -> None:
    """Until the driver's side of the connection closes (it sends nothing after its spec)."""
    try:
        while conn.recv(4096):
            pass
    except OSError:
        pass
    cancel.driver_gone()


def _watch_runner(pid: int) -> None:
    """Ends this process when the runner does (killed -9 too): its attempts' tasks went with it."""
    try:
        fd = os.pidfd_open(pid)
    except OSError:
        os._exit(0)
    select.select([fd], [], [])
    os._exit(0)


def main(argv: list[str]) -> int:
    cluster, path, runner_pid = argv[0], argv[1], int(argv[2])
    threading.Thread(target=_watch_runner, args=(runner_pid,), daemon=True).start()
    folder, name = os.path.split(path)
    os.chdir(folder)  # bound by a relative name: a unix socket's path is at most 107 bytes
    try:
        os.unlink(name)  # an earlier gateway's, which ended without removing it
    except FileNotFoundError:
        pass
    server = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
    server.bind(name)  # in the runner's 0700 directory: only its user reaches it
    server.listen(64)
    gateway = Gateway(cluster)
    threading.Thread(target=gateway.connect, daemon=True).start()
    server.settimeout(BROKEN_LINGER_S)
    while True:
        try:
            conn, _ = server.accept()
        except socket.timeout:
            if gateway.done():
                break
            continue
        conn.settimeout(None)
        threading.Thread(target=gateway.serve, args=(conn,), daemon=True).start()
    print(f"plugkit ray gateway: {gateway.broken}; ending", flush=True)
    try:
        os.unlink(name)
    except OSError:
        pass
    os._exit(0)  # not Ray's own shutdown, which waits: the raylet ends this job's workers anyway


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
