"""The files a worktree is made ready with (runner/core/work/ready.py), copied from the main
checkout without leaving either tree: a source is a regular file (or, for a shared dir, a
directory) reached from the root one component at a time with no symbolic link on the way
(plugkit/confined.py), and each destination is made beneath the worktree the same way, so a link
the main checkout holds (`.env -> ~/.ssh/id_rsa`) or one the branch tracks cannot send a read or
a write elsewhere. Blocking: call each in a thread.
"""

import errno
import os
import stat
import subprocess
from typing import Optional

from plugkit import confined

_DIR = os.O_RDONLY | os.O_DIRECTORY | os.O_NOFOLLOW | os.O_CLOEXEC
_FIX = "replace it with the file itself, or drop it from work_include / .worktreeinclude"
COPY_TIMEOUT_S = 600.0


class NotCopied(Exception):
    """Refused: it would reach outside the repository or the worktree; the message is one line."""


class CopyFailed(Exception):
    """The copy itself failed (a full disk, a file cp cannot read); the message is one line."""


def link_on_the_way(root: str, rel: str) -> Optional[str]:
    """The first component of rel that is a symbolic link, or None."""
    names = rel.split("/")
    for i in range(len(names)):
        if os.path.islink(os.path.join(root, *names[:i + 1])):
            return "/".join(names[:i + 1])
    return None


def checked_source(root: str, rel: str, max_bytes: int) -> Optional[str]:
    """rel if it is a regular file of the main checkout reached with no link; None when it is not
    there; NotCopied naming what is wrong otherwise."""
    try:
        fd = confined.open_fd(root, rel)
    except FileNotFoundError:
        return None
    except OSError as exc:
        link = link_on_the_way(root, rel)
        if link is not None:
            raise NotCopied(f"{link} is a symbolic link (for {rel}): plugkit copies only regular files inside "
                            f"the repository into a worktree; {_FIX}") from None
        if exc.errno == errno.ENOENT:
            return None
        raise NotCopied(f"{rel} is not a regular file inside the repository; {_FIX}") from None
    try:
        st = os.fstat(fd)
    finally:
        os.close(fd)
    if st.st_nlink > 1:  # the same file under another name, perhaps outside the repository
        raise NotCopied(f"{rel} is a hard link to a file elsewhere; {_FIX}")
    if st.st_size > max_bytes:
        raise NotCopied(f"{rel} is over {max_bytes >> 20} MiB; an include is a small local file ({_FIX})")
    return rel


def share_source(root: str, rel: str) -> Optional[str]:
    names = confined.parts(rel.strip("/"))
    if names is None or names[0] in (".git", ".plugkit"):
        raise NotCopied(f"work_share {rel!r} is not a directory inside the repository; fix work_share")
    fd = os.open(root, _DIR)
    try:
        for name in names:
            try:
                nxt = os.open(name, _DIR, dir_fd=fd)
            except FileNotFoundError:
                return None
            except OSError:
                raise NotCopied(f"work_share {rel!r}: {'/'.join(names)} is a symbolic link or not a directory; "
                                "plugkit shares only directories inside the repository") from None
            os.close(fd)
            fd = nxt
    finally:
        os.close(fd)
    return "/".join(names)


def _open_dir_beneath(root: str, names: list[str], make: bool) -> int:
    """A descriptor of root/names, made where missing, no link followed (OSError otherwise)."""
    fd = os.open(root, _DIR)
    try:
        for name in names:
            if make:
                try:
                    os.mkdir(name, 0o755, dir_fd=fd)
                except FileExistsError:
                    pass
            nxt = os.open(name, _DIR, dir_fd=fd)
            os.close(fd)
            fd = nxt
        return fd
    except BaseException:
        os.close(fd)
        raise


def copy_file(root: str, worktree: str, rel: str) -> bool:
    """root/rel into worktree/rel, its mode kept; False when the branch already has that path."""
    names = rel.split("/")
    src = confined.open_fd(root, rel)
    try:
        try:
            parent = _open_dir_beneath(worktree, names[:-1], make=True)
        except OSError:
            raise NotCopied(f"{rel}: a directory on its way in the worktree is a symbolic link or a file") from None
        try:
            mode = stat.S_IMODE(os.fstat(src).st_mode)
            try:
                dst = os.open(names[-1], os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC,
                              mode, dir_fd=parent)
            except FileExistsError:
                return False
            try:
                while chunk := os.read(src, 1 << 20):
                    os.write(dst, chunk)
                os.fchmod(dst, mode)  # the umask must not widen or narrow a 0600 .env
            finally:
                os.close(dst)
        finally:
            os.close(parent)
    finally:
        os.close(src)
    return True


def copy_dir(root: str, worktree: str, rel: str) -> str:
    names = rel.split("/")
    try:
        parent = _open_dir_beneath(worktree, names[:-1], True)
    except OSError:
        raise NotCopied(f"work_share {rel}: a directory on its way in the worktree is a symbolic link") from None
    os.close(parent)
    dest = os.path.join(worktree, rel)
    if os.path.lexists(dest):
        return f"{rel} kept (the branch has its own)"
    # -a copies links as links (never read through by the runner); --reflink=auto shares blocks
    # copy-on-write where the filesystem can (btrfs, xfs), a plain copy elsewhere.
    try:
        done = subprocess.run(["cp", "-a", "--reflink=auto", "--", os.path.join(root, rel), dest],
                              stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                              timeout=COPY_TIMEOUT_S)
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise CopyFailed(f"work_share {rel}: the copy failed ({exc})") from None
    if done.returncode != 0:
        line = (done.stderr.decode(errors="replace").strip().splitlines() or ["no output"])[-1]
        raise CopyFailed(f"work_share {rel}: the copy failed ({line[:200]})")
    return f"shared {rel} (a copy)"


def write_env(worktree: str, values: dict[str, str]) -> None:
    fd = _open_dir_beneath(worktree, [], make=False)
    try:
        try:
            old_fd = os.open(".env", os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC, dir_fd=fd)
        except FileNotFoundError:
            lines = []
        else:
            with os.fdopen(old_fd, "r", encoding="utf-8", errors="replace") as fh:
                lines = [ln for ln in fh.read().splitlines() if ln.split("=", 1)[0] not in values]
        lines += [f"{k}={v}" for k, v in values.items()]
        tmp = f".env.plugkit-{os.getpid()}"
        out = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_NOFOLLOW | os.O_CLOEXEC, 0o600, dir_fd=fd)
        with os.fdopen(out, "w", encoding="utf-8") as fh:
            fh.write("\n".join(lines) + "\n")
        os.replace(tmp, ".env", src_dir_fd=fd, dst_dir_fd=fd)
    except OSError as exc:
        raise NotCopied(f".env in the worktree could not take the ports ({exc.strerror}); is it a link?") from None
    finally:
        os.close(fd)




def private_parent(path: str) -> None:
    """The directory holding the worktrees (path's parent) made, or kept, the person's alone
    (0700): what a worker leaves in its worktree (a file a container of its, running as root,
    made setuid there) must be reachable by no other local user. Never through a link."""
    parent = os.path.dirname(os.path.abspath(path))
    os.makedirs(parent, mode=0o700, exist_ok=True)
    st = os.lstat(parent)
    if not stat.S_ISDIR(st.st_mode):
        raise NotCopied(f"{parent} is not a directory (a link?); remove it and run `plugkit work` again")
    if stat.S_IMODE(st.st_mode) != 0o700:
        os.chmod(parent, 0o700)
