"""One cgroup v2 per task where the kernel lets us: nothing a task starts can leave it.

Tags in the environment are lost to `setsid env -i sleep &`: the escapee carries no
PLUGKIT_* variable and outlived its task, `exec:close`, `runner stop` and the next boot's
reaper (issue 17.2). A cgroup is inherited by every descendant and cannot be left without
write access to another cgroup, so `cgroup.kill` ends the whole tree at once.

Layout: <v2 root>/plugkit/<home hash>/<runner id>/task_<N>. The home hash lets a boot reap
only its own home's dead runners; the runner id (`<pid>-<random>`) says whose they were.

Where the hierarchy comes from (detect()):
  - a hybrid host (cgroup v1 + a cgroup2 mount, usually /sys/fs/cgroup/unified) where we are
    in its root: root may create plugkit/ there;
  - pure v2 (/sys/fs/cgroup): our own cgroup if we may write it (a systemd user's delegated
    subtree, a container's namespace root). Domain controllers (memory) need a cgroup
    with no processes of its own, so the runner first moves itself into a `runner` leaf.
Otherwise: mode "tags" (no cgroup), and the environment tags and the subreaper stay our only
reach; `plugkit doctor` says which mode is in force.

A child is created inside its cgroup where the clone3 helper runs (clone_spawn.py: no
migration, so none of the RCU wait below). Otherwise (the fallback) it joins before it runs
any code of its own: it is spawned through
`/bin/sh -c 'echo 0 >"$0"; exec "$@"' <cgroup.procs> argv...`, writing "0" (itself) into the
task's cgroup.procs, then exec'ing the real program under the same pid. Writing the pid from
the runner after spawn leaves a window in which the task can fork outside; preexec_fn
closes it too but turns the spawn's vfork into a full fork of the runner (about 3 ms per
spawn against 0.6 ms for the shell). Joining after the fork waits 11-12 ms for an RCU grace
period whenever no migration happened in the last few milliseconds.
"""

from __future__ import annotations

import errno
import hashlib
import os
import signal
import time
from dataclasses import dataclass
from typing import Iterator, Optional

# If the write fails (the cgroup vanished), the task still runs: tags and the sweeper remain.
SHIM = ("/bin/sh", "-c", 'echo 0 >"$0" 2>/dev/null; exec "$@"')


@dataclass(frozen=True)
class Usage:
    cpu_s: Optional[float]
    memory_peak_bytes: Optional[int]
    memory_bytes: Optional[int] = None  # memory.current: in use at the read


@dataclass(frozen=True)
class Mode:
    """What detect() found: `cgroup2` with a writable base, or `tags` and why."""

    name: str                  # "cgroup2" | "tags"
    root: Optional[str]        # the cgroup2 directory plugkit/ lives in
    detail: str                # one line for doctor and the log
    memory: bool = False       # the memory controller reaches task cgroups (peak, limits)


def _v2_mount() -> Optional[str]:
    try:
        with open("/proc/self/mountinfo", encoding="utf-8", errors="replace") as fh:
            for line in fh:
                left, _, right = line.partition(" - ")
                if right.split(" ", 1)[0] == "cgroup2":
                    return left.split(" ")[4]
    except OSError:
        return None
    return None


def _own_v2_path() -> Optional[str]:
    try:
        with open("/proc/self/cgroup", encoding="utf-8") as fh:
            for line in fh:
                if line.startswith("0::"):
                    return line[3:].strip() or "/"
    except OSError:
        return None
    return None


def detect() -> Mode:
    mount, own = _v2_mount(), _own_v2_path()
    if mount is None or own is None:
        return Mode("tags", None, "no cgroup2 hierarchy is mounted (cgroup v1 only)")
    here = os.path.normpath(mount + own)
    if not os.path.isfile(os.path.join(here, "cgroup.kill")) and not os.path.isfile(
            os.path.join(here, "cgroup.freeze")) and own != "/":
        return Mode("tags", None, f"cgroup2 at {mount} lacks cgroup.kill and cgroup.freeze (kernel < 5.2)")
    if not (os.access(here, os.W_OK) and os.access(os.path.join(here, "cgroup.procs"), os.W_OK)):
        return Mode("tags", None, f"our cgroup {here} is not writable (not delegated to this user)")
    base = here
    if own != "/":
        # Delegated subtree: leave our own cgroup to a leaf, so children may get controllers.
        base = _enter_leaf(here)
    memory = _enable(base, "memory")
    label = "memory controller on" if memory else "no memory controller (CPU time only)"
    return Mode("cgroup2", base, f"one cgroup2 per task under {base}/plugkit ({label})", memory)


