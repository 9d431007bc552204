"""Landlock scoping for a sandbox on the host network: no abstract unix socket made outside it.

Abstract unix sockets (ssh-agent forwards, X11's @/tmp/.X11-unix, dbus, IDE helpers) have no
path, so no mount hides them; they belong to a network namespace. A sandbox with its own
(--unshare-net) cannot reach them at all. One on the host network (`exec --sandbox`, a worker
under `--network host`) is put in a Landlock domain scoped with LANDLOCK_SCOPE_ABSTRACT_UNIX_SOCKET
(Landlock ABI 6, Linux 6.12): connect() to an abstract socket bound outside the domain fails
with EPERM, its own still work. On an older kernel this does not hold; `abi()` says so, the
self-test then skips the step and the README names it.

Run as a script inside bwrap in front of the task's argv (python -I -S landlock.py -- ARGV):
it scopes itself and execs ARGV, which inherits the domain. Standard library only.
"""

from __future__ import annotations

import ctypes
import os
import sys
from functools import lru_cache

# Landlock's syscalls share one number on every architecture Linux has (asm-generic table).
_CREATE_RULESET, _RESTRICT_SELF = 444, 446
_CREATE_RULESET_VERSION = 1
SCOPE_ABSTRACT_UNIX_SOCKET = 1
SCOPE_ABI = 6  # the first ABI with scopes
_PR_SET_NO_NEW_PRIVS = 38


class _RulesetAttr(ctypes.Structure):
    _fields_ = [("handled_access_fs", ctypes.c_uint64), ("handled_access_net", ctypes.c_uint64),
                ("scoped", ctypes.c_uint64)]


def _libc():
    return ctypes.CDLL(None, use_errno=True)


@lru_cache(maxsize=1)
def abi() -> int:
    """The kernel's Landlock ABI version, 0 when Landlock is off or unknown here."""
    try:
        found = _libc().syscall(_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(_CREATE_RULESET_VERSION))
    except (OSError, AttributeError):
        return 0
    return max(int(found), 0)


def scoped() -> bool:
    """Whether this kernel can scope abstract unix sockets (what wrap() relies on)."""
    return abi() >= SCOPE_ABI


def wrap(inner: list[str]) -> list[str]:
    """`inner` behind the scoping script, or unchanged on a kernel without the scope."""
    if not scoped():
        return inner
    return [sys.executable, "-I", "-S", os.path.abspath(__file__), "--", *inner]


def restrict_self() -> None:
    """This process (and what it execs) in a new domain scoped to its own abstract sockets."""
    libc = _libc()
    attr = _RulesetAttr(0, 0, SCOPE_ABSTRACT_UNIX_SOCKET)
    fd = libc.syscall(_CREATE_RULESET, ctypes.byref(attr), ctypes.c_size_t(ctypes.sizeof(attr)), ctypes.c_uint32(0))
    if fd < 0:
        raise OSError(ctypes.get_errno(), "landlock_create_ruleset")
    try:
        # bwrap has set no_new_privs already; restrict_self requires it, so say it again here.
        if libc.prctl(_PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) != 0:
            raise OSError(ctypes.get_errno(), "prctl(PR_SET_NO_NEW_PRIVS)")
        if libc.syscall(_RESTRICT_SELF, fd, ctypes.c_uint32(0)) != 0:
            raise OSError(ctypes.get_errno(), "landlock_restrict_self")
    finally:
        os.close(fd)


def main(args: list[str]) -> int:
    inner = args[args.index("--") + 1:] if "--" in args else args
    if not inner:
        return 2
    try:
        restrict_self()
    except OSError as exc:  # fails closed: never run the task unscoped where scoping was promised
        print(f"plugkit sandbox: cannot scope abstract sockets ({exc.strerror or exc})", file=sys.stderr)
        return 126
    try:
        os.execvp(inner[0], inner)
    except OSError as exc:
        print(f"plugkit sandbox: {inner[0]}: {exc.strerror}", file=sys.stderr)
        return 127


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
