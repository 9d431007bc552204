"""Worker capabilities: bearer tokens the runner mints for one sandboxed `plugkit work` worker.

A sandboxed worker never sees the runner's token (the file is not in its sandbox). Its hooks
and `exec:` calls present a capability instead: minted when its attempt starts, bound into
its sandbox where the token file would be (so plugkit's own client needs no change), and
revoked when the attempt ends. The runner keeps only a SHA-256 of each one, in memory: a
restart revokes them all (the workers die with the runner anyway). What a capability may
call is runner/rpc/scope.py's table. Standard library only.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from dataclasses import dataclass
from typing import Optional

PREFIX = "pkw_"  # says "a worker's capability" in a log or a leaked paste, never the runner's token


@dataclass(frozen=True)
class Capability:
    """Who holds it: one worker attempt."""
    run: str
    item: str
    session_id: str
    worktree: str  # realpath: every call it makes must name a cwd inside it
    network: str = "host"  # the worker's (plugkit.vocab.WORK_NETWORKS): its exec: tasks get no more
    # Its attempt's work_docker proxy socket (runner/system/docker_proxy.py), or None: shown to its
    # exec: tasks as it is to the worker (a task of any other caller never gets it).
    docker: Optional[str] = None


def _digest(token: str) -> bytes:
    return hashlib.sha256(token.encode()).digest()


class Capabilities:
    """The live capabilities, by digest. Owned by the composition root; the worker executor
    mints and revokes, the HTTP guard looks up."""

    def __init__(self) -> None:
        self._held: dict[bytes, Capability] = {}

    def mint(self, cap: Capability) -> str:
        token = PREFIX + secrets.token_urlsafe(32)
        self._held[_digest(token)] = cap
        return token

    def revoke(self, token: str) -> None:
        self._held.pop(_digest(token), None)

    def lookup(self, token: str) -> Optional[Capability]:
        """The capability this token is, or None. Digests compared in constant time, one per
        live worker (a handful): timing says nothing about any token."""
        if not token.startswith(PREFIX):
            return None
        digest = _digest(token)
        for held, cap in self._held.items():
            if hmac.compare_digest(held, digest):
                return cap
        return None

    def __len__(self) -> int:
        return len(self._held)
