"""A worktree that starts ready (issue 48 #1), through the real runner, real git, real bwrap and
the scripted command worker: the untracked files work_include and .worktreeinclude name are in
it, the dirs work_share names are copies, work_setup ran in the worker's sandbox first (its
failure holds the item with its output), and an include reaching outside the repository is
refused before any worker starts."""

import json
import os
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import git, make_repo
from tests.support.attempts import home_with_a_key

pytestmark = pytest.mark.e2e

SETTINGS = ('work_include = [".env"]\nwork_share = ["node_modules"]\n'
            # Code from the repo: in the sandbox it cannot read the credential, nor the runner's token.
            'work_setup = "echo setup ran > setup.out; cat ~/.ssh/id_rsa >> setup.out 2>/dev/null; '
            'cat $PLUGKIT_HOME/token >> setup.out 2>/dev/null; true"\n')


def ready_repo(tmp_path: Path, settings: str) -> Path:
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n' + settings)
    (repo / ".gitignore").write_text(".env\nconfig/local.toml\nnode_modules/\n")
    (repo / ".worktreeinclude").write_text("# copied into each worktree\nconfig/local.toml\n")
    git(repo, "add", ".gitignore", ".worktreeinclude")
    git(repo, "commit", "-qm", "ignore local files")
    (repo / ".env").write_text("SECRET_FOR_DEV=42\n")
    os.chmod(repo / ".env", 0o600)
    (repo / "config").mkdir()
    (repo / "config" / "local.toml").write_text("debug = true\n")
    (repo / "node_modules" / "left-pad").mkdir(parents=True)
    (repo / "node_modules" / "left-pad" / "index.js").write_text("module.exports = 1\n")
    return repo


def test_a_worker_starts_with_its_files_its_shared_dirs_and_its_setup_done(home, tmp_path):
    repo = ready_repo(tmp_path, SETTINGS)
    w = Work(home, repo, {"w1": [
        ["shell", "cat .env config/local.toml setup.out > seen.txt; stat -c %a .env >> seen.txt; "
                  "ls node_modules/left-pad >> seen.txt; echo changed > node_modules/left-pad/index.js"],
        *commit_file("w1.txt")]})
    w.env["HOME"] = str(home_with_a_key(tmp_path / "user"))
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("completed", "landed"), run
    seen = (repo / "seen.txt").read_text().splitlines()
    assert seen == ["SECRET_FOR_DEV=42", "debug = true", "setup ran", "600", "index.js"], seen
    # A copy, never the main checkout's own dir: the worker's write stayed in its worktree.
    assert (repo / "node_modules" / "left-pad" / "index.js").read_text() == "module.exports = 1\n"
    # Its `git add -A` took none of them: the included files stay out of its branch.
    tree = git(repo, "ls-tree", "-r", "--name-only", "main").split()
    assert ".env" not in tree and "node_modules/left-pad/index.js" not in tree, tree
    assert it["setup_task_id"] is not None, it
    trace = w.cli("work", "trace", "w1").stdout
    assert f"work_setup ran (task_{it['setup_task_id']})" in trace and "copied 2 files" in trace, trace


def test_a_failing_setup_holds_the_item_with_its_output_and_no_worker_starts(home, tmp_path):
    repo = ready_repo(tmp_path, 'work_setup = "echo installing; echo npm ERR! no such package >&2; exit 3"\n')
    w = Work(home, repo, {"w1": [["write", "started.txt", "x"], *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "setup_failed"), run
    assert "exited with code 3" in it["message"] and "npm ERR! no such package" in it["message"], it
    assert it["task_id"] is None and it["setup_task_id"] is not None, it  # the worker never started
    assert w.prd()["w1"]["status"] == "blocked"
    shown = w.cli("work", "status", ok=False).stdout
    assert "plugkit work --items w1" in shown and "npm ERR!" in shown, shown


def link_to_the_key(repo: Path, user: Path, home) -> str:
    (repo / ".env").unlink()
    (repo / ".env").symlink_to(user / ".ssh" / "id_rsa")
    return ".env is a symbolic link"


def link_to_the_token(repo: Path, user: Path, home) -> str:
    (repo / ".env").unlink()
    (repo / ".env").symlink_to(Path(home.path) / "token")
    return ".env is a symbolic link"


def climbing_pattern(repo: Path, user: Path, home) -> str:
    (repo / ".worktreeinclude").write_text("../../etc/passwd\n")
    return "../../etc/passwd"


def linked_dir(repo: Path, user: Path, home) -> str:
    os.rename(repo / "config", repo / "config-real")
    (repo / "config").symlink_to(user / ".ssh")  # config/local.toml would be read through it
    (user / ".ssh" / "local.toml").write_text("stolen\n")
    return "config"


def test_an_include_reaching_outside_the_repository_is_refused(home, tmp_path):
    user = home_with_a_key(tmp_path / "user")
    # One runner, one workspace per attack: each is refused before any worktree exists.
    for attack in (link_to_the_key, link_to_the_token, climbing_pattern, linked_dir):
        (tmp_path / attack.__name__).mkdir()
        repo = ready_repo(tmp_path / attack.__name__, 'work_include = [".env"]\n')
        w = Work(home, repo, {"w1": [["shell", "cat .env config/local.toml > seen.txt"], *commit_file("w1.txt")]})
        w.env["HOME"] = str(user)
        w.add("w1", "--verify", "test -f w1.txt")
        named = attack(repo, user, home)
        w.start()
        run = w.until(lambda r: r["ended_at"] is not None)
        it = w.items(run)["w1"]
        assert (it["state"], it["reason"]) == ("rejected", "not_ready"), (attack.__name__, run)
        assert named in it["message"] and "\n" not in it["message"], (attack.__name__, it["message"])
        assert it["task_id"] is None, it  # no worker started
        assert not (repo / "seen.txt").exists() and not (repo / ".plugkit" / "worktrees" / "w1").exists()
        assert "BEGIN" not in json.dumps(run) and "stolen" not in json.dumps(run)


def test_a_worker_cannot_land_a_change_to_what_reaches_later_workers(home, tmp_path):
    repo = ready_repo(tmp_path, "")
    w = Work(home, repo, {"w1": [["write", ".worktreeinclude", "config/local.toml\nsecrets/*\n"],
                                 *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert it["reason"] in ("control_files", "replan") and ".worktreeinclude" in (it["message"] or ""), it
    assert (repo / ".worktreeinclude").read_text() == "# copied into each worktree\nconfig/local.toml\n"
