"""Spawning a task straight into its cgroup with clone3(CLONE_INTO_CGROUP): the native helper, built on first use.

Joining a cgroup after the fork (the shell shim in cgroups.py writing cgroup.procs) makes the
kernel wait for an RCU grace period whenever no migration happened in the last few milliseconds:
11-12 ms on every spaced-out agent call. A child cloned into its cgroup never migrates.

The helper is native/clone_spawn.c, compiled with the system's cc the first time a runner needs
it, into the venv (or the runner home when the venv is read-only), named by the source's hash so
an upgrade rebuilds it; the rename makes a build by two runners at once harmless. Built lazily
rather than by scripts/setup: a runner installed any other way (pip, a wheel) gets it too, and
without a compiler, on another architecture, or on a kernel without clone3 the runner keeps the
shell shim (`plugkit doctor` says which is in force and why).
"""

from __future__ import annotations

import asyncio
import ctypes
import errno
import hashlib
import os
import shutil
import subprocess
import sys
import tempfile
import threading
from dataclasses import dataclass
from typing import Mapping, Optional

SOURCE = os.path.join(os.path.dirname(os.path.abspath(__file__)), "native", "clone_spawn.c")
BUILD_TIMEOUT_S = 60
# The clone failed in a way that says the kernel (or a seccomp filter) lacks clone3 or
# CLONE_INTO_CGROUP: stop trying for this runner's life.
UNSUPPORTED = frozenset({errno.ENOSYS, errno.EINVAL, errno.E2BIG, errno.EPERM, errno.EOPNOTSUPP})
STAGES = {1: "setup", 2: "chdir", 3: "exec"}
OFF_SWITCH = "PLUGKIT_CLONE3"


@dataclass(frozen=True)
class Spawned:
    pid: int
    pidfd: int


@dataclass(frozen=True)
class Program:
    path: str
    c_path: bytes
    argv: bytes  # argc strings laid end to end, each ending in NUL (the C side splits them)
    argc: int
    env: bytes
    envc: int
    cwd: Optional[str]


class SpawnError(OSError):
    """The child could not run the program (stage: setup, chdir or exec); errno as the kernel said."""

    def __init__(self, err: int, stage: str, filename: str) -> None:
        super().__init__(err, os.strerror(err), filename)
        self.stage = stage


class Unsupported(OSError):
    """The kernel (or a seccomp filter) refused the clone itself; the helper has turned itself off."""


