"""The worker sandbox's bwrap arguments (runner/system/sandbox.py), from a real linked-worktree
layout on disk: what is hidden, what is writable, and that the order keeps it so (bwrap
applies mounts in order; a later one covers an earlier one)."""

import os
from pathlib import Path

from runner.system import sandbox


def _pairs(args: list[str], flag: str) -> list[str]:
    """Each mount's destination: bind flags take SRC DEST, the others DEST."""
    skip = 2 if flag in ("--bind", "--ro-bind") else 1
    return [args[i + skip] for i, a in enumerate(args) if a == flag]


def _layout(tmp_path: Path) -> sandbox.Layout:
    repo, user, home = tmp_path / "repo", tmp_path / "user", tmp_path / "user" / ".local" / "state" / "plugkit"
    wt, admin = repo / ".plugkit" / "worktrees" / "w1", repo / ".git" / "worktrees" / "w1"
    for d in (wt, admin, repo / ".git" / "objects", repo / ".git" / "refs" / "heads" / "plugkit", user / ".ssh",
              user / ".cache", home, tmp_path / "tmp"):
        d.mkdir(parents=True, exist_ok=True)
    (wt / ".git").write_text(f"gitdir: {admin}\n")
    (user / ".netrc").write_text("machine x password y\n")
    for name in ("token", "port", "gates.key", "receipts.ed25519"):
        (home / name).write_text("x")
    return sandbox.layout(str(wt), str(home), {"HOME": str(user)}, str(tmp_path / "tmp"))


def test_the_layout_is_derived_from_the_worktree(tmp_path):
    lay = _layout(tmp_path)
    assert lay.repo == str(tmp_path / "repo") and lay.git_dir == str(tmp_path / "repo" / ".git")
    assert lay.admin == str(tmp_path / "repo" / ".git" / "worktrees" / "w1")


def test_hidden_writable_and_in_an_order_that_keeps_it(tmp_path):
    lay = _layout(tmp_path)
    args = sandbox.mounts(lay, "claude-code")
    tmpfs, binds, ro = _pairs(args, "--tmpfs"), _pairs(args, "--bind"), _pairs(args, "--ro-bind")
    user = str(tmp_path / "user")
    assert {lay.repo, lay.home, f"{user}/.ssh"} <= set(tmpfs)
    assert f"{user}/.netrc" in ro and args[args.index(f"{user}/.netrc") - 1] == "/dev/null"  # a file: /dev/null
    assert os.path.join(lay.home, "port") in ro and os.path.join(lay.home, "gates.key") not in ro + binds
    assert os.path.join(lay.home, "token") not in ro + binds  # the runner's token: never in a sandbox
    assert os.path.join(lay.home, "receipts.ed25519") not in ro + binds  # the receipts' signing key neither
    assert lay.git_dir in ro and f"{lay.git_dir}/objects" in binds and lay.admin in binds
    assert f"{lay.git_dir}/refs/heads/plugkit" in binds and f"{lay.git_dir}/refs/heads" not in binds
    assert f"{user}/.claude" in binds and os.path.isdir(f"{user}/.claude")  # the host's state dir, made
    assert binds[-2:] == [lay.worktree, lay.tmp]  # last: nothing hides the worker's own places
    assert args.index(lay.home) > args.index(f"{user}/.cache")  # the home (under ~/.local/state) hidden after
    assert set(_pairs(args, "--remount-ro")) == set(tmpfs)  # no write into an empty layer "succeeds"


def test_a_command_worker_gets_no_host_state_and_the_argv_ends_with_its_own(tmp_path):
    lay = _layout(tmp_path)
    argv = sandbox.argv(lay, "command", ["python3", "agent.py"])
    assert f"{tmp_path}/user/.claude" not in argv
    assert argv[0].endswith("bwrap") and {"--unshare-pid", "--die-with-parent"} <= set(argv)
    assert argv[-3:] == ["--", "python3", "agent.py"]


def test_a_granted_credential_is_left_visible(tmp_path):
    lay = _layout(tmp_path)
    assert f"{tmp_path}/user/.ssh" not in _pairs(sandbox.mounts(lay, "command", (".ssh",)), "--tmpfs")


def test_the_token_path_shows_the_workers_capability_not_the_runners_token(tmp_path):
    lay = _layout(tmp_path)
    cap = tmp_path / "cap"
    cap.write_text("pkw_x")
    args = sandbox.mounts(lay, "command", capability=str(cap))
    i = args.index(os.path.join(lay.home, "token"))
    assert args[i - 2:i] == ["--ro-bind", str(cap)] and i > args.index(lay.home)  # after the home's tmpfs
