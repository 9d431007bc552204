"""runner.core.work.git against real git in tmp repos: integrate, land, the parallel case, roll back.

Integrating never touches the worker's worktree (its files, its HEAD, its git state are the
worker's, issue 40): what needs a checkout is done in a runner-owned one, `<worktree>.check` here."""

import os

import pytest

from runner.core.work import git as wg
from runner.core.work.git import GitError, MergeConflict
from tests.support.git_repos import LINES, commit, edited, g, main_repo, one_line, person_git, read, worktree_maker, write


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


@pytest.fixture
def repo(tmp_path):
    return main_repo(tmp_path)


@pytest.fixture
def item(repo, tmp_path):
    return worktree_maker(repo, tmp_path)



# --- integrate ---------------------------------------------------------------------------------

async def test_integrate_ff_when_main_did_not_move(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    got = await wg.integrate(repo, path + ".check", "plugkit/a", "main", "ff", "m")
    assert got == wg.Integrated(work, False)


async def test_integrate_ff_rebases_a_diverged_branch(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    t = commit(repo, "f.txt", edited(1, "person"))
    got = await wg.integrate(repo, path + ".check", "plugkit/a", "main", "ff", "m")
    assert got.changed and got.sha != work
    assert g(repo, "merge-base", "--is-ancestor", t, got.sha, check=False) == ""
    assert g(path + ".check", "rev-parse", "HEAD") == got.sha == g(repo, "rev-parse", "plugkit/a")
    assert read(os.path.join(path + ".check", "f.txt")) == edited(1, "person").replace("line 9\n", "worker\n")


async def test_integrate_ff_conflict_aborts_the_rebase(repo, item):
    path = await item()
    work = commit(path, "f.txt", edited(5, "worker"))
    commit(repo, "f.txt", edited(5, "person"))
    with pytest.raises(MergeConflict) as e:
        await wg.integrate(repo, path + ".check", "plugkit/a", "main", "ff", "m")
    assert e.value.files == ["f.txt"]
    one_line(e.value)
    assert await wg.dirty(path) == [] and await wg.dirty(path + ".check") == []
    assert g(path, "symbolic-ref", "--short", "HEAD") == "plugkit/a"
    assert g(path, "rev-parse", "HEAD") == work == g(repo, "rev-parse", "plugkit/a")
    assert not os.path.exists(os.path.join(g(path + ".check", "rev-parse", "--absolute-git-dir"), "rebase-merge"))


@pytest.mark.parametrize("old_git", [False, True])
async def test_integrate_merge_makes_a_merge_commit_and_leaves_the_worktree_alone(
        repo, item, monkeypatch, old_git):
    if old_git:  # git < 2.38: no merge-tree --write-tree, so the merge happens in the runner's checkout
        async def old(root):
            return (2, 37)
        monkeypatch.setattr(wg, "_git_version", old)
    path = await item()
    work = commit(path, "f.txt", edited(9, "worker"))
    t = commit(repo, "f.txt", edited(1, "person"))
    got = await wg.integrate(repo, path + ".check", "plugkit/a", "main", "merge", "plugkit: item a")
    assert got.changed
    assert g(repo, "rev-parse", f"{got.sha}^1", f"{got.sha}^2").split() == [t, work]
    assert g(repo, "log", "-1", "--format=%s", got.sha) == "plugkit: item a"
    assert g(path, "symbolic-ref", "-q", "HEAD") == "refs/heads/plugkit/a"  # the worker's, as it left it
    assert g(path, "rev-parse", "HEAD") == work
    assert await wg.dirty(path) == []
    assert g(repo, "rev-parse", "main", "plugkit/a").split() == [t, work]


@pytest.mark.parametrize("mode", ["ff", "merge"])
async def test_integrate_takes_the_commits_only_and_leaves_uncommitted_edits_where_they_are(repo, item, mode):
    path = await item()
    commit(path, "f.txt", edited(9, "worker"))
    commit(repo, "g.txt", "person\n")
    write(os.path.join(path, "f.txt"), "left uncommitted: never lands, so never verified\n")
    got = await wg.integrate(repo, path + ".check", "plugkit/a", "main", mode, "m")
    assert got.changed and g(repo, "show", f"{got.sha}:f.txt") + "\n" == edited(9, "worker")
    assert read(os.path.join(path, "f.txt")) == "left uncommitted: never lands, so never verified\n"


async def test_integrate_ff_reports_a_conflict_rerere_would_stage(repo, item):
    # A person's rerere.autoUpdate would stage a recorded resolution: still a conflict for us.
    g(repo, "config", "rerere.enabled", "true")
    g(repo, "config", "rerere.autoUpdate", "true")
    path = await item()
    commit(path, "f.txt", edited(5, "worker"))
    commit(repo, "f.txt", edited(5, "person"))
    for _ in range(2):  # the first conflict records a resolution, the second would reuse it
        with pytest.raises(MergeConflict):
            await wg.integrate(repo, path + ".check", "plugkit/a", "main", "ff", "m")
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
    got = await wg.integrate(repo, path + ".check", "plugkit/a", "main", "merge", "m")
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
        await wg.integrate(repo, path + ".check", "plugkit/a", "main", "merge", "m")
    assert e.value.files == ["f.txt"]
    one_line(e.value)
    assert g(repo, "rev-parse", "main", "plugkit/a").split() == [t, work]
    assert g(path, "symbolic-ref", "--short", "HEAD") == "plugkit/a"
    assert await wg.dirty(path) == [] and await wg.dirty(repo) == []
    if os.path.isdir(path + ".check"):  # the runner's checkout, when it needed one: no merge left in it
        assert await wg.dirty(path + ".check") == []


async def test_integrate_refuses_an_unknown_mode(repo, item):
    path = await item()
    with pytest.raises(GitError):
        await wg.integrate(repo, path + ".check", "plugkit/a", "main", "squash", "m")


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
    first = await wg.integrate(repo, a + ".check", "plugkit/a", "main", mode, "a")
    await wg.advance(repo, "main", first.sha)
    second = await wg.integrate(repo, b + ".check", "plugkit/b", "main", mode, "b")
    assert second.changed
    await wg.advance(repo, "main", second.sha)
    assert read(os.path.join(repo, "f.txt")) == edited(2, "A").replace("line 9\n", "B\n")


# --- rollback ----------------------------------------------------------------------------------

async def land(repo, path, branch, mode, files):
    for name, text in files:
        commit(path, name, text)
    got = await wg.integrate(repo, path + ".check", branch, "main", mode, f"land {branch}")
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
