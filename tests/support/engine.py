"""A real container engine for the work_docker tests, and an image that needs no registry.

The engine: the one DOCKER_HOST names, else a private dockerd this module starts (as root, where
Debian's docker.io is installed: scripts/setup installs it) with its own data and exec roots, vfs
storage and no iptables or bridge, stopped when the tests using it end. The image: FROM scratch
plus a static busybox (Debian's busybox-static), built through the engine itself.
"""

import json
import os
import shutil
import signal
import socket
import subprocess
import tempfile
import time
from contextlib import contextmanager
from typing import Iterator, Optional

import pytest

IMAGE = "plugkit-test/busybox:1"
BUSYBOX = ("/bin/busybox", "/usr/bin/busybox")


def _answers(sock: str) -> bool:
    try:
        with socket.socket(socket.AF_UNIX) as s:
            s.settimeout(2)
            s.connect(sock)
            s.sendall(b"GET /_ping HTTP/1.1\r\nHost: engine\r\nConnection: close\r\n\r\n")
            return s.recv(64).startswith(b"HTTP/1.1 200")
    except OSError:
        return False


def why_not() -> Optional[str]:
    """None when an engine can be had here, else why not (the skip's reason)."""
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://") and _answers(host[len("unix://"):]):
        return None
    if shutil.which("docker") is None:
        return "no docker CLI (apt-get install docker.io, or scripts/setup)"
    if shutil.which("dockerd") is None or os.geteuid() != 0:
        return "no container engine: DOCKER_HOST unset and no dockerd to start as root (apt-get install docker.io)"
    if _busybox() is None:
        return "no static busybox for the test image (apt-get install busybox-static)"
    return None


def _busybox() -> Optional[str]:
    """A busybox that runs FROM scratch: static, no program interpreter named in its header."""
    for path in BUSYBOX:
        try:
            with open(path, "rb") as fh:
                if b"ld-linux" not in fh.read(4096):
                    return path
        except OSError:
            continue
    return None


def docker(sock: str, *args: str, ok: bool = True, timeout: float = 60) -> subprocess.CompletedProcess:
    done = subprocess.run(["docker", *args], capture_output=True, text=True, timeout=timeout,
                          env={**os.environ, "DOCKER_HOST": f"unix://{sock}"})
    if ok:
        assert done.returncode == 0, (args, done.stdout, done.stderr)
    return done


def inspect(sock: str, kind: str, name: str) -> Optional[dict]:
    done = docker(sock, kind, "inspect", name, ok=False)
    return json.loads(done.stdout)[0] if done.returncode == 0 else None


def _build_image(sock: str) -> None:
    if docker(sock, "image", "inspect", IMAGE, ok=False).returncode == 0:
        return
    ctx = tempfile.mkdtemp(prefix="plugkit-image-")
    try:
        shutil.copy(_busybox() or BUSYBOX[0], os.path.join(ctx, "busybox"))
        with open(os.path.join(ctx, "Dockerfile"), "w") as fh:
            fh.write('FROM scratch\nCOPY busybox /bin/busybox\nRUN ["/bin/busybox", "--install", "-s", "/bin"]\n'
                     'CMD ["/bin/sh"]\n')
        subprocess.run(["docker", "build", "-q", "-t", IMAGE, ctx], check=True, capture_output=True, timeout=120,
                       env={**os.environ, "DOCKER_HOST": f"unix://{sock}", "DOCKER_BUILDKIT": "0"})
    finally:
        shutil.rmtree(ctx, True)


@contextmanager
def engine() -> Iterator[str]:
    """The engine's socket path, with IMAGE in it; a dockerd started here is stopped after."""
    host = os.environ.get("DOCKER_HOST", "")
    if host.startswith("unix://") and _answers(host[len("unix://"):]):
        _build_image(host[len("unix://"):])
        yield host[len("unix://"):]
        return
    root = tempfile.mkdtemp(prefix="pk-dk-", dir="/run" if os.access("/run", os.W_OK) else None)
    sock = os.path.join(root, "docker.sock")
    log = open(os.path.join(root, "dockerd.log"), "wb")
    proc = subprocess.Popen(
        ["dockerd", "--data-root", os.path.join(root, "data"), "--exec-root", os.path.join(root, "x"),
         "--pidfile", os.path.join(root, "docker.pid"), "-H", f"unix://{sock}", "--storage-driver=vfs",
         "--iptables=false", "--ip6tables=false", "--bridge=none", "--ip-forward=false", "--ip-masq=false",
         "--userland-proxy=false", "--containerd-namespace", os.path.basename(root)],
        stdout=log, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL, start_new_session=True)
    try:
        deadline = time.monotonic() + 60
        while not _answers(sock):
            if proc.poll() is not None:  # a host where dockerd cannot run (no privilege for namespaces, say)
                last = (open(log.name, errors="replace").read().strip().splitlines() or ["no output"])[-1]
                pytest.skip(f"dockerd could not start here: {last[-300:]}")
            assert time.monotonic() < deadline, open(log.name).read()[-2000:]
            time.sleep(0.1)
        _build_image(sock)
        yield sock
    finally:
        for cid in docker(sock, "ps", "-aq", ok=False).stdout.split():
            docker(sock, "rm", "-f", cid, ok=False)
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(30)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        log.close()
        subprocess.run(["umount", "-R", os.path.join(root, "x")], capture_output=True)
        shutil.rmtree(root, True)
