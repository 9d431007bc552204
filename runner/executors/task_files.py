"""A task's files: the runner's private task dir, the code file (or a project's tree) written
into it, and what a language row leaves beside them."""

import glob
import os
import shutil
import stat
import tempfile

import psutil

from plugkit.languages.model import Layout

TMP_PREFIX = "plugkit-tasks-"


def task_dir() -> str:
    """Task code files live outside the home: a task's own argv (`bash <file>`) names its
    file's directory, and the home holds the token. A fresh private dir (0700, random name)
    per runner, named with its pid; the dirs of runners no longer alive are removed first,
    since one killed with -9 cannot clean up after itself and /tmp is shared. Only this
    user's real directories whose pid is gone: any live process keeps its dir (pid reuse
    only delays a removal)."""
    base = tempfile.gettempdir()
    for name in os.listdir(base):
        pid = name[len(TMP_PREFIX):].partition("-")[0] if name.startswith(TMP_PREFIX) else ""
        if not pid.isdigit() or psutil.pid_exists(int(pid)):
            continue
        path = os.path.join(base, name)
        try:
            st = os.lstat(path)
        except OSError:
            continue
        if st.st_uid == os.getuid() and stat.S_ISDIR(st.st_mode):
            shutil.rmtree(path, ignore_errors=True)
    return tempfile.mkdtemp(prefix=f"{TMP_PREFIX}{os.getpid()}-")


def ours(path: str) -> bool:
    """path is a task dir task_dir() made in this process (a runner's earlier image included):
    what a handover may hand on to be removed later, and nothing else."""
    name = os.path.basename(path)
    if os.path.dirname(path) != tempfile.gettempdir() or not name.startswith(f"{TMP_PREFIX}{os.getpid()}-"):
        return False
    try:
        st = os.lstat(path)
    except OSError:
        return False
    return st.st_uid == os.getuid() and stat.S_ISDIR(st.st_mode)


def write_code(folder: str, name: str, suffix: str, data: bytes) -> str:
    """The code file, 0600: named by the task id in this runner's private dir (ids never repeat),
    so a plain exclusive create; a name already taken (a file left by a crash) gets a random one."""
    path = os.path.join(folder, name + suffix)
    try:
        fd = os.open(path, os.O_WRONLY | os.O_CREAT | os.O_EXCL | os.O_CLOEXEC, 0o600)
    except FileExistsError:
        fd, path = tempfile.mkstemp(prefix=f"{name}-", suffix=suffix, dir=folder)
    try:
        view = memoryview(data)
        while view:
            view = view[os.write(fd, view):]
    except BaseException:
        os.close(fd)
        os.unlink(path)
        raise
    os.close(fd)
    return path


def write_tree(workdir: str, layout: Layout, default_name: str) -> str:
    """Write the layout's files into the task dir; returns the code file's path."""
    file = os.path.join(workdir, layout.filename or default_name)
    for rel, text in ((layout.filename or default_name, layout.source), *layout.files):
        path = os.path.join(workdir, rel)
        os.makedirs(os.path.dirname(path), exist_ok=True)
        with open(path, "w", encoding="utf-8") as fh:
            fh.write(text)
    return file


def remove_leftovers(patterns: tuple[str, ...]) -> None:
    for pattern in patterns:
        for path in glob.glob(pattern):
            if os.path.isdir(path) and not os.path.islink(path):
                shutil.rmtree(path, ignore_errors=True)
            else:
                try:
                    os.unlink(path)
                except OSError:
                    pass
