"""runner.core.work.git against real git in tmp repos: running git, the start point, worktrees,
small queries (landing and rolling back: test_work_git_landing.py)."""

import asyncio
import os
import shutil
import time

import psutil

import pytest

from runner.core.work import git as wg
from runner.core.work.git import GitError, MergeConflict
from tests.support.git_repos import commit, edited, g, main_repo, one_line, person_git, worktree_maker, write
from tests.support.load import stretched


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


@pytest.fixture
def repo(tmp_path):
    return main_repo(tmp_path)


@pytest.fixture
def item(repo, tmp_path):
    return worktree_maker(repo, tmp_path)



def test_errors_are_one_line_whatever_they_quote():
    err = MergeConflict("rebase conflicts in a\nb:  fix\n", ["a\nb"])
    assert str(err) == "rebase conflicts in a b: fix" and err.files == ["a\nb"]


# --- run ---------------------------------------------------------------------------------------

async def test_run_check_false_returns_stdout_and_failure_is_one_line(repo):
    assert await wg.run(repo, "rev-parse", "--verify", "-q", "nope", check=False) == ""
    with pytest.raises(GitError) as e:
        await wg.run(repo, "rev-parse", "--verify", "nope")
    assert "git -C" in one_line(e.value)


async def test_run_ignores_a_git_dir_pointing_at_another_repo(repo, tmp_path, monkeypatch):
    # A hook that calls us inherits GIT_DIR; obeying it would act on the wrong repository.
    other = str(tmp_path / "other")
    os.makedirs(other)
    g(other, "init", "-q", "-b", "elsewhere")
    commit(other, "x", "x")
    monkeypatch.setenv("GIT_DIR", os.path.join(other, ".git"))
    assert (await wg.start_point(repo))[0] == "main"


def gone(pid):
    """True once pid is dead (a zombie waiting for its reaper counts as dead)."""
    try:
        proc = psutil.Process(pid)
        for _ in range(100):
            if proc.status() == psutil.STATUS_ZOMBIE:
                return True
            time.sleep(0.05)
        return False
    except psutil.NoSuchProcess:
        return True


async def test_run_times_out_and_kills_what_git_started(repo, monkeypatch, tmp_path):
    # A hook or alias git runs must die with it, or it holds the repo's locks after we gave up.
    monkeypatch.setattr(wg, "TIMEOUT_S", stretched(2.0))  # git and the alias's shell start within it, loaded or not
    pidfile = tmp_path / "pid"
    with pytest.raises(GitError) as e:
        await wg.run(repo, "-c", f"alias.hang=!echo $$ > {pidfile}; exec sleep 600", "hang")
    assert "took over" in one_line(e.value)
    assert pidfile.exists(), "the alias's shell had not started when the timeout came"
    assert gone(int(pidfile.read_text()))


async def test_run_feeds_input(repo, tmp_path):
    write(str(tmp_path / "hello"), "hello\n")
    sha = await wg.run(repo, "hash-object", "--stdin", input=b"hello\n")
    assert sha == g(repo, "hash-object", str(tmp_path / "hello"))


# --- start_point -------------------------------------------------------------------------------

async def test_start_point_reads_branch_and_tip(repo):
    assert await wg.start_point(repo) == ("main", g(repo, "rev-parse", "HEAD"))


async def test_start_point_refuses_outside_a_repo(tmp_path):
    with pytest.raises(GitError) as e:
        await wg.start_point(str(tmp_path))
    assert "git init" in one_line(e.value)


async def test_start_point_refuses_detached_head(repo):
    g(repo, "checkout", "-q", "--detach")
    with pytest.raises(GitError) as e:
        await wg.start_point(repo)
    assert "detached" in one_line(e.value) and "git switch" in str(e.value)


async def test_start_point_refuses_unborn_branch(tmp_path):
    root = str(tmp_path / "empty")
    os.makedirs(root)
    g(root, "init", "-q")
    with pytest.raises(GitError) as e:
        await wg.start_point(root)
    assert "no commit yet" in one_line(e.value)


async def test_start_point_refuses_a_merge_in_progress(repo):
    g(repo, "switch", "-q", "-c", "side")
    commit(repo, "f.txt", edited(3, "side"))
    g(repo, "switch", "-q", "main")
    commit(repo, "f.txt", edited(3, "main"))
    g(repo, "merge", "side", check=False)
    with pytest.raises(GitError) as e:
        await wg.start_point(repo)
    assert "a merge is in progress" in one_line(e.value) and "--abort" in str(e.value)


async def test_start_point_refuses_a_rebase_in_progress(repo):
    g(repo, "switch", "-q", "-c", "side")
    commit(repo, "f.txt", edited(3, "side"))
    g(repo, "switch", "-q", "main")
    commit(repo, "f.txt", edited(3, "main"))
    g(repo, "switch", "-q", "side")
    g(repo, "rebase", "main", check=False)
    with pytest.raises(GitError) as e:  # a stopped rebase is also a detached HEAD: either refusal
        await wg.start_point(repo)
    one_line(e.value)


# --- add_worktree / remove_worktree ------------------------------------------------------------