class Helper:
    """The loaded helper, or why there is none (`detail` is doctor's line either way)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._fn = None
        self._loaded = False
        self.detail = "decided at the first task run in a cgroup"

    def load(self, home: Optional[str] = None) -> bool:
        with self._lock:
            if not self._loaded:
                self._loaded = True
                self._fn, self.detail = _load(home)
            return self._fn is not None

    async def ready(self, home: Optional[str]) -> bool:
        """Loaded (built, the first time: a compile, off the event loop) and not turned off."""
        if not self._loaded:
            await asyncio.to_thread(self.load, home)
        return self._fn is not None

    @property
    def active(self) -> bool:
        return self._fn is not None

    def disable(self, why: str) -> None:
        self._fn, self.detail = None, f"shell shim + cgroup.procs ({why})"

    @staticmethod
    def program(path: str, argv: list[str], env: Mapping[str, str], cwd: Optional[str]) -> Program:
        """What the child execs, as C strings; ValueError for what C would misread (before any fd
        or process exists)."""
        if any("=" in k or not k for k in env):  # as subprocess: never a variable misread by the child
            raise ValueError("illegal environment variable name")
        return Program(path, os.fsencode(path), _blob(argv), len(argv), _blob([f"{k}={v}" for k, v in env.items()]),
                       len(env), cwd)

    def clone(self, program: Program, cgroup_dir: str, fds: tuple[int, int, int], local: bool = False) -> Spawned:
        """local: start the child on this CPU (see native/clone_spawn.c; cloned_process decides)."""
        fn = self._fn
        assert fn is not None
        path, cwd = program.path, program.cwd
        pidfd, stage = ctypes.c_int(-1), ctypes.c_int(0)
        cgroup_fd = os.open(cgroup_dir, os.O_RDONLY | os.O_DIRECTORY | os.O_CLOEXEC)
        try:
            pid = fn(program.c_path, program.argv, program.argc, program.env, program.envc,
                     os.fsencode(cwd) if cwd else None, cgroup_fd, fds[0], fds[1], fds[2], int(local),
                     ctypes.byref(pidfd), ctypes.byref(stage))
        finally:
            os.close(cgroup_fd)
        if pid < 0:
            name = STAGES.get(stage.value)
            if name is None:  # the clone itself
                if -pid in UNSUPPORTED:
                    self.disable(f"the kernel refused clone3 into a cgroup: {os.strerror(-pid)}")
                    raise Unsupported(-pid, os.strerror(-pid))
                raise OSError(-pid, f"clone3 into {cgroup_dir}: {os.strerror(-pid)}")
            raise SpawnError(-pid, name, cwd if name == "chdir" else path)
        os.set_inheritable(pidfd.value, False)
        return Spawned(pid, pidfd.value)


def _blob(items: list[str]) -> bytes:
    """The strings end to end, each ending in NUL, as os.fsencode encodes them: one join and one
    encode for the whole list (an encode per variable was a tenth of a spawn's Python)."""
    if not items:
        return b""
    joined = "\0".join(items)
    if joined.count("\0") != len(items) - 1:  # C would cut the string there; subprocess refuses too
        raise ValueError("embedded null byte")
    return joined.encode(_FS_ENCODING, "surrogateescape") + b"\0"


_FS_ENCODING = sys.getfilesystemencoding()


def _load(home: Optional[str]):
    if not sys.platform.startswith("linux"):
        return None, "shell shim + cgroup.procs (not Linux)"
    if os.environ.get(OFF_SWITCH) == "0":  # the bench's "before" runner; a way out should a kernel misbehave
        return None, f"shell shim + cgroup.procs (turned off by {OFF_SWITCH}=0)"
    try:
        with open(SOURCE, "rb") as fh:
            source = fh.read()
    except OSError:
        return None, f"shell shim + cgroup.procs (the helper's source {SOURCE} is missing)"
    name = f"clone_spawn-{hashlib.sha256(source).hexdigest()[:12]}.so"
    built = None
    for folder in _build_dirs(home):
        path = os.path.join(folder, name)
        if os.path.isfile(path) or _build(path):
            built = path
            break
    if built is None:
        return None, "shell shim + cgroup.procs (could not build the clone3 helper: no cc, " \
                     "not x86_64, or no writable venv or home)"
    try:
        fn = ctypes.CDLL(built).plugkit_spawn
    except (OSError, AttributeError) as exc:
        return None, f"shell shim + cgroup.procs (the helper {built} does not load: {exc})"
    fn.restype = ctypes.c_long
    fn.argtypes = [ctypes.c_char_p, ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p, ctypes.c_long, ctypes.c_char_p,
                   ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_void_p, ctypes.c_void_p]
    return fn, f"clone3 straight into the task's cgroup ({built})"


def _build_dirs(home: Optional[str]) -> list[str]:
    dirs = [os.path.join(sys.prefix, "lib", "plugkit-native")]
    if home:
        dirs.append(os.path.join(home, "native"))
    return dirs


def _build(path: str) -> bool:
    cc = shutil.which(os.environ.get("CC", "cc")) or shutil.which("gcc")
    if cc is None:
        return False
    folder = os.path.dirname(path)
    try:
        os.makedirs(folder, mode=0o700, exist_ok=True)
        fd, tmp = tempfile.mkstemp(prefix=".build-", suffix=".so", dir=folder)
        os.close(fd)
    except OSError:
        return False
    try:
        done = subprocess.run([cc, "-O2", "-shared", "-fPIC", "-o", tmp, SOURCE], stdin=subprocess.DEVNULL,
                              capture_output=True, timeout=BUILD_TIMEOUT_S, check=False)
        if done.returncode != 0:
            return False
        os.replace(tmp, path)  # atomic: a runner loading it never sees half a file
        return True
    except (OSError, subprocess.SubprocessError):
        return False
    finally:
        if os.path.exists(tmp):
            os.unlink(tmp)


HELPER = Helper()
