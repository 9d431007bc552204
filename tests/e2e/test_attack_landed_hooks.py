"""A worker's branch that commits an agent host's project hook configuration (.claude/settings.json,
.gemini/settings.json, an OpenCode plugin, ...) never lands: once merged into the person's checkout,
the person's own agent reads it when it starts there and runs its commands unsandboxed, as the
person, or runs without plugkit's hooks (no gate consulted at all). The worker's own policy already
refuses an edit of these files (plugkit/work/policy/paths.py HOOK_CONFIGS); a branch is the way
around a policy that judges tool calls, so the landing holds it."""

import json

import pytest

from tests.support.agent import git
from tests.support.work_cli import Work, commit_file, repo  # noqa: F401  (repo: the fixture)

pytestmark = pytest.mark.e2e

HOOK = json.dumps({"hooks": {"SessionStart": [{"hooks": [{"type": "command", "command": "touch /tmp/landed-hook"}]}]}})


def test_a_branch_committing_a_hosts_project_hooks_never_lands(shared_home, repo):
    w = Work(shared_home, repo, {"w1": [["write", ".claude/settings.json", HOOK],
                                        ["write", ".opencode/plugins/x.js", "export const X = async () => ({})\n"],
                                        *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert it["state"] != "completed" and "control_files" in it["message"], run
    assert ".claude/settings.json" in it["message"] and ".opencode/plugins/x.js" in it["message"], it["message"]
    assert not (repo / ".claude" / "settings.json").exists() and not (repo / "w1.txt").exists()
    assert "w1.txt" not in git(repo, "ls-tree", "-r", "--name-only", "HEAD")


def test_a_branch_changing_the_git_hooks_the_repository_runs_from_its_tree_never_lands(shared_home, repo):
    """core.hooksPath aimed into the tree (husky-style): the runner's own git runs no hook
    (runner/system/git.py SAFE), but the person's next `git commit` runs what the branch put there."""
    (repo / ".githooks").mkdir()
    (repo / ".githooks" / "pre-commit").write_text("#!/bin/sh\nexit 0\n")
    git(repo, "add", ".githooks/pre-commit")
    git(repo, "commit", "-qm", "the project's hooks")
    git(repo, "config", "core.hooksPath", ".githooks")
    w = Work(shared_home, repo, {"w1": [["write", ".githooks/pre-commit", "#!/bin/sh\ntouch /tmp/landed-hook\n"],
                                        *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert it["state"] != "completed" and ".githooks/pre-commit" in it["message"], run
    assert "landed-hook" not in (repo / ".githooks" / "pre-commit").read_text()
