"""The work policy's ref row: a worker moves, creates or deletes no ref but its own branch
(plugkit/<id> of its worktree), whatever git spelling it uses; its everyday git stays allowed."""

import pytest

from plugkit.work.policy import judge

W = "/srv/repo/.plugkit/worktrees/w1"  # its branch: plugkit/w1

DENIED = [
    "git update-ref refs/heads/main HEAD", "git update-ref -m x refs/heads/release HEAD",
    "git update-ref -d refs/tags/v1", "git update-ref --stdin < moves.txt",
    "git branch -f main HEAD", "git branch --force main", "git branch side", "git branch -D release",
    "git branch -m plugkit/w1 main", "git branch -c plugkit/w1 copy",
    "git tag v2", "git tag -f v1 HEAD", "git tag -d v1", "git tag -a v3 -m release",
    "git push . HEAD:main", "git push -q . HEAD:release", "git push ../repo HEAD:main", "git push /srv/repo x:main",
    "git push file:///srv/repo HEAD:main", "git fetch . HEAD:main", "git fetch origin main:main",
    "git checkout -B main", "git checkout -b feature", "git switch -c feature", "git switch -C main origin/main",
    "git switch release", "git checkout --ignore-other-worktrees main", "git worktree add -b side ../x",
    "git symbolic-ref HEAD refs/heads/main", "git rebase --update-refs main", "git filter-branch -- --all",
    "git replace HEAD~1 HEAD", "cd src && git branch -f main",
    "bash -c 'git update-ref refs/heads/main HEAD'", "git -c x=y update-ref refs/heads/main HEAD",
]

ALLOWED = [
    "git commit -qm ok", "git add -A && git commit -m 'w1: parser'", "git update-ref refs/heads/plugkit/w1 HEAD",
    "git update-ref HEAD HEAD~1", "git branch", "git branch --list", "git branch -a", "git branch -vv",
    "git branch --show-current", "git branch --contains HEAD", "git branch -f plugkit/w1 HEAD~1",
    "git tag", "git tag -l 'v*'", "git tag --contains HEAD", "git checkout -- a.txt", "git checkout HEAD~1 -- a",
    "git checkout -b plugkit/w1", "git switch --detach HEAD~1", "git switch plugkit/w1", "git reset --hard HEAD~1",
    "git rebase -i HEAD~3", "git push origin HEAD", "git push -u origin plugkit/w1", "git fetch origin",
    "git fetch origin main", "git fetch origin main:refs/remotes/origin/main", "git notes show", "git notes add -m x", "git stash",
    "git symbolic-ref HEAD", "git log --oneline main..HEAD", "git merge main", "git cherry-pick abc123",
]


@pytest.mark.parametrize("command", DENIED)
def test_denies_moving_refs_that_are_not_the_workers(command):
    denial = judge("Bash", {"command": command}, W, W)
    assert denial is not None and denial.rule == "other_ref", (command, denial)
    assert "plugkit/w1" in denial.reason and "\n" not in denial.reason, denial.reason


@pytest.mark.parametrize("command", ALLOWED)
def test_allows_a_workers_own_branch_and_everyday_git(command):
    assert judge("Bash", {"command": command}, W, W) is None, command
