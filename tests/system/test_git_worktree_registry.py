"""One repository's worktree registrations change one at a time, whoever asks: `plugkit work`'s
worktrees and checkouts and the gates' weakening check (two detached checkouts at once, per item)
go through runner.system.git's registry. Two concurrent `git worktree add` in one repository read
each other's half-made admin dirs ("failed to read .git/worktrees/<n>/commondir"): a CI run lost an
item to it (failed/internal, GitError) while its check's two collections started together."""

import asyncio
import subprocess

from runner.core.gates import collect
from runner.core.work import git as work_git


def _git(cwd, *args: str) -> str:
    return subprocess.run(["git", "-C", str(cwd), *args], check=True, capture_output=True, text=True).stdout


def test_checkouts_of_the_gates_and_of_work_never_race_in_one_repository(tmp_path):
    repo = tmp_path / "repo"
    repo.mkdir()
    (repo / "a.txt").write_text("a\n")
    _git(repo, "init", "-q", "-b", "main")
    _git(repo, "add", "-A")
    _git(repo, "-c", "user.name=t", "-c", "user.email=t@t", "commit", "-qm", "a")
    sha = _git(repo, "rev-parse", "HEAD").strip()
    root = str(repo)

    async def one_round(n: int) -> None:
        paths = [str(tmp_path / f"c{n}-{i}") for i in range(16)]
        await asyncio.gather(*(collect.checkout(root, p, sha) if i % 2 else work_git.checkout(root, p, sha)
                               for i, p in enumerate(paths)))
        for p in paths:
            assert (tmp_path / p / "a.txt").read_text() == "a\n"
        await asyncio.gather(*(collect.remove(root, p) if i % 2 else work_git.remove_worktree(root, p)
                               for i, p in enumerate(paths)))

    async def main() -> None:
        for n in range(8):
            await one_round(n)

    asyncio.run(main())
    assert _git(repo, "worktree", "list", "--porcelain").count("worktree ") == 1
