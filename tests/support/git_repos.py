"""Real git repositories for the tests of runner.core.work.git: a person's git setup of our own
(autouse fixture `gitenv`), a repo on main, worktrees made the way the engine makes them."""

import os
import subprocess

from runner.core.work import git as wg


def g(cwd, *args, check=True):
    done = subprocess.run(["git", *args], cwd=cwd, capture_output=True, text=True)
    if check and done.returncode:
        raise AssertionError(f"git {' '.join(args)}: {done.stderr}")
    return done.stdout.strip()


def write(path, text):
    os.makedirs(os.path.dirname(path), exist_ok=True)
    with open(path, "w") as f:
        f.write(text)


def read(path):
    with open(path) as f:
        return f.read()


def commit(cwd, name, text, msg=None):
    write(os.path.join(cwd, name), text)
    g(cwd, "add", "-A")
    g(cwd, "commit", "-q", "-m", msg or f"edit {name}")
    return g(cwd, "rev-parse", "HEAD")


LINES = "".join(f"line {i}\n" for i in range(1, 11))


def edited(n, word):
    """LINES with line n replaced: two edits of the same line conflict, of distant lines do not."""
    return LINES.replace(f"line {n}\n", f"{word}\n")


def person_git(tmp_path, monkeypatch):
    """A person's git setup of our own: identity, no system config, an empty XDG home."""
    home = tmp_path / "home"
    home.mkdir()
    cfg = home / ".gitconfig"
    cfg.write_text("[user]\n\tname = Tester\n\temail = t@example.com\n[init]\n\tdefaultBranch = main\n")
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("GIT_CONFIG_GLOBAL", str(cfg))
    monkeypatch.setenv("GIT_CONFIG_NOSYSTEM", "1")
    monkeypatch.setenv("GIT_CEILING_DIRECTORIES", str(tmp_path))
    for var in ("XDG_CONFIG_HOME", "GIT_DIR", "GIT_WORK_TREE", "GIT_INDEX_FILE"):
        monkeypatch.delenv(var, raising=False)
    return home


def main_repo(tmp_path):
    root = str(tmp_path / "repo")
    os.makedirs(root)
    g(root, "init", "-q")
    commit(root, "f.txt", LINES, "init")
    return root


def worktree_maker(repo, tmp_path):
    """A worker's worktree on plugkit/a, made from main's tip."""
    async def make(name="a", excludes=()):
        path = str(tmp_path / "wt" / name)
        await wg.add_worktree(repo, path, f"plugkit/{name}", g(repo, "rev-parse", "HEAD"), list(excludes))
        return path
    return make


def one_line(err):
    assert "\n" not in str(err), str(err)
    return str(err)
