"""A worker's private object dir (runner/system/worker_objects.py) against real git: what a
worker's git writes there is imported, re-hashed; what it forges, corrupts, links or leaves
unconnected is refused with the real store untouched."""

import os
import subprocess
import zlib
from pathlib import Path

import pytest

from runner.system import worker_objects
from runner.system.worker_objects import BadObjects


def git(cwd, *args, env=None, input=None) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=input is None or None,
                          env={**os.environ, **(env or {})}, input=input).stdout


@pytest.fixture
def repo(tmp_path) -> tuple[Path, Path, str]:
    """(repo, worktree, its private dir): a repository with one commit and a linked worktree."""
    r = tmp_path / "repo"
    r.mkdir()
    git(r, "init", "-q", "-b", "main")
    git(r, "config", "user.name", "A")
    git(r, "config", "user.email", "a@example.invalid")
    (r / "README").write_text("a workspace\n")
    git(r, "add", "README")
    git(r, "commit", "-qm", "init")
    wt = tmp_path / "wts" / "w1"
    git(r, "worktree", "add", "-q", "-b", "plugkit/w1", str(wt))
    return r, wt, worker_objects.prepare(str(wt), str(r / ".git"))


def as_worker(private: str, repo: Path) -> dict:
    """The worker's view without bwrap: its own dir primary, the real store its alternate."""
    return {"GIT_OBJECT_DIRECTORY": private, "GIT_ALTERNATE_OBJECT_DIRECTORIES": str(repo / ".git" / "objects")}


def loose(private: str, oid: str, raw: bytes) -> None:
    os.makedirs(os.path.join(private, oid[:2]), exist_ok=True)
    Path(private, oid[:2], oid[2:]).write_bytes(zlib.compress(raw))


def test_a_workers_commit_is_imported_and_its_dir_removed(repo):
    r, wt, private = repo
    (wt / "new.txt").write_text("new\n")
    git(wt, "add", "new.txt", env=as_worker(private, r))
    git(wt, "commit", "-qm", "new", env=as_worker(private, r))
    assert worker_objects.take(str(wt), str(r / ".git")) == 3  # blob, tree, commit
    assert git(r, "show", "plugkit/w1:new.txt") == "new\n" and not os.path.exists(private)
    git(r, "fsck", "--strict", "--no-dangling")


def test_a_pack_the_worker_left_is_unpacked_and_checked(repo):
    r, wt, private = repo
    for n in range(3):
        (wt / f"f{n}.txt").write_text(f"{n}\n")
        git(wt, "add", "-A", env=as_worker(private, r))
        git(wt, "commit", "-qm", str(n), env=as_worker(private, r))
    git(wt, "repack", "-adlq", env=as_worker(private, r))
    assert os.listdir(os.path.join(private, "pack"))
    worker_objects.take(str(wt), str(r / ".git"))
    assert git(r, "show", "plugkit/w1:f2.txt") == "2\n"
    git(r, "fsck", "--strict", "--no-dangling")


def _store(r: Path) -> set[str]:
    return {os.path.join(d, f) for d, _, fs in os.walk(r / ".git" / "objects") for f in fs}


def test_a_forged_object_is_refused_and_nothing_enters(repo):
    r, wt, private = repo
    (wt / "ok.txt").write_text("fine\n")
    git(wt, "add", "ok.txt", env=as_worker(private, r))  # a good object beside the forged one
    before = _store(r)
    oid = git(r, "rev-parse", "main:README").strip()
    loose(private, oid, b"blob 6\0pwned\n")
    with pytest.raises(BadObjects, match="hashes to"):
        worker_objects.take(str(wt), str(r / ".git"))
    assert _store(r) == before and git(r, "show", "main:README") == "a workspace\n" and os.path.isdir(private)


@pytest.mark.parametrize("junk", ["corrupt", "link", "fifo"])
def test_a_corrupt_linked_or_special_object_file_is_refused(repo, tmp_path, junk):
    r, wt, private = repo
    path = Path(private, "ab", "c" * 38)
    path.parent.mkdir()
    if junk == "corrupt":
        path.write_bytes(b"not zlib")
    elif junk == "link":
        (tmp_path / "secret").write_bytes(zlib.compress(b"blob 3\0key"))
        path.symlink_to(tmp_path / "secret")
    else:
        os.mkfifo(path)
    with pytest.raises(BadObjects):
        worker_objects.take(str(wt), str(r / ".git"))


def test_a_tree_naming_a_missing_object_is_refused(repo):
    r, wt, private = repo
    missing = "1" * 40
    tree = git(wt, "mktree", "--missing", env=as_worker(private, r),
               input=f"100644 blob {missing}\tgone.txt\n".encode()).decode().strip()
    assert os.path.exists(os.path.join(private, tree[:2], tree[2:]))
    with pytest.raises(BadObjects, match="git's check"):
        worker_objects.take(str(wt), str(r / ".git"))
    assert subprocess.run(["git", "cat-file", "-e", tree], cwd=r).returncode != 0


def test_planted_refs_and_reflog_links_are_removed_without_touching_their_targets(repo, tmp_path):
    from runner.core.work.refs import planted

    r, _wt, _private = repo
    git_dir = r / ".git"
    victim = tmp_path / "bashrc"
    victim.write_text("mine\n")
    heads, logs = git_dir / "refs" / "heads" / "plugkit", git_dir / "logs" / "refs" / "heads" / "plugkit"
    (heads / "evil").symlink_to("refs/heads/main")
    (heads / "symref").write_text("ref: refs/heads/main\n")
    (heads / "dir").symlink_to(tmp_path)
    os.mkfifo(heads / "fifo")
    (logs / "w2").symlink_to(victim)
    main = git(r, "rev-parse", "main").strip()
    assert planted(str(git_dir)) == sorted(["logs/refs/heads/plugkit/w2", "refs/heads/plugkit/dir",
                                            "refs/heads/plugkit/evil", "refs/heads/plugkit/fifo",
                                            "refs/heads/plugkit/symref"])
    assert git(r, "rev-parse", "main").strip() == main and victim.read_text() == "mine\n" and tmp_path.is_dir()
    assert sorted(os.listdir(heads)) == ["w1"]  # the real branch stays
