"""Copying a worktree's ready files (runner/system/worktree_files.py) on real files: no link is
followed on either side, a hard link is refused, and .env takes the ports without a link."""

import os

import pytest

from runner.system import worktree_files as wf


@pytest.fixture
def trees(tmp_path):
    root, tree, outside = tmp_path / "repo", tmp_path / "tree", tmp_path / "outside"
    for d in (root / "config", tree, outside):
        d.mkdir(parents=True)
    (root / "config" / "local.toml").write_text("debug = true\n")
    return root, tree, outside


def test_rejects_writing_through_a_link_the_branch_tracks(trees):
    root, tree, outside = trees
    (tree / "config").symlink_to(outside)  # a tracked link in the worker's branch
    with pytest.raises(wf.NotCopied, match="config/local.toml: a directory on its way"):
        wf.copy_file(str(root), str(tree), "config/local.toml")
    assert os.listdir(outside) == []


def test_rejects_a_hard_link_and_copies_a_plain_file_with_its_mode(trees):
    root, tree, outside = trees
    os.chmod(root / "config" / "local.toml", 0o600)
    assert wf.checked_source(str(root), "config/local.toml", 1 << 20) == "config/local.toml"
    assert wf.copy_file(str(root), str(tree), "config/local.toml")
    assert (tree / "config" / "local.toml").read_text() == "debug = true\n"
    assert oct((tree / "config" / "local.toml").stat().st_mode & 0o777) == "0o600"
    assert not wf.copy_file(str(root), str(tree), "config/local.toml")  # already there: the branch's own
    (outside / "key").write_text("secret\n")
    os.link(outside / "key", root / "key")
    with pytest.raises(wf.NotCopied, match="hard link"):
        wf.checked_source(str(root), "key", 1 << 20)


def test_env_takes_the_ports_over_old_lines_and_never_through_a_link(trees):
    root, tree, outside = trees
    (tree / ".env").write_text("A=1\nPORT=1\n")
    wf.write_env(str(tree), {"PORT": "20000", "PLUGKIT_PORTS": "20000-20002"})
    assert (tree / ".env").read_text() == "A=1\nPORT=20000\nPLUGKIT_PORTS=20000-20002\n"
    (tree / ".env").unlink()
    (tree / ".env").symlink_to(outside / "victim")
    with pytest.raises(wf.NotCopied, match=".env in the worktree"):
        wf.write_env(str(tree), {"PORT": "20000"})
    assert not (outside / "victim").exists()
