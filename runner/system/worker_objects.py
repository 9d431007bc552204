"""A sandboxed worker's own git object directory, and the checked import of what it wrote.

The repository's object store is never writable from a sandbox: a worker that could unlink and
rewrite a loose object would change what `main` holds under the same hash (issue 40 #2). So
each worker gets a private directory (beside its worktree, outside the real .git), bound into
its sandbox at `<git dir>/objects`, with the real store bound read-only inside it (STORE) and
named as its alternate. Every git the worker or its `exec:` tasks run in this repository then
writes there, and nothing it writes reaches the real store until take() has:
  - read each loose object itself (no git reads the directory: its info/alternates, packs'
    .idx, commit-graph are the worker's), regular files only, links refused, and re-hashed it
    against its file name: a mismatch or a corrupt object raises BadObjects, nothing imported;
  - unpacked any pack the worker left into a runner-owned scratch store (`git unpack-objects`
    names every object by its hash), with the pack streamed in on stdin;
  - sent all of it, as one pack, through `git index-pack --strict` into the real store:
    re-hashed again, fsck-checked, every link resolved (in the pack or the real store).
git here runs with the real repository's config and the runner's environment only.
Standard library only: the Ray node side (runner/node/task.py) uses it too. Blocking.
"""

from __future__ import annotations

import hashlib
import os
import re
import shutil
import stat
import struct
import subprocess
import tempfile
import zlib
from typing import Optional

PREFIX = ".objects-"     # the private dir of worktree W: <dirname W>/.objects-<basename W>
STORE = "info/store"     # where, inside the private dir, the sandbox shows the real store (read-only)
MAX_OBJECT = 1 << 30     # one object's size, uncompressed, past which the import refuses it
TIMEOUT_S = 300.0
TYPES = {b"commit": 1, b"tree": 2, b"blob": 3, b"tag": 4}
REPO_ENV = ("GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE", "GIT_COMMON_DIR", "GIT_OBJECT_DIRECTORY",
            "GIT_ALTERNATE_OBJECT_DIRECTORIES", "GIT_NAMESPACE", "GIT_CONFIG_PARAMETERS", "GIT_CONFIG_COUNT")


class BadObjects(Exception):
    """The worker's object directory holds something that may not enter the store; one line."""


def beside(worktree: str, prefix: str) -> str:
    """A worker's private dir of one kind (prefix): beside its worktree, outside the real .git."""
    worktree = os.path.realpath(worktree)
    return os.path.join(os.path.dirname(worktree), prefix + os.path.basename(worktree))


def real_dir(path: str) -> Optional[str]:
    """path if it is a real dir (not a link to one: the runner made it, nothing followed), else None."""
    try:
        return path if stat.S_ISDIR(os.lstat(path).st_mode) else None
    except OSError:
        return None


def private_dir(worktree: str) -> str:
    return beside(worktree, PREFIX)


def existing(worktree: str) -> Optional[str]:
    """The worktree's private object dir if the runner made one, else None."""
    return real_dir(private_dir(worktree))


def git_env(extra: Optional[dict[str, str]] = None) -> dict[str, str]:
    """The environment for the runner's git on a repository: no variable may point it elsewhere."""
    env = {k: v for k, v in os.environ.items() if k not in REPO_ENV and not k.startswith("GIT_CONFIG_KEY_")
           and not k.startswith("GIT_CONFIG_VALUE_")}
    env.update({"LC_ALL": "C", "GIT_TERMINAL_PROMPT": "0"}, **(extra or {}))
    return env


def _git(git_dir: str, *args: str, env: Optional[dict[str, str]] = None, stdin=None) -> subprocess.CompletedProcess:
    return subprocess.run(["git", f"--git-dir={git_dir}", *args], env=git_env(env), stdin=stdin,
                          capture_output=True, timeout=TIMEOUT_S)


def prepare(worktree: str, git_dir: str) -> str:
    """A fresh, empty private object dir for the worktree's next worker (what an earlier attempt
    left goes): its alternates name the real store as the sandbox shows it, then the real
    store's own alternates (absolute), so a clone made with --shared still resolves."""
    path = private_dir(worktree)
    discard(worktree)
    for sub in (STORE, "pack"):
        os.makedirs(os.path.join(path, sub))
    real = os.path.join(git_dir, "objects")
    inside = [os.path.join(real, STORE)]
    try:
        with open(os.path.join(real, "info", "alternates"), encoding="utf-8") as fh:
            inside += [os.path.normpath(os.path.join(real, ln.strip())) for ln in fh
                       if ln.strip() and not ln.startswith("#")]
    except OSError:
        pass
    with open(os.path.join(path, "info", "alternates"), "w", encoding="utf-8") as fh:
        fh.write("".join(f"{p}\n" for p in inside))
    return path


def discard(worktree: str) -> None:
    path = private_dir(worktree)
    if os.path.islink(path):
        os.unlink(path)
    shutil.rmtree(path, ignore_errors=True)