async def test_add_worktree_branches_from_base(repo, tmp_path):
    base = g(repo, "rev-parse", "HEAD")
    commit(repo, "later.txt", "later")
    path = str(tmp_path / "wt")
    await wg.add_worktree(repo, path, "plugkit/a", base, [])
    assert g(path, "rev-parse", "HEAD") == base
    assert g(path, "symbolic-ref", "--short", "HEAD") == "plugkit/a"
    assert g(repo, "symbolic-ref", "--short", "HEAD") == "main"


async def test_add_worktree_takes_a_path_relative_to_root(repo):
    # The engine keeps worktrees inside the workspace: .plugkit/worktrees/<item>.
    await wg.add_worktree(repo, ".plugkit/worktrees/a", "plugkit/a", "main", [])
    path = os.path.join(repo, ".plugkit", "worktrees", "a")
    assert g(path, "symbolic-ref", "--short", "HEAD") == "plugkit/a"
    await wg.remove_worktree(repo, ".plugkit/worktrees/a")
    assert not os.path.exists(path) and "plugkit/a" in g(repo, "branch", "--list", "plugkit/a")


async def test_add_worktree_retry_resets_branch_over_a_stale_worktree(repo, item):
    path = await item()
    commit(path, "half.txt", "half done")
    write(os.path.join(path, "loose.txt"), "uncommitted")
    path = await item()  # registered and dirty: removed, branch reset
    assert g(path, "rev-parse", "HEAD") == g(repo, "rev-parse", "main")
    assert await wg.dirty(path) == []
    shutil.rmtree(path)  # a crash that lost the directory but not the registration
    path = await item()
    assert os.path.exists(os.path.join(path, "f.txt"))


async def test_excludes_apply_in_the_worktree_only(repo, item):
    path = await item(excludes=["/.claude/settings.json"])
    for where in (path, repo):
        write(os.path.join(where, ".claude", "settings.json"), "{}")
    write(os.path.join(path, ".claude", "other.json"), "{}")
    g(path, "add", "-A")
    assert g(path, "diff", "--cached", "--name-only").split() == [".claude/other.json"]
    assert "?? .claude/" in g(repo, "status", "--porcelain")


@pytest.mark.parametrize("where", ["xdg", "configured"])
async def test_the_persons_own_excludes_still_apply_in_the_worktree(repo, item, gitenv, where):
    if where == "xdg":
        write(str(gitenv / ".config" / "git" / "ignore"), "*.log\n")
    else:
        write(str(gitenv / "my-ignore"), "*.log\n")
        g(repo, "config", "--global", "core.excludesFile", "~/my-ignore")
    path = await item(excludes=["/secret"])
    write(os.path.join(path, "debug.log"), "x")
    write(os.path.join(path, "secret"), "x")
    write(os.path.join(path, "kept.txt"), "x")
    g(path, "add", "-A")
    assert g(path, "diff", "--cached", "--name-only").split() == ["kept.txt"]


async def test_parallel_items_start_together(repo, item):
    # Three slots start at once: the first-time config write must not fail on git's config lock.
    paths = await asyncio.gather(*(item(n, ["/x"]) for n in "abc"))
    for n, path in zip("abc", paths):
        assert g(path, "symbolic-ref", "--short", "HEAD") == f"plugkit/{n}"
        assert g(path, "config", "--worktree", "core.excludesFile").endswith("plugkit-excludes")


async def test_remove_worktree_keeps_the_branch_and_tolerates_missing(repo, item, tmp_path):
    path = await item()
    tip = commit(path, "work.txt", "w")
    await wg.remove_worktree(repo, path)
    assert not os.path.exists(path)
    assert g(repo, "rev-parse", "plugkit/a") == tip
    await wg.remove_worktree(repo, path)
    await wg.remove_worktree(repo, str(tmp_path / "never"))


# --- small queries -----------------------------------------------------------------------------

async def test_commits_ahead_dirty_and_tip(repo, item):
    path = await item()
    assert await wg.commits_ahead(repo, "main", "plugkit/a") == 0
    commit(path, "a.txt", "a")
    commit(path, "b.txt", "b")
    assert await wg.commits_ahead(repo, "main", "plugkit/a") == 2
    write(os.path.join(path, "new", "deep.txt"), "x")
    write(os.path.join(path, "f.txt"), "changed")
    g(path, "mv", "a.txt", "renamed.txt")
    assert await wg.dirty(path) == ["f.txt", "new/deep.txt", "renamed.txt"]
    assert await wg.tip(repo, "plugkit/a") == g(path, "rev-parse", "HEAD")
    with pytest.raises(GitError) as e:
        await wg.tip(repo, "no-such")
    one_line(e.value)


async def test_a_workers_attributes_never_run_the_persons_filters_on_its_files(repo, item, tmp_path):
    # The person's filter drivers are theirs; which files they run on is the worker's .gitattributes.
    path = await item()
    write(os.path.join(path, ".gitattributes"), "* filter=lfsish\n")
    commit(path, "a.txt", "a")
    marker = tmp_path / "filter-ran"
    g(repo, "config", "filter.lfsish.clean", f"sh -c 'echo ran >> {marker}; cat'")
    g(repo, "config", "filter.lfsish.process", f"sh -c 'echo ran >> {marker}'")
    g(repo, "config", "filter.lfsish.required", "true")
    write(os.path.join(path, "a.txt"), "changed by the worker")
    assert await wg.worker_dirty(path) == ["a.txt"]
    assert not marker.exists()
