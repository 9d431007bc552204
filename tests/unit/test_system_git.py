"""runner.system.git, the runner's one way to run git, against real git in tmp repos: both of its
users (plugkit work's git, the gates' status check) get the same environment rule."""

import os

import psutil
import pytest

from runner.core.gates.witness import git_facts
from runner.system import git as system_git
from tests.support.git_repos import commit, g, main_repo, person_git
from tests.support.load import stretched


@pytest.fixture(autouse=True)
def gitenv(tmp_path, monkeypatch):
    return person_git(tmp_path, monkeypatch)


@pytest.fixture
def repo(tmp_path):
    return main_repo(tmp_path)


def commit_other(monkeypatch, repo: str) -> None:
    """A second repository that a hook's inherited GIT_DIR/GIT_INDEX_FILE point at, with its own head."""
    path = os.path.join(os.path.dirname(repo), "other")
    os.makedirs(path)
    g(path, "init", "-q", "-b", "elsewhere")
    commit(path, "x", "x")
    monkeypatch.setenv("GIT_DIR", os.path.join(path, ".git"))
    monkeypatch.setenv("GIT_INDEX_FILE", os.path.join(path, ".git", "index"))


async def test_the_gates_status_check_reads_the_workspace_not_an_inherited_git_dir(repo, monkeypatch):
    # Before one adapter, the gates' git kept GIT_DIR: a hook inheriting it checked another repository.
    ours = g(repo, "rev-parse", "HEAD")
    g(repo, "checkout", "-q", "-b", "feature")
    commit_other(monkeypatch, repo)
    facts = await git_facts(repo)
    assert facts.repo and facts.error is None, facts
    assert facts.head == ours


async def test_one_environment_rule(monkeypatch):
    monkeypatch.setenv("GIT_WORK_TREE", "/nowhere")
    env = system_git.environment()
    assert not set(system_git.REPO_ENV) & set(env)
    assert env["GIT_TERMINAL_PROMPT"] == "0" and env["GIT_OPTIONAL_LOCKS"] == "0" and env["LC_ALL"] == "C"


async def test_a_git_that_cannot_start_is_an_os_error(tmp_path):
    with pytest.raises(OSError):
        await system_git.run(str(tmp_path / "missing"), "status")


def test_the_synchronous_face_kills_what_git_started_on_its_timeout(tmp_path):
    # Search's indexer threads run git through run_sync: an alias or hook git starts dies with it.
    pidfile = tmp_path / "pid"
    with pytest.raises(system_git.GitTimeout):
        system_git.run_sync(str(tmp_path), "-c", f"alias.hang=!echo $$ > {pidfile}; exec sleep 600", "hang",
                            timeout=stretched(2.0))  # git and the alias's shell start within it, loaded or not
    assert pidfile.exists(), "the alias's shell had not started when the timeout came"
    try:  # the SIGKILL lands: dead, or a zombie its reaper has not collected yet
        proc = psutil.Process(int(pidfile.read_text()))
        proc.wait(timeout=10)
    except psutil.NoSuchProcess:
        pass
    except psutil.TimeoutExpired:
        assert proc.status() == psutil.STATUS_ZOMBIE


async def test_the_status_check_runs_no_fsmonitor_a_repository_names(repo, tmp_path):
    # `git status` runs core.fsmonitor; a repository a worker made in its worktree can name one.
    marker = tmp_path / "ran"
    hook = tmp_path / "fsmonitor.sh"
    hook.write_text(f"#!/bin/sh\necho ran >> {marker}\n")
    hook.chmod(0o755)
    g(repo, "config", "core.fsmonitor", str(hook))
    facts = await git_facts(repo)
    assert facts.repo and not marker.exists()


async def test_no_git_runs_in_a_repository_a_worker_made_inside_its_worktree(repo, tmp_path):
    # Its .git/config is the worker's: a clean filter `git status` runs, an fsmonitor, an alias.
    worktree = os.path.join(repo, ".plugkit", "worktrees", "w1")
    nested = os.path.join(worktree, "vendor", "lib")
    os.makedirs(nested)
    g(nested, "init", "-q")
    marker = tmp_path / "ran"
    with open(os.path.join(nested, ".gitattributes"), "w") as fh:
        fh.write("* filter=x\n")
    with open(os.path.join(nested, "a.py"), "w") as fh:
        fh.write("a\n")
    g(nested, "config", "filter.x.clean", f"sh -c 'echo ran >> {marker}; cat'")
    assert system_git.sandbox_made(os.path.join(nested, "deeper")) == os.path.realpath(nested)
    assert system_git.sandbox_made(worktree) is None and system_git.sandbox_made(repo) is None
    with pytest.raises(system_git.NotOurs):
        await system_git.run(nested, "status")
    with pytest.raises(system_git.NotOurs):
        system_git.run_sync(nested, "add", "-A")
    facts = await git_facts(nested)
    assert facts.error and "sandboxed worker" in facts.error
    assert not marker.exists()


def test_the_node_sides_git_reads_the_clone_not_an_inherited_git_dir(repo, monkeypatch):
    # The Ray node side ran git with the Ray worker's environment as it was: a GIT_DIR there sent
    # its fetches and worktrees to another repository. Its blocking face keeps the same rule.
    from runner.node import clone

    ours = g(repo, "rev-parse", "HEAD")
    commit_other(monkeypatch, repo)
    assert system_git.run_sync(repo, "rev-parse", "HEAD").out.decode().strip() == ours
    assert clone.git(repo, "rev-parse", "HEAD").decode().strip() == ours
    with pytest.raises(RuntimeError, match=r"^git rev-parse no-such: fatal: ambiguous argument"):
        clone.git(repo, "rev-parse", "no-such")

