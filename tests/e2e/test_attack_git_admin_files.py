"""A worker's worktree admin dir (.git/worktrees/<id>: HEAD, index, logs) is writable in its
sandbox, and the runner reads files there outside it: search's cheap "has HEAD moved" stamp opened
HEAD itself. A FIFO planted there held that open forever: the next `plugkit search` in the worktree
hung until the CLI gave up and said it had lost the runner (exit 69, the runner alive), and the
stuck thread kept the runner from stopping until it was killed. Through the real CLI, daemon and
git; the worktree where `plugkit work` puts a worker's."""

import os

import pytest

from tests.support.search_repo import commit, git

pytestmark = pytest.mark.e2e


def _worker_worktree(tmp_path, name: str, files: dict) -> tuple:
    """A project with one commit and a worker's worktree where `plugkit work` puts it."""
    main = tmp_path / "proj"
    main.mkdir()
    git(main, "init", "-q")
    commit(main, files, "first")
    worker = main / ".plugkit" / "worktrees" / name
    git(main, "worktree", "add", "-q", "-b", f"plugkit/{name}", str(worker))
    return main, worker


def test_a_fifo_for_the_worktrees_head_neither_hangs_search_nor_the_runners_stop(home, tmp_path):
    _, worker = _worker_worktree(tmp_path, "w1", {"src/a.py": "def alpha_handler(request):\n    return 1\n"})
    first = home.cli("search", "alpha_handler", cwd=worker)
    assert first.returncode == 0 and "src/a.py" in first.stdout, first.stderr
    admin = git(worker, "rev-parse", "--absolute-git-dir")
    os.unlink(os.path.join(admin, "HEAD"))
    os.mkfifo(os.path.join(admin, "HEAD"))  # what the worker can do in its sandbox
    (worker / "src" / "b.py").write_text("def beta_handler(request):\n    return 2\n")
    again = home.cli("search", "beta_handler", cwd=worker, timeout=120)
    assert again.returncode == 0 and "src/b.py" in again.stdout, (again.returncode, again.stderr)
    stop = home.cli("runner", "stop", timeout=120)
    assert stop.returncode == 0 and "killed" not in stop.stdout + stop.stderr, (stop.stdout, stop.stderr)


def test_the_runners_git_sweeps_a_workers_planted_head_instead_of_hanging_or_following_it(tmp_path):
    import asyncio

    from runner.system import git as system_git

    main, worker = _worker_worktree(tmp_path, "w2", {"a.txt": "a\n"})
    admin = git(worker, "rev-parse", "--absolute-git-dir")
    assert asyncio.run(system_git.registered(str(main), str(worker)))  # untouched: git runs
    os.unlink(os.path.join(admin, "HEAD"))
    os.mkfifo(os.path.join(admin, "HEAD"))
    # `git worktree list` reads every worktree's HEAD: it waited on the FIFO to its timeout, holding
    # the repository's worktree lock; now the FIFO is swept first (git never makes one there).
    assert asyncio.run(system_git.registered(str(main), str(worker)))  # answered, not waited out
    assert not os.path.lexists(os.path.join(admin, "HEAD"))
    victim = tmp_path / "victim.txt"
    victim.write_text("ORIGINAL\n")
    os.symlink(str(victim), os.path.join(admin, "HEAD"))  # a link: git would follow it out
    os.makedirs(os.path.join(admin, "logs"), exist_ok=True)
    if os.path.lexists(os.path.join(admin, "logs", "HEAD")):
        os.unlink(os.path.join(admin, "logs", "HEAD"))
    os.symlink(str(victim), os.path.join(admin, "logs", "HEAD"))
    with pytest.raises(system_git.GitError):
        asyncio.run(system_git.out(str(worker), "status", "--porcelain"))  # swept: no repository left
    assert not os.path.lexists(os.path.join(admin, "HEAD")) and not os.path.lexists(os.path.join(admin, "logs", "HEAD"))
    assert victim.read_text() == "ORIGINAL\n"


def test_a_nodes_clone_cache_sweeps_an_attempts_planted_head_before_its_worktree_git(tmp_path):
    """A Ray node's runner makes each attempt's worktree off its bare clone of the project
    (runner/node/clone.py: <node dir>/tmp/attempt-*/wt): `worktree prune` and `worktree add` for the
    next attempt read every attempt's HEAD, under the clone's lock."""
    from runner.node import clone

    src = tmp_path / "src"
    src.mkdir()
    git(src, "init", "-q")
    commit(src, {"a.txt": "a\n"}, "a")
    cache = tmp_path / "node" / "clones" / "p.git"
    git(tmp_path, "clone", "-q", "--bare", str(src), str(cache))
    wt = tmp_path / "node" / "tmp" / "attempt-1" / "wt"
    clone.git(str(cache), "worktree", "add", "-q", "--detach", str(wt), "HEAD")
    admin = git(wt, "rev-parse", "--absolute-git-dir")
    os.unlink(os.path.join(admin, "HEAD"))
    os.mkfifo(os.path.join(admin, "HEAD"))
    nxt = tmp_path / "node" / "tmp" / "attempt-2" / "wt"
    # The next attempt's worktree: git read attempt-1's HEAD and waited on the FIFO for its 300 s,
    # the clone's lock held; now the FIFO is swept first.
    clone.git(str(cache), "worktree", "add", "-q", "--detach", str(nxt), "HEAD")
    assert not os.path.lexists(os.path.join(admin, "HEAD")) and (nxt / "a.txt").exists()
