"""runner.core.work.git against real git in tmp repos: worktrees, integrate, land, roll back."""

import asyncio
import os
import shutil
import subprocess
import time

import psutil

import pytest

from runner.core.work import git as wg
from runner.core.work.git import GitError, MergeConflict


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


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
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


@pytest.fixture
def repo(tmp_path):
    root = str(tmp_path / "repo")
    os.makedirs(root)
    g(root, "init", "-q")
    commit(root, "f.txt", LINES, "init")
    return root


@pytest.fixture
def item(repo, tmp_path):
    """A worker's worktree on plugkit/a, made from main's tip."""
    async def make(name="a", excludes=()):
        path = str(tmp_path / "wt" / name)
        await wg.add_worktree(repo, path, f"plugkit/{name}", g(repo, "rev-parse", "HEAD"), list(excludes))
        return path
    return make


def test_errors_are_one_line_whatever_they_quote():
    err = MergeConflict("rebase conflicts in a\nb:  fix\n", ["a\nb"])
    assert str(err) == "rebase conflicts in a b: fix" and err.files == ["a\nb"]


def one_line(err):
    assert "\n" not in str(err), str(err)
    return str(err)


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
    monkeypatch.setattr(wg, "TIMEOUT_S", 0.5)
    pidfile = tmp_path / "pid"
    with pytest.raises(GitError) as e:
        await wg.run(repo, "-c", f"alias.hang=!echo $$ > {pidfile}; exec sleep 600", "hang")
    assert "took over" in one_line(e.value)
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


# --- integrate ---------------------------------------------------------------------------------

