"""Boot after an in-place restart: take what the previous image handed over, or refuse it and start clean.

The environment names the fds and runner id (runner/system/handover.py); the file the tasks.
A refused file is logged with why, and the previous image's tasks, which this image cannot
serve, are ended by their tags and cgroup; the runner then starts as after a stop. A file found
at a start that was not a handover is stale: removed and logged.
"""

from __future__ import annotations

import os
import socket
from dataclasses import dataclass
from typing import Optional

from runner.system import cgroups, handover as handover_file, logs
from runner.system import kill as kill_mod
from runner.system.handover import Handover, Inherited, Refused


@dataclass(frozen=True)
class Taken:
    runner_id: Optional[str] = None  # the previous image's, kept: its tasks are tagged with it
    sock: Optional[socket.socket] = None
    handover: Optional[Handover] = None


def inherit(home: str, port: int, inherited: Optional[Inherited]) -> Taken:
    log = logs.get("plugkit.server")
    if inherited is None:
        if os.path.lexists(handover_file.path(home)):
            try:
                handover_file.read(home, None, port)
            except Refused as exc:
                log.warning("handover_file_ignored", why=str(exc))
        return Taken()
    sock = None
    try:
        sock = handover_file.listening_socket(inherited.listen_fd, port)
    except Refused as exc:
        log.warning("handover_socket_refused", why=str(exc))
        _close(inherited.listen_fd)
    try:
        handover = handover_file.read(home, inherited.nonce, port)
    except Refused as exc:
        log.error("handover_refused", why=str(exc), previous_runner_id=inherited.runner_id)
        _end_previous(home, inherited.runner_id)
        return Taken(sock=sock)
    log.info("handover_taken", tasks=[t.id for t in handover.tasks], cut=handover.cut)
    return Taken(runner_id=inherited.runner_id, sock=sock, handover=handover)


def _end_previous(home: str, runner_id: str) -> None:
    """The previous image's tasks: still our children, tagged with its id, in its cgroups."""
    kill_mod.kill_runner_tasks(runner_id, grace_s=0.2)
    cgroups.reap_dead_runners(home, "", lambda name: name != runner_id)


def _close(fd: int) -> None:
    try:
        os.close(fd)
    except OSError:
        pass