def _enter_leaf(here: str) -> str:
    leaf = os.path.join(here, "runner")
    try:
        os.makedirs(leaf, exist_ok=True)
        _write(os.path.join(leaf, "cgroup.procs"), "0")
    except OSError:
        pass  # controllers stay off; plain nesting (kill, CPU time) still works
    return here


def _enable(cgroup: str, controller: str) -> bool:
    try:
        with open(os.path.join(cgroup, "cgroup.controllers")) as fh:
            if controller not in fh.read().split():
                return False
        _write(os.path.join(cgroup, "cgroup.subtree_control"), f"+{controller}")
        return True
    except OSError:
        return False


def home_key(home: str) -> str:
    return hashlib.sha256(os.path.realpath(home).encode()).hexdigest()[:12]


class TaskCgroups:
    """The cgroups of one runner: made per task, killed as a whole, removed when empty."""

    def __init__(self, mode: Mode, home: str, runner_id: str) -> None:
        assert mode.root is not None
        self.mode = mode
        self.home_dir = os.path.join(mode.root, "plugkit", home_key(home))
        self.base = os.path.join(self.home_dir, runner_id)
        for level in (os.path.join(mode.root, "plugkit"), self.home_dir, self.base):
            os.makedirs(level, exist_ok=True)
            if mode.memory:
                _enable(level, "memory")

    def path(self, task_id: int) -> str:
        return os.path.join(self.base, f"task_{task_id}")

    def create(self, task_id: int, memory_max: Optional[int] = None) -> str:
        path = self.path(task_id)
        try:
            os.mkdir(path)  # one call: the parent is this runner's base, made at boot
        except FileExistsError:
            pass
        except FileNotFoundError:  # the base was removed under us
            os.makedirs(path, exist_ok=True)
        if memory_max is not None:
            _write(os.path.join(path, "memory.max"), str(memory_max))
        return path

    def kill(self, path: str) -> None:
        kill_cgroup(path)

    def usage(self, path: str) -> Usage:
        return read_usage(path, self.mode.memory)

    def remove(self, path: str, wait_s: float = 1.0) -> bool:
        return remove_tree(path, wait_s)

    def end(self, path: str, wait_s: float = 1.0) -> Usage:
        """Kill, read the usage, remove (waiting up to wait_s for the killed to leave: call it
        off the event loop). Returns the usage."""
        self.kill(path)
        final = self.usage(path)
        self.remove(path, wait_s)
        return final

    def end_now(self, path: str) -> Optional[Usage]:
        """The usage and one rmdir, without waiting: the usage when the cgroup is gone, None when
        it still holds a process or a child cgroup (end() kills and waits for those). Nothing to
        kill when the rmdir succeeds: the kernel removes only an empty cgroup."""
        final = self.usage(path)
        try:
            os.rmdir(path)
        except FileNotFoundError:
            pass
        except OSError:
            return None
        return final

    def close(self) -> None:
        """Runner shutdown: every task cgroup dies, then the runner's directory goes."""
        kill_cgroup(self.base)
        remove_tree(self.base, 2.0)
        try:
            os.rmdir(self.home_dir)  # the last runner of this home leaves nothing behind
        except OSError:
            pass  # another runner of this home (or one to reap at the next boot) is still there


def procs_file(path: str) -> str:
    return os.path.join(path, "cgroup.procs")


def kill_cgroup(path: str) -> None:
    """SIGKILL everything in the cgroup and below. cgroup.kill (5.14) is atomic against forks;
    older kernels: freeze (no new forks can run), SIGKILL every member, thaw."""
    try:
        _write(os.path.join(path, "cgroup.kill"), "1")
        return
    except FileNotFoundError:
        if not os.path.isdir(path):
            return
    except OSError:
        pass
    frozen = _try_write(os.path.join(path, "cgroup.freeze"), "1")
    try:
        for pid in members(path):
            try:
                os.kill(pid, signal.SIGKILL)
            except (ProcessLookupError, PermissionError):
                continue
    finally:
        if frozen:
            _try_write(os.path.join(path, "cgroup.freeze"), "0")


def members(path: str) -> list[int]:
    pids: list[int] = []
    for cgroup in _walk(path):
        try:
            with open(os.path.join(cgroup, "cgroup.procs")) as fh:
                pids.extend(int(x) for x in fh.read().split())
        except OSError:
            continue
    return pids


