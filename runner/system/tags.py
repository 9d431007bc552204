"""The environment tags that mark a process as belonging to a runner and task, and the child env built from them."""

from __future__ import annotations

import hashlib
import os
from collections.abc import Mapping

# HOME is the runner's home by id, never by path: the home holds the bearer token, and nothing
# handed to a task may point at it (a task is the agent's code). A hash of the home's
# absolute path tells the reaper which home a stray belongs to without naming the path.
from plugkit.vocab import HOME_ID_TAG as HOME, HOME_TAG, IDENTITY_TAGS, RUNNER_ID_TAG as RUNNER_ID, \
    SESSION_ID_TAG as SESSION_ID, TAG_NAMES, TASK_ID_TAG as TASK_ID

__all__ = ["HOME", "RUNNER_ID", "SESSION_ID", "TASK_ID", "TAG_NAMES", "IDENTITY_NAMES", "child_env",
           "read_tags", "read_environ", "is_scrubbed", "home_id"]

# Identity tags are never inherited from the runner's own environment: a runner
# started from inside another runner's task carries that task's ids, and a child
# that inherited them would be killed along with a stranger's task. HOME (by id) is
# always set by the tags themselves.
IDENTITY_NAMES: frozenset[str] = IDENTITY_TAGS

# The bearer token guards the runner's RPC port; a task that could read it could
# drive the runner (spawn outside any gate, kill other sessions' tasks, approve its own
# items). PLUGKIT_HOME is the directory holding the token (and the receipts' MAC key):
# a runner started with it set must not hand it down.
SCRUBBED: frozenset[str] = frozenset({"PLUGKIT_TOKEN", HOME_TAG})
# Prefix match also covers PLUGKIT_TOKEN_FILE, PLUGKIT_TOKEN_PATH and the like.
SCRUBBED_PREFIX = "PLUGKIT_TOKEN"

_TAG_PREFIX = b"PLUGKIT_"
_READ_CHUNK = 1 << 16


def home_id(home: str) -> str:
    """The HOME tag's value for a runner home: 16 hex characters of sha256(abspath)."""
    return hashlib.sha256(os.fsencode(os.path.abspath(home))).hexdigest()[:16]


def is_scrubbed(name: str) -> bool:
    return name in SCRUBBED or name.startswith(SCRUBBED_PREFIX)


def child_env(
    base: Mapping[str, str],
    extra: Mapping[str, str] | None,
    tags: Mapping[str, str],
) -> dict[str, str]:
    """base minus scrubbed names and stale identity, plus extra (never tags or scrubbed), plus tags."""
    unknown = set(tags) - TAG_NAMES
    if unknown:
        raise ValueError(f"not tag names: {sorted(unknown)}")
    env = {
        k: v for k, v in base.items()
        if not is_scrubbed(k) and k not in IDENTITY_NAMES
    }
    for k, v in (extra or {}).items():
        # Caller extras come from agents; a forged tag would let a task hide from
        # kill_tree (or get swept with another task), so extras never touch tags.
        if k in TAG_NAMES or is_scrubbed(k):
            continue
        env[k] = v
    env.update(tags)
    return env


def read_environ(pid: int) -> bytes | None:
    """Raw /proc/<pid>/environ (NUL-separated), or None when the process is gone or not ours to read."""
    try:
        fd = os.open(f"/proc/{pid}/environ", os.O_RDONLY)
    except OSError:
        return None
    try:
        chunks = []
        while True:
            chunk = os.read(fd, _READ_CHUNK)
            if not chunk:
                break
            chunks.append(chunk)
    except OSError:
        # ESRCH mid-read: the process exited between open and read.
        return None
    finally:
        os.close(fd)
    return b"".join(chunks)


def read_tags(pid: int) -> dict[str, str] | None:
    """The PLUGKIT_* entries of a process's environment (as it was at exec); None when unreadable or gone.

    A zombie has released its memory, so its environment reads as empty ({}).
    """
    raw = read_environ(pid)
    if raw is None:
        return None
    found: dict[str, str] = {}
    for entry in raw.split(b"\0"):
        if not entry.startswith(_TAG_PREFIX):
            continue
        name, sep, value = entry.partition(b"=")
        if sep:
            found[os.fsdecode(name)] = os.fsdecode(value)
    return found