def _hash_name(git_dir: str) -> str:
    done = _git(git_dir, "rev-parse", "--show-object-format")
    name = done.stdout.decode().strip() if done.returncode == 0 else ""
    return name or "sha1"


def _read_regular(path: str, limit: int) -> bytes:
    """The file's bytes: opened without following a link, regular only (a FIFO cannot block us)."""
    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            raise BadObjects(f"{path} is not a regular file")
        if st.st_size > limit:
            raise BadObjects(f"{path} is over {limit >> 20} MiB")
        with os.fdopen(os.dup(fd), "rb") as fh:
            return fh.read(limit + 1)
    finally:
        os.close(fd)


def _loose(path: str, hexlen: int, algo: str) -> dict[str, tuple[int, bytes]]:
    """{oid: (type code, content)} of every loose object in `path`, each re-hashed; BadObjects else."""
    found: dict[str, tuple[int, bytes]] = {}
    name_re = re.compile(rf"[0-9a-f]{{{hexlen - 2}}}")
    for fan in sorted(os.listdir(path)):
        sub = os.path.join(path, fan)
        if not re.fullmatch(r"[0-9a-f]{2}", fan) or not stat.S_ISDIR(os.lstat(sub).st_mode):
            continue
        for name in sorted(os.listdir(sub)):
            if not name_re.fullmatch(name):
                continue  # git's own temp files (tmp_obj_*), never an object
            oid, file = fan + name, os.path.join(sub, name)
            try:
                d = zlib.decompressobj()
                raw = d.decompress(_read_regular(file, MAX_OBJECT), MAX_OBJECT + 64)
                if d.unconsumed_tail or not d.eof:
                    raise ValueError("truncated or too large")
                head, _, body = raw.partition(b"\0")
                kind, _, size = head.partition(b" ")
                if kind not in TYPES or not size.isdigit() or int(size) != len(body):
                    raise ValueError("not an object header")
            except (ValueError, zlib.error, OSError) as exc:
                raise BadObjects(f"the worker wrote a corrupt object {oid} ({exc})") from None
            real = hashlib.new(algo, raw).hexdigest()
            if real != oid:
                raise BadObjects(f"the worker wrote object {oid} whose content hashes to {real}: "
                                 "a forged object, refused")
            found[oid] = (TYPES[kind], body)
    return found


def _unpack(git_dir: str, packs: list[str], scratch: str) -> None:
    """Each of the worker's packs into `scratch`, named by git from their content."""
    env = {"GIT_OBJECT_DIRECTORY": scratch, "GIT_ALTERNATE_OBJECT_DIRECTORIES": os.path.join(git_dir, "objects")}
    for pack in packs:
        data = _read_regular(pack, 8 * MAX_OBJECT)
        done = subprocess.run(["git", f"--git-dir={git_dir}", "unpack-objects", "-q"], input=data, env=git_env(env),
                              capture_output=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise BadObjects(f"the worker's pack {os.path.basename(pack)} does not unpack ({why[0][:200]})")


def _pack(objects: dict[str, tuple[int, bytes]], algo: str) -> bytes:
    """A version-2 pack of whole objects (no deltas): what index-pack reads."""
    out = [b"PACK", struct.pack(">II", 2, len(objects))]
    for kind, body in objects.values():
        size, byte = len(body), (kind << 4) | (len(body) & 0x0F)
        size >>= 4
        head = bytearray()
        while size:
            head.append(byte | 0x80)
            byte, size = size & 0x7F, size >> 7
        head.append(byte)
        out += [bytes(head), zlib.compress(body, 1)]
    data = b"".join(out)
    return data + hashlib.new(algo, data).digest()


def take(worktree: str, git_dir: str) -> int:
    """The worktree's private objects, checked, into the real store of `git_dir`; how many.
    BadObjects (nothing imported) when one is forged, corrupt, or breaks a link. The private
    dir is kept then (a person looks), else removed."""
    path = existing(worktree)
    if path is None:
        return 0
    algo = _hash_name(git_dir)
    hexlen = hashlib.new(algo).digest_size * 2
    objects = _loose(path, hexlen, algo)
    packs = []
    pack_dir = os.path.join(path, "pack")
    if os.path.isdir(pack_dir) and not os.path.islink(pack_dir):
        packs = [os.path.join(pack_dir, n) for n in sorted(os.listdir(pack_dir)) if n.endswith(".pack")]
    if packs:
        with tempfile.TemporaryDirectory(prefix="plugkit-objects-") as scratch:
            _unpack(git_dir, packs, scratch)
            objects.update(_loose(scratch, hexlen, algo))
    if objects:
        done = subprocess.run(["git", f"--git-dir={git_dir}", "index-pack", "--strict", "--stdin"],
                              input=_pack(objects, algo), env=git_env(), capture_output=True, timeout=TIMEOUT_S)
        if done.returncode != 0:
            why = done.stderr.decode(errors="replace").strip().splitlines()[-1:] or ["no message"]
            raise BadObjects(f"the worker's objects fail git's check ({why[0][:200]})")
    discard(worktree)
    return len(objects)