def populated(path: str) -> bool:
    try:
        with open(os.path.join(path, "cgroup.events")) as fh:
            for line in fh:
                key, _, value = line.partition(" ")
                if key == "populated":
                    return value.strip() == "1"
    except OSError:
        return False
    return False


def read_usage(path: str, memory: bool) -> Usage:
    """Read at every task's end, on the answer's path: plain reads (a text-mode open costs
    ten times the read itself)."""
    cpu = None
    stat = _read(os.path.join(path, "cpu.stat"))
    if stat is not None:
        for line in stat.splitlines():
            key, _, value = line.partition(b" ")
            if key == b"usage_usec":
                try:
                    cpu = int(value) / 1e6
                except ValueError:
                    pass
                break
    peak = now = None
    if memory:
        for name in ("memory.current", "memory.peak"):  # memory.peak is 5.19+; else the current is the best peak
            text = _read(os.path.join(path, name))
            if text is not None and text.strip().isdigit():
                now = int(text) if name == "memory.current" else now
                peak = int(text)
    return Usage(cpu, peak, now)


def _read(path: str) -> Optional[bytes]:
    try:
        fd = os.open(path, os.O_RDONLY | os.O_CLOEXEC)
    except OSError:
        return None
    try:
        return os.read(fd, 4096)
    except OSError:
        return None
    finally:
        os.close(fd)


def remove_tree(path: str, wait_s: float) -> bool:
    """rmdir the cgroup and its children, deepest first, once they are empty (killed members
    leave within milliseconds; a zombie left for our reaper does not count as populated)."""
    deadline = time.monotonic() + wait_s
    for cgroup in reversed(list(_walk(path))):
        while True:
            try:
                os.rmdir(cgroup)
                break
            except FileNotFoundError:
                break
            except OSError as exc:
                if exc.errno != errno.EBUSY or time.monotonic() > deadline:
                    return False
                time.sleep(0.005)
    return True


def reap_dead_runners(home: str, live_runner_id: str, alive) -> list[str]:
    """Boot: kill and remove the cgroups of this home's runners that are gone. Their escapees,
    tagged or not, die here (the environment scan cannot see an `env -i` child)."""
    mode = detect_cached()
    if mode.root is None:
        return []
    home_dir = os.path.join(mode.root, "plugkit", home_key(home))
    try:
        names = os.listdir(home_dir)
    except OSError:
        return []
    reaped = []
    for name in names:
        path = os.path.join(home_dir, name)
        if name == live_runner_id or not os.path.isdir(path) or alive(name):
            continue
        kill_cgroup(path)
        remove_tree(path, 2.0)
        reaped.append(name)
    _sweep_empty(os.path.join(mode.root, "plugkit"), alive)
    return reaped


def _sweep_empty(plugkit_dir: str, alive) -> None:
    """Other homes' dead runners (a test home killed with -9, never booted again) leave empty
    directories; those go. Nothing of another home is killed: its own next boot does that."""
    try:
        homes = [e.path for e in os.scandir(plugkit_dir) if e.is_dir(follow_symlinks=False)]
    except OSError:
        return
    for home_dir in homes:
        try:
            runners = [e for e in os.scandir(home_dir) if e.is_dir(follow_symlinks=False)]
        except OSError:
            continue
        for entry in runners:
            if not alive(entry.name) and not populated(entry.path):
                remove_tree(entry.path, 0.0)
        try:
            os.rmdir(home_dir)
        except OSError:
            pass


_detected: Optional[Mode] = None


def detect_cached() -> Mode:
    global _detected
    if _detected is None:
        _detected = detect()
    return _detected


def _walk(path: str) -> Iterator[str]:
    """The cgroup and every descendant, parents first."""
    if not os.path.isdir(path):
        return
    yield path
    try:
        entries = sorted(os.scandir(path), key=lambda e: e.name)
    except OSError:
        return
    for entry in entries:
        if entry.is_dir(follow_symlinks=False):
            yield from _walk(entry.path)


def _write(path: str, text: str) -> None:
    fd = os.open(path, os.O_WRONLY | os.O_CLOEXEC)
    try:
        os.write(fd, text.encode())
    finally:
        os.close(fd)


def _try_write(path: str, text: str) -> bool:
    try:
        _write(path, text)
        return True
    except OSError:
        return False
