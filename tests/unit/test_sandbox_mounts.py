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
    assert lay.git_dir in ro and lay.admin in binds
    assert f"{lay.git_dir}/objects" not in binds  # no private object dir made: the store stays read-only
    # No private refs dir made: the repository's refs, the other items' branches too, stay read-only.
    assert not any(b.startswith(f"{lay.git_dir}/refs") or b.startswith(f"{lay.git_dir}/logs") for b in binds)
    assert f"{user}/.claude" in binds and os.path.isdir(f"{user}/.claude")  # the host's state dir, made
    source = args[args.index(f"{user}/.claude") - 1]  # ... and bound from a private copy, never itself
    assert source.startswith(lay.tmp + "/") and os.path.isdir(source)
    assert not any(b.startswith(f"{user}/.cache") for b in binds)  # no cache of HOME is writable
    assert binds[-2:] == [lay.worktree, lay.tmp]  # last: nothing hides the worker's own places
    # After the writable binds: the worktree's .git, then the admin dir's pointers (gitdir, config.worktree...).
    assert f"{lay.worktree}/.git" in ro[-4:] and args.index("--ro-bind", args.index(lay.tmp)) > args.index(lay.tmp)
    assert args.index(lay.home) > args.index(user)  # the home (under ~/.local/state) hidden after HOME's read-back
    assert tmpfs[0] == "/tmp" and ro.index(user) < ro.index(f"{user}/.netrc")  # /tmp emptied first, HOME read back
    assert set(_pairs(args, "--remount-ro")) == set(tmpfs)  # no write into an empty layer "succeeds"


def test_a_host_writes_its_state_into_a_copy_the_person_never_reads(tmp_path):
    lay = _layout(tmp_path)
    real = tmp_path / "user" / ".claude"
    real.mkdir()
    (real / ".credentials.json").write_text("login")
    (real / "projects").mkdir()  # the person's sessions: not the worker's to read
    args = sandbox.mounts(lay, "claude-code")
    copy = Path(args[args.index(str(real)) - 1])
    assert (copy / ".credentials.json").read_text() == "login" and not (copy / "projects").exists()


def test_agent_variables_never_pass_and_caches_point_into_the_private_dir(tmp_path):
    lay = _layout(tmp_path)
    argv = sandbox.argv(lay, "command", ["true"])
    unset = {argv[i + 1] for i, a in enumerate(argv) if a == "--unsetenv"}
    assert {"SSH_AUTH_SOCK", "GPG_AGENT_INFO", "DBUS_SESSION_BUS_ADDRESS", "XDG_RUNTIME_DIR"} <= unset
    setenv = {argv[i + 1]: argv[i + 2] for i, a in enumerate(argv) if a == "--setenv"}
    assert setenv["XDG_CACHE_HOME"].startswith(lay.tmp + "/") and setenv["npm_config_cache"].startswith(lay.tmp + "/")


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


def test_what_says_which_repository_and_config_a_worktree_has_is_read_only_over_its_binds(tmp_path):
    # The runner's (and the person's) git trusts these: a worker must not name a program in them.
    lay = _layout(tmp_path)
    for name in ("gitdir", "commondir"):
        Path(lay.admin, name).write_text("x\n")
    args = sandbox.mounts(lay, "command")
    ro = _pairs(args, "--ro-bind")
    last_bind = max(i for i, a in enumerate(args) if a == "--bind")
    for path in (f"{lay.worktree}/.git", *(f"{lay.admin}/{n}" for n in ("gitdir", "commondir", "config.worktree"))):
        assert path in ro and args.index(path) > last_bind, path  # after the writable binds it sits in
    # No config.worktree before: an empty one was made (a regular file git can read), read-only.
    assert Path(lay.admin, "config.worktree").read_text() == ""
    at = len(args) - 1 - args[::-1].index(f"{lay.admin}/config.worktree")  # the mount's destination
    assert args[at - 2:at] == ["--ro-bind", f"{lay.admin}/config.worktree"]


def test_a_worker_writes_objects_to_its_own_dir_and_reads_the_store_read_only(tmp_path):
    from runner.system import worker_objects

    _layout(tmp_path)
    wt, store = tmp_path / "repo" / ".plugkit" / "worktrees" / "w1", str(tmp_path / "repo" / ".git" / "objects")
    own = worker_objects.prepare(str(wt), str(tmp_path / "repo" / ".git"))
    lay = _layout(tmp_path)
    assert lay.objects == own and not own.startswith(lay.git_dir)  # outside the real .git
    args = sandbox.mounts(lay, "command")
    i = args.index("--bind", args.index(own) - 1)
    assert args[i:i + 6] == ["--bind", own, store, "--ro-bind", store, f"{store}/info/store"]
    assert Path(own, "info", "alternates").read_text() == f"{store}/info/store\n"


def test_a_docker_worker_sees_its_proxy_socket_alone_read_only_and_named_by_docker_host(tmp_path):
    lay = _layout(tmp_path)
    folder = os.path.join(lay.home, "docker", "abc")
    os.makedirs(folder)
    args = sandbox.argv(lay, "command", ["true"], docker=os.path.join(folder, "sock"))
    # Over the home's empty tmpfs (the home itself stays hidden), read-only.
    assert args.index(folder) > args.index(lay.home) and args[args.index(folder) - 1] == "--ro-bind"
    assert folder not in _pairs(args, "--bind")
    # Its variable set after every agent variable (DOCKER_HOST among them) is unset.
    unset = args.index("--unsetenv")
    setenv = [i for i, a in enumerate(args) if a == "--setenv" and args[i + 1] == "DOCKER_HOST"]
    assert len(setenv) == 1 and setenv[0] > unset and args[setenv[0] + 2] == f"unix://{folder}/sock"
    plain = sandbox.argv(lay, "command", ["true"])
    assert ["--setenv", "DOCKER_HOST"] not in [plain[i:i + 2] for i in range(len(plain))]


def test_a_workers_branch_is_written_in_its_own_refs_dir_never_the_shared_one(tmp_path):
    """refs/heads/plugkit/ is shared by every worker and the runner's git: what a worker planted
    there (a link at a sibling's reflog) would be followed outside. Its own dir is bound there."""
    lay = _layout(tmp_path)
    (tmp_path / "repo" / ".git" / "logs" / "refs" / "heads" / "plugkit").mkdir(parents=True)
    private = tmp_path / "repo" / ".plugkit" / "worktrees" / ".refs-w1"
    for sub in ("heads", "logs"):
        (private / sub).mkdir(parents=True)
    lay = sandbox.layout(lay.worktree, lay.home, {"HOME": str(tmp_path / "user")}, lay.tmp)
    assert lay.refs == str(private)
    args = sandbox.mounts(lay, "claude-code")
    for shown, sub in (("refs/heads/plugkit", "heads"), ("logs/refs/heads/plugkit", "logs")):
        dest = f"{lay.git_dir}/{shown}"
        assert dest in _pairs(args, "--bind") and args[args.index(dest) - 1] == str(private / sub)
        assert args.index(dest) > args.index(lay.git_dir)  # over the read-only .git, not under it