async def test_integrate_ff_when_main_did_not_move(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    got = await wg.integrate(repo, path, "plugkit/a", "main", "ff", "m")
    assert got == wg.Integrated(work, False)


async def test_integrate_ff_rebases_a_diverged_branch(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    t = commit(repo, "f.txt", edited(1, "person"))
    got = await wg.integrate(repo, path, "plugkit/a", "main", "ff", "m")
    assert got.changed and got.sha != work
    assert g(repo, "merge-base", "--is-ancestor", t, got.sha, check=False) == ""
    assert g(path, "rev-parse", "HEAD") == got.sha == g(repo, "rev-parse", "plugkit/a")
    assert read(os.path.join(path, "f.txt")) == edited(1, "person").replace("line 9\n", "worker\n")


async def test_integrate_ff_conflict_aborts_the_rebase(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(5, "worker"))
    commit(repo, "f.txt", edited(5, "person"))
    with pytest.raises(MergeConflict) as e:
        await wg.integrate(repo, path, "plugkit/a", "main", "ff", "m")
    assert e.value.files == ["f.txt"]
    one_line(e.value)
    assert await wg.dirty(path) == []
    assert g(path, "symbolic-ref", "--short", "HEAD") == "plugkit/a"
    assert g(path, "rev-parse", "HEAD") == work
    assert not os.path.exists(os.path.join(g(path, "rev-parse", "--absolute-git-dir"), "rebase-merge"))


@pytest.mark.parametrize("old_git", [False, True])
async def test_integrate_merge_makes_a_merge_commit_checked_out_in_the_worktree(
        repo, item, monkeypatch, old_git):
    if old_git:  # git < 2.38: no merge-tree --write-tree, so the merge happens in the worktree
        async def old(root):
            return (2, 37)
        monkeypatch.setattr(wg, "_git_version", old)
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    t = commit(repo, "f.txt", edited(1, "person"))
    got = await wg.integrate(repo, path, "plugkit/a", "main", "merge", "plugkit: item a")
    assert got.changed
    assert g(repo, "rev-parse", f"{got.sha}^1", f"{got.sha}^2").split() == [t, work]
    assert g(repo, "log", "-1", "--format=%s", got.sha) == "plugkit: item a"
    assert g(path, "symbolic-ref", "-q", "HEAD", check=False) == ""  # detached
    assert g(path, "rev-parse", "HEAD") == got.sha
    assert await wg.dirty(path) == []
    assert g(repo, "rev-parse", "main", "plugkit/a").split() == [t, work]


async def test_integrate_merge_checks_out_exactly_the_merge_not_uncommitted_edits(repo, item):
    path = await item()
    commit(path, "f.txt", edited(9, "worker"))
    write(os.path.join(path, "f.txt"), "left uncommitted: never lands, so never verified\n")
    got = await wg.integrate(repo, path, "plugkit/a", "main", "merge", "m")
    assert g(path, "rev-parse", "HEAD") == got.sha and await wg.dirty(path) == []
    assert read(os.path.join(path, "f.txt")) == edited(9, "worker")


async def test_integrate_ff_refuses_to_rebase_over_uncommitted_edits(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    commit(repo, "g.txt", "person")
    write(os.path.join(path, "f.txt"), "left uncommitted\n")
    with pytest.raises(GitError) as e:
        await wg.integrate(repo, path, "plugkit/a", "main", "ff", "m")
    assert not isinstance(e.value, MergeConflict)
    one_line(e.value)
    assert g(path, "rev-parse", "HEAD") == work and read(os.path.join(path, "f.txt")) == "left uncommitted\n"


async def test_integrate_ff_reports_a_conflict_rerere_would_stage(repo, item):
    # A person's rerere.autoUpdate would stage a recorded resolution: still a conflict for us.
    g(repo, "config", "rerere.enabled", "true")
    g(repo, "config", "rerere.autoUpdate", "true")
    path = await item()
    commit(path, "f.txt", edited(5, "worker"))
    commit(repo, "f.txt", edited(5, "person"))
    for _ in range(2):  # the first conflict records a resolution, the second would reuse it
        with pytest.raises(MergeConflict):
            await wg.integrate(repo, path, "plugkit/a", "main", "ff", "m")
        g(path, "rebase", "main", check=False)
        write(os.path.join(path, "f.txt"), edited(5, "resolved"))
        g(path, "add", "f.txt")
        g(path, "-c", "core.editor=true", "rebase", "--continue")  # rerere records it
        g(path, "reset", "-q", "--hard", "ORIG_HEAD")
    assert await wg.dirty(path) == []


async def test_integrate_merge_even_when_main_did_not_move(repo, item):
    path = await item()
    t = g(repo, "rev-parse", "main")
    work = commit(path, "f.txt", edited(9, "worker"))
    got = await wg.integrate(repo, path, "plugkit/a", "main", "merge", "m")
    assert g(repo, "rev-parse", f"{got.sha}^1", f"{got.sha}^2").split() == [t, work]


@pytest.mark.parametrize("old_git", [False, True])
async def test_integrate_merge_conflict_changes_nothing(repo, item, monkeypatch, old_git):
    if old_git:
        async def old(root):
            return (2, 37)
        monkeypatch.setattr(wg, "_git_version", old)
    path = await item()
    work = commit(path, "f.txt", edited(5, "worker"))
    t = commit(repo, "f.txt", edited(5, "person"))
    with pytest.raises(MergeConflict) as e:
        await wg.integrate(repo, path, "plugkit/a", "main", "merge", "m")
    assert e.value.files == ["f.txt"]
    one_line(e.value)
    assert g(repo, "rev-parse", "main", "plugkit/a").split() == [t, work]
    assert g(path, "symbolic-ref", "--short", "HEAD") == "plugkit/a"
    assert await wg.dirty(path) == [] and await wg.dirty(repo) == []


async def test_integrate_refuses_an_unknown_mode(repo, item):
    path = await item()
    with pytest.raises(GitError):
        await wg.integrate(repo, path, "plugkit/a", "main", "squash", "m")


# --- advance -----------------------------------------------------------------------------------

async def test_advance_lands_and_updates_the_persons_files(repo, item):
    commit(repo, "g.txt", "person's\n")
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    write(os.path.join(repo, "g.txt"), "the person's edit, elsewhere\n")
    await wg.advance(repo, "main", work)
    assert g(repo, "rev-parse", "main") == work
    assert read(os.path.join(repo, "f.txt")) == edited(9, "worker")
    assert await wg.dirty(repo) == ["g.txt"]  # an edit the landing does not touch stays


async def test_advance_refuses_when_main_moved(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    t = commit(repo, "g.txt", "person")
    with pytest.raises(MergeConflict) as e:
        await wg.advance(repo, "main", work)
    assert e.value.files == [] and "moved" in one_line(e.value)
    assert g(repo, "rev-parse", "main") == t and read(os.path.join(repo, "f.txt")) == LINES


@pytest.mark.parametrize("tracked", [True, False])
async def test_advance_keeps_the_persons_uncommitted_edit(repo, item, tracked):
    path = await item()
    name = "f.txt" if tracked else "new.txt"
    work = commit(path, name, edited(9, "worker"))
    write(os.path.join(repo, name), "the person's edit\n")
    with pytest.raises(MergeConflict) as e:
        await wg.advance(repo, "main", work)
    assert e.value.files == [name] and "commit or stash" in one_line(e.value)
    assert read(os.path.join(repo, name)) == "the person's edit\n"
    assert g(repo, "rev-parse", "main") != work


async def test_advance_refuses_another_checked_out_branch(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    g(repo, "switch", "-q", "-c", "elsewhere")
    with pytest.raises(GitError) as e:
        await wg.advance(repo, "main", work)
    assert not isinstance(e.value, MergeConflict)
    assert "elsewhere" in one_line(e.value) and "git switch main" in str(e.value)


# --- the parallel case -------------------------------------------------------------------------

@pytest.mark.parametrize("mode", ["ff", "merge"])
async def test_two_items_from_one_base_both_land(repo, item, mode):
    a, b = await item("a"), await item("b")
    commit(a, "f.txt", edited(2, "A"))
    commit(b, "f.txt", edited(9, "B"))
    first = await wg.integrate(repo, a, "plugkit/a", "main", mode, "a")
    await wg.advance(repo, "main", first.sha)
    second = await wg.integrate(repo, b, "plugkit/b", "main", mode, "b")
    assert second.changed
    await wg.advance(repo, "main", second.sha)
    assert read(os.path.join(repo, "f.txt")) == edited(2, "A").replace("line 9\n", "B\n")


# --- rollback ----------------------------------------------------------------------------------

async def land(repo, path, branch, mode, files):
    for name, text in files:
        commit(path, name, text)
    got = await wg.integrate(repo, path, branch, "main", mode, f"land {branch}")
    before = g(repo, "rev-parse", "main")
    await wg.tag(repo, f"plugkit-pre/{branch}", before)
    await wg.advance(repo, "main", got.sha)
    return before, got.sha


@pytest.mark.parametrize("mode", ["ff", "merge"])
async def test_rollback_resets_when_nothing_came_after(repo, item, mode):
    path = await item()
    before, landed = await land(repo, path, "plugkit/a", mode, [("f.txt", edited(9, "w")), ("n", "n")])
    write(os.path.join(repo, "notes.txt"), "the person's edit")  # untouched by the item: kept
    new = await wg.rollback(repo, "main", "plugkit-pre/plugkit/a", landed, mode)
    assert new == before == g(repo, "rev-parse", "main")
    assert read(os.path.join(repo, "f.txt")) == LINES and not os.path.exists(os.path.join(repo, "n"))
    assert read(os.path.join(repo, "notes.txt")) == "the person's edit"


@pytest.mark.parametrize("mode", ["ff", "merge"])
async def test_rollback_reverts_under_later_work(repo, item, mode):
    path = await item()
    _, landed = await land(repo, path, "plugkit/a", mode, [("f.txt", edited(9, "w")), ("n", "n")])
    later = commit(repo, "f.txt", edited(1, "later").replace("line 9\n", "w\n"))
    new = await wg.rollback(repo, "main", "plugkit-pre/plugkit/a", landed, mode)
    assert g(repo, "merge-base", "--is-ancestor", later, new, check=False) == ""
    assert read(os.path.join(repo, "f.txt")) == edited(1, "later")
    assert not os.path.exists(os.path.join(repo, "n"))
    assert await wg.dirty(repo) == []


@pytest.mark.parametrize("mode", ["ff", "merge"])
async def test_rollback_conflicting_revert_is_aborted(repo, item, mode):
    path = await item()
    _, landed = await land(repo, path, "plugkit/a", mode, [("f.txt", edited(9, "w"))])
    later = commit(repo, "f.txt", edited(9, "later"))
    with pytest.raises(MergeConflict) as e:
        await wg.rollback(repo, "main", "plugkit-pre/plugkit/a", landed, mode)
    assert e.value.files == ["f.txt"]
    one_line(e.value)
    assert g(repo, "rev-parse", "main") == later and await wg.dirty(repo) == []
    gitdir = g(repo, "rev-parse", "--absolute-git-dir")
    assert not any(os.path.exists(os.path.join(gitdir, n)) for n in ("REVERT_HEAD", "sequencer"))


async def test_rollback_reset_refuses_to_clobber_the_persons_edit(repo, item):
    path = await item()
    _, landed = await land(repo, path, "plugkit/a", "ff", [("f.txt", edited(9, "w"))])
    write(os.path.join(repo, "f.txt"), "the person's edit\n")
    with pytest.raises(GitError) as e:
        await wg.rollback(repo, "main", "plugkit-pre/plugkit/a", landed, "ff")
    one_line(e.value)
    assert read(os.path.join(repo, "f.txt")) == "the person's edit\n"
    assert g(repo, "rev-parse", "main") == landed


async def test_rollback_without_its_tag_changes_nothing(repo, item):
    path = await item()
    _, landed = await land(repo, path, "plugkit/a", "ff", [("f.txt", edited(9, "w"))])
    g(repo, "tag", "-d", "plugkit-pre/plugkit/a")
    with pytest.raises(GitError) as e:
        await wg.rollback(repo, "main", "plugkit-pre/plugkit/a", landed, "ff")
    assert "plugkit-pre/plugkit/a" in one_line(e.value)
    assert g(repo, "rev-parse", "main") == landed and await wg.dirty(repo) == []
