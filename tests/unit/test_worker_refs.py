"""A worker's private refs dir (runner/system/worker_refs.py), on a real repository: its branch
copied in, its tip read back as a hash only, anything else it left there named, never followed."""

import os
import subprocess

import pytest

from runner.system import worker_refs


def _repo(tmp_path):
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", "-b", "main", str(repo)], check=True)
    subprocess.run(["git", "-C", str(repo), "-c", "user.name=a", "-c", "user.email=a@b", "commit", "-q",
                    "--allow-empty", "-m", "a"], check=True)
    subprocess.run(["git", "-C", str(repo), "branch", "plugkit/w1"], check=True)
    sha = subprocess.run(["git", "-C", str(repo), "rev-parse", "main"], capture_output=True, text=True).stdout.strip()
    wt = repo / ".plugkit" / "worktrees" / "w1"
    wt.mkdir(parents=True)
    return repo, str(wt), sha


def test_the_branch_is_copied_in_and_an_untouched_dir_reads_as_not_moved(tmp_path):
    repo, wt, sha = _repo(tmp_path)
    path = worker_refs.prepare(wt, str(repo / ".git"), "plugkit/w1")
    assert path == worker_refs.existing(wt) and os.path.basename(path) == ".refs-w1"
    with open(os.path.join(path, "heads", "w1")) as fh:
        assert fh.read() == sha + "\n"
    found = worker_refs.read(wt, "plugkit/w1")
    assert (found.tip, found.given, found.strays, found.links) == (sha, sha, [], [])


def test_links_symbolic_refs_and_other_branches_are_named_never_followed(tmp_path):
    repo, wt, sha = _repo(tmp_path)
    path = worker_refs.prepare(wt, str(repo / ".git"), "plugkit/w1")
    victim = tmp_path / "victim"
    victim.write_text(sha + "\n")  # a link to a file holding a hash: still refused
    os.symlink(victim, os.path.join(path, "heads", "sib"))
    with open(os.path.join(path, "heads", "main-alias"), "w") as fh:
        fh.write("ref: refs/heads/main\n")
    with open(os.path.join(path, "heads", "other"), "w") as fh:
        fh.write(sha + "\n")
    with open(os.path.join(path, "heads", "w1.lock"), "w") as fh:
        fh.write("")  # a commit cut short: not a ref
    os.symlink(victim, os.path.join(path, "logs", "w1"))
    new = "1" * 40
    with open(os.path.join(path, "heads", "w1"), "w") as fh:
        fh.write(new + "\n")
    found = worker_refs.read(wt, "plugkit/w1")
    assert found.tip == new and found.given == sha
    assert found.strays == ["refs/heads/plugkit/other"]
    assert found.links == ["logs/refs/heads/plugkit/w1", "refs/heads/plugkit/main-alias", "refs/heads/plugkit/sib"]
    assert victim.read_text() == sha + "\n"


def test_a_branch_outside_the_namespace_is_refused(tmp_path):
    repo, wt, _ = _repo(tmp_path)
    for bad in ("main", "plugkit/../main", "plugkit/"):
        with pytest.raises(ValueError):
            worker_refs.prepare(wt, str(repo / ".git"), bad)
