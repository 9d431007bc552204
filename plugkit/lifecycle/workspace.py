"""Where a workspace's lifecycle files live, the one lock that serialises writes to them, and
atomic file replacement.

Which directory is the workspace of a cwd is plugkit.workspace.find_root (shared with memory
and the language plugins): the nearest directory holding a marker, else the cwd. So an agent
working in `repo/src` and one in `repo/` share one phase, one set of mutables and one `.prd`,
which is what "the project" means to a person; a sub-project of a monorepo opts out with its
own `.plugkit/config.toml`.
"""

import contextlib
import os
import stat
import tempfile
from dataclasses import dataclass, field
from typing import Any, Iterator, Optional

from plugkit import confined
from plugkit.lifecycle.errors import Invalid
from plugkit.workspace import MARKERS, PRD_FILE, STATE_DIR, NotAWorkspace, check_root, find_root
from plugkit import locks

__all__ = ["MARKERS", "PRD_FILE", "STATE_DIR", "Workspace", "atomic_write", "find_root", "workspace_of"]
# Everything plugkit itself writes under .plugkit/ is ignored by git through a .gitignore of its
# own: state.json changes on every transition, and a worktree made dirty by the gate's own
# bookkeeping could never pass the "git worktree clean" condition. config.toml and lang/ are
# not listed: they are the user's, to commit.
OWNED_IGNORES = ("state.json", "state.json.corrupt-*", "state.lock", "evidence/", "*.tmp", ".gitignore",
                 "worktrees/")


@dataclass(frozen=True)
class Workspace:
    root: str  # a realpath
    # What only the runner holds (None in the pure model and its unit tests): the key its
    # receipts are sealed with, and its ledger of the gates' state (runner.system.stores.gates),
    # the source of truth of which the workspace's files are views.
    seal: Optional[bytes] = field(default=None, compare=False, repr=False)
    ledger: Optional[Any] = field(default=None, compare=False, repr=False)
    signer: Optional[Any] = field(default=None, compare=False, repr=False)  # Ed25519 private key (signing)

    @property
    def dir(self) -> str:
        return os.path.join(self.root, STATE_DIR)

    @property
    def state_path(self) -> str:
        return os.path.join(self.dir, "state.json")

    @property
    def lock_path(self) -> str:
        return os.path.join(self.dir, "state.lock")

    @property
    def evidence_dir(self) -> str:
        return os.path.join(self.dir, "evidence")

    @property
    def config_path(self) -> str:
        return os.path.join(self.dir, "config.toml")

    @property
    def prd_path(self) -> str:
        return os.path.join(self.root, PRD_FILE)

    @property
    def opted_in(self) -> bool:
        """Whether the gates were ever used here (any gate write, a .prd, a config): until
        then the hooks keep them silent. A `.git` marks a workspace but opts nothing in.
        The runner's ledger remembers a workspace it wrote for or holds settings of:
        deleting the views (config.toml too) does not opt it out again."""
        if any(os.path.lexists(p) for p in (self.state_path, self.prd_path, self.config_path)):
            return True
        return self.ledger is not None and (self.ledger.known(self.root)
                                            or self.ledger.config_held(self.root) is not None)

    def ensure_dir(self) -> None:
        """Created on the first write only: reads (hooks on every tool call) never litter a cwd.
        Never in /, $HOME or $PLUGKIT_HOME, however this Workspace was made."""
        try:
            check_root(self.root)
        except NotAWorkspace as exc:
            raise Invalid(str(exc)) from None
        os.makedirs(self.dir, exist_ok=True)
        if os.path.islink(self.dir):  # a worktree's .plugkit linked out: its writes would land there
            raise Invalid(f"{self.dir} is a symbolic link; plugkit keeps its state only in a real folder")
        ignore = os.path.join(self.dir, ".gitignore")
        try:  # never through a link, never a FIFO: what is read here is written back into the tree
            with confined.open_beneath(self.root, ignore) as fh:
                have = fh.read().decode("utf-8", "replace")
        except OSError:  # absent, or a link or FIFO in plugkit's own file's place: replaced (rename, no follow)
            atomic_write(ignore, ("# written by plugkit: its own state, never committed\n"
                                  + "\n".join(OWNED_IGNORES) + "\n").encode())
            return
        missing = [p for p in OWNED_IGNORES if p not in have.splitlines()]
        if missing:  # written by an older plugkit: what it owns now is added, the rest kept
            atomic_write(ignore, (have + ("" if have.endswith("\n") else "\n") + "\n".join(missing) + "\n").encode())

    @contextlib.contextmanager
    def locked(self) -> Iterator[None]:
        """Exclusive across threads and processes: flock locks belong to the open file
        description, and every holder opens the lock file anew. Held only around a
        read-modify-write of small files, never while a task runs."""
        self.ensure_dir()
        with locks.exclusive(self.lock_path):  # never through a planted link (plugkit/locks.py)
            yield

    def inside(self, path: str) -> str:
        """`path` (absolute, or relative to the root) as a root-relative path; refused
        when it resolves outside the workspace (`..`, or a symlink pointing out)."""
        full = os.path.realpath(os.path.join(self.root, path))
        if full != self.root and not full.startswith(self.root + os.sep):
            raise Invalid(f"{path!r} is outside the workspace {self.root}")
        rel = os.path.relpath(full, self.root)
        if rel == ".":
            raise Invalid(f"{path!r} names the workspace itself, not a file in it")
        return rel


def workspace_of(cwd: str) -> Workspace:
    return Workspace(find_root(cwd))


def atomic_write(path: str, data: bytes, durable: bool = True) -> None:
    """Temp file in the same directory + fsync + rename: a reader (or a crash) sees the
    old file or the new one, never half of one. durable=False skips the fsync, for files
    that are views of the runner's ledger (plugkit.lifecycle.authority): a reader or a
    crashed process still sees a whole file, and after a lost power the ledger (which does
    not fsync each commit either) writes the view again (an empty view claims nothing).
    Without the fsync an existing file is exchanged with the new one rather than renamed
    over: ext4 flushes a file renamed over another (its auto_da_alloc), 0.5-5 ms a write
    under load that the views, written on every gate operation, need not pay (issue 31)."""
    directory = os.path.dirname(path)
    fd, tmp = tempfile.mkstemp(prefix="." + os.path.basename(path) + ".", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
            fh.flush()
            if durable:
                os.fsync(fh.fileno())
        if not durable and _exchange(tmp, path):
            os.unlink(tmp)  # the old file, under the temp name now
            return
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise


_RENAME_EXCHANGE = 2  # linux/fs.h
_renameat2: list = []  # [libc function or None], looked up on first use (ctypes is not free to import)


def _exchange(tmp: str, path: str) -> bool:
    """Atomically swaps the two names (renameat2 RENAME_EXCHANGE); False when the target is
    not a regular file or the kernel, libc or filesystem cannot (the caller renames over then)."""
    try:
        if not stat.S_ISREG(os.lstat(path).st_mode):
            return False
    except FileNotFoundError:
        return False
    if not _renameat2:
        try:
            import ctypes
            fn = ctypes.CDLL(None, use_errno=True).renameat2
            fn.argtypes = [ctypes.c_int, ctypes.c_char_p, ctypes.c_int, ctypes.c_char_p, ctypes.c_uint]
            _renameat2.append(fn)
        except (OSError, AttributeError):
            _renameat2.append(None)
    if _renameat2[0] is None:
        return False
    at_cwd = -100
    return _renameat2[0](at_cwd, os.fsencode(tmp), at_cwd, os.fsencode(path), _RENAME_EXCHANGE) == 0
