"""What a sandbox gets of the user's HOME, temp dirs, local sockets and agent variables: rows.

The rule (issue 40): nothing under the real HOME is writable from a sandbox, because what is
there is run outside later (pre-commit hooks in ~/.cache, uv/pipx tool venvs in ~/.local/share,
gradle init scripts, direnv's allow list, a host's settings and hooks in ~/.claude). So:
  - HOME stays read-only (toolchains installed under it, /root/.pyenv, ~/.rustup, a host
    installed under ~/.cache, still run), its credentials hidden (sandbox.CREDENTIALS);
  - the toolchains' caches go to a private dir under the sandbox's own temp dir, named by the
    variables below (CACHE_VARS), and go with it when the worker or task ends;
  - a host's own state dir (~/.claude, ~/.codex, ...) is a private copy of the real one (what
    the host needs to log in), bound over it: its writes never reach the person's files;
  - /tmp, /var/tmp and the user's runtime dirs are empty and read-only (PRIVATE_DIRS): the path
    sockets other programs keep there (ssh-agent, gpg-agent, dbus, tmux, an IDE) are not there;
  - the variables naming an agent or a bus (AGENT_VARS) are never passed in.
Abstract sockets have no path: runner/system/landlock.py (host network) or the worker's own
network namespace (runner/system/netrelay.py) keeps them out. Standard library only.
"""

from __future__ import annotations

import os
import shutil
import sys

# Emptied (a read-only tmpfs) in every sandbox: where programs keep their path sockets.
PRIVATE_DIRS: tuple[str, ...] = ("/tmp", "/var/tmp", "/run/user")
# Sockets outside those dirs that hand out more than the user has (the docker daemon is root).
HIDDEN_SOCKETS: tuple[str, ...] = ("/run/docker.sock", "/var/run/docker.sock", "/run/podman/podman.sock",
                                   "/run/containerd/containerd.sock")
# Never passed into a sandbox: each names an agent, a bus or a session a task could drive.
AGENT_VARS: tuple[str, ...] = (
    "SSH_AUTH_SOCK", "SSH_AGENT_PID", "SSH_ASKPASS", "GPG_AGENT_INFO", "GPG_TTY", "DBUS_SESSION_BUS_ADDRESS",
    "DBUS_SYSTEM_BUS_ADDRESS", "XDG_RUNTIME_DIR", "DISPLAY", "WAYLAND_DISPLAY", "XAUTHORITY", "DOCKER_HOST",
    "CONTAINER_HOST", "PULSE_SERVER", "KRB5CCNAME", "TMUX", "TMUX_PANE", "STY", "GIT_ASKPASS",
    "VSCODE_IPC_HOOK_CLI", "VSCODE_GIT_IPC_HANDLE", "VSCODE_GIT_ASKPASS_NODE", "VSCODE_GIT_ASKPASS_MAIN",
    "JETBRAINS_IDE_SOCKET", "KITTY_LISTEN_ON", "NVIM", "NVIM_LISTEN_ADDRESS", "EMACS_SOCKET_NAME",
)
# variable -> its dir under the sandbox's private home (<temp dir>/.home): where a build's
# caches go instead of ~/.cache, ~/.npm, ~/go/pkg, ~/.cargo, ~/.gradle (read-only there now).
CACHE_VARS: dict[str, str] = {
    "XDG_CACHE_HOME": "cache", "XDG_DATA_HOME": "share", "XDG_STATE_HOME": "state",
    "npm_config_cache": "npm", "GOMODCACHE": "go/pkg/mod", "GOCACHE": "cache/go-build",
    "CARGO_HOME": "cargo", "GRADLE_USER_HOME": "gradle",
}
# What a host keeps in its state dir that it does not need to log in: left out of the copy
# (sessions, histories, logs: large, and the person's, not the worker's to read).
BULKY: tuple[str, ...] = ("projects", "todos", "shell-snapshots", "statsig", "file-history", "debug", "logs",
                          "log", "sessions", "history.jsonl", "history", "tmp", "ide", "cache")
PRIVATE_HOME = ".home"


def hidden_dirs() -> list[str]:
    """The dirs to empty: those of PRIVATE_DIRS that exist (this user's runtime dir is under
    /run/user, wherever XDG_RUNTIME_DIR says: the variable itself is never passed in)."""
    return [d for d in PRIVATE_DIRS if os.path.isdir(d)]


def _under(path: str, folder: str) -> bool:
    path, folder = os.path.realpath(path), os.path.realpath(folder)
    return path == folder or path.startswith(folder.rstrip("/") + "/")


def hide(keep: tuple[str, ...]) -> list[str]:
    """bwrap arguments: the socket dirs emptied, read-only, then `keep` (the user's HOME, the
    runner's interpreter: paths a sandbox must still read that may lie under them) read back."""
    dirs = hidden_dirs()
    args: list[str] = []
    for d in dirs:
        args += ["--tmpfs", d]
    for path in HIDDEN_SOCKETS:
        if os.path.exists(path) and not any(_under(path, d) for d in dirs):
            args += ["--ro-bind", "/dev/null", path]
    for path in dict.fromkeys(os.path.realpath(p) for p in keep if p):
        if os.path.exists(path) and any(_under(path, d) for d in dirs):
            args += ["--ro-bind", path, path]
    return args


def named_files(values) -> tuple[str, ...]:
    """The regular files among `values` (a mapping: an environment, an argv by index) named by
    absolute path: a worker's program, the plan a test hands it. Files only: a socket or a dir
    named there stays hidden."""
    found = []
    for name, value in values.items():
        if name in AGENT_VARS:  # a Kerberos ticket cache, an agent's socket: never read back
            continue
        if isinstance(value, str) and value.startswith("/") and len(value) < 4096:
            try:
                if os.path.isfile(value):
                    found.append(value)
            except (OSError, ValueError):
                continue
    return tuple(found)


def interpreter_root() -> str:
    """The runner's Python install (the relay and the scoping script run with it inside)."""
    return os.path.dirname(os.path.dirname(os.path.realpath(sys.executable)))


def runner_install() -> tuple[str, ...]:
    """The runner's own code: its environment (a venv: sys.prefix) and the dir plugkit is imported
    from (a PYTHONPATH entry over a system python, say), where the `plugkit` command a worker's
    hooks run is installed. Either may lie under /tmp too; both are only ever read back."""
    import plugkit

    return (os.path.realpath(sys.prefix), os.path.dirname(os.path.dirname(os.path.realpath(plugkit.__file__))))


def environment(tmp: str) -> list[str]:
    """bwrap arguments: the agent variables gone, the caches pointed into the private home."""
    args: list[str] = []
    for name in AGENT_VARS:
        args += ["--unsetenv", name]
    private = os.path.join(tmp, PRIVATE_HOME)
    for name, rel in CACHE_VARS.items():
        args += ["--setenv", name, os.path.join(private, rel)]
    return args


def host_state(user_home: str, rows: tuple[str, ...], tmp: str) -> list[str]:
    """bwrap arguments binding a private copy of each of a host's state rows over the real one
    (blocking: it copies). A row ending in "/" is a dir, made empty when the person has none;
    a file row the person does not have stays absent (read-only HOME: the host cannot make it)."""
    args: list[str] = []
    for rel in rows:
        real = os.path.join(user_home, rel.rstrip("/"))
        copy = os.path.join(tmp, PRIVATE_HOME, "host", user_home.strip("/").replace("/", "_"), rel.rstrip("/"))
        made = _copy(real, copy, rel.endswith("/"))
        if made and (os.path.lexists(real) or _make_dir(real)):
            args += ["--bind", copy, real]
    return args


def _copy(real: str, copy: str, is_dir: bool) -> bool:
    try:
        os.makedirs(os.path.dirname(copy), exist_ok=True)
        if os.path.isdir(real):  # a dotfiles manager's link to a dir too: its contents are copied
            try:
                shutil.copytree(real, copy, symlinks=True, ignore=shutil.ignore_patterns(*BULKY),
                                ignore_dangling_symlinks=True)
            except shutil.Error:
                pass  # a file that vanished or a socket mid-copy: the rest is there
            return True
        if os.path.isfile(real):
            shutil.copy2(real, copy)
            return True
        if is_dir and not os.path.lexists(real):
            os.makedirs(copy, exist_ok=True)
            return True
    except OSError:
        return False
    return False


def _make_dir(path: str) -> bool:
    """A host's state dir the person lacks: made (empty, outside) so the copy has a place to go."""
    try:
        os.makedirs(path, exist_ok=True)
        return True
    except OSError:
        return False



# What the self-test (sandbox.self_test) also tries: each line must fail. {x} filled by LocalProbe.
SELF_TEST: tuple[tuple[str, str], ...] = (
    ("write the worktree's .git", "echo x >> {worktree}/.git"),
    ("write a cache under HOME", "echo x > {home}/.cache/planted"),
    ("write a tool venv under HOME", "echo x > {venv}/planted.pth"),
    ("see an agent variable", 'test -n "$SSH_AUTH_SOCK"'),
    ("reach a socket under /tmp", "{python} -c {connect} {socket}"),
)
ABSTRACT_STEP = ("reach an abstract socket", "{python} -c {connect} @{abstract}")
_CONNECT = ("import socket, sys; a = sys.argv[1]; s = socket.socket(socket.AF_UNIX); "
            "s.connect(chr(0) + a[1:] if a[0] == '@' else a)")


class LocalProbe:
    """The places the self-test's extra steps aim at, made around one run and removed after:
    a cache dir, a tool venv and a host's state dir in the scratch HOME, a listening socket
    under /tmp (where ssh-agent keeps its own) and an abstract one."""

    def __init__(self, user_home: str) -> None:
        import socket
        import tempfile

        self.home = user_home
        self.venv = os.path.join(user_home, ".local/share/uv/tools/t/lib/python3/site-packages")
        for d in (os.path.join(user_home, ".cache"), self.venv, os.path.join(user_home, ".claude")):
            os.makedirs(d, exist_ok=True)
        self.sock_dir = tempfile.mkdtemp(prefix="plugkit-sock-", dir="/tmp")
        self.abstract = f"plugkit-self-test-{os.getpid()}-{id(self)}"
        self.sockets = [socket.socket(socket.AF_UNIX), socket.socket(socket.AF_UNIX)]
        self.sockets[0].bind(os.path.join(self.sock_dir, "s"))
        self.sockets[1].bind("\0" + self.abstract)
        for s in self.sockets:
            s.listen(4)

    def steps(self) -> tuple[tuple[str, str], ...]:
        from runner.system import landlock

        return SELF_TEST + ((ABSTRACT_STEP,) if landlock.scoped() else ())

    def fill(self) -> dict[str, str]:
        import shlex

        return {"venv": self.venv, "python": shlex.quote(sys.executable), "connect": shlex.quote(_CONNECT),
                "socket": os.path.join(self.sock_dir, "s"), "abstract": self.abstract}

    def env(self) -> dict[str, str]:
        return {"SSH_AUTH_SOCK": os.path.join(self.sock_dir, "s")}

    def reached(self) -> list[str]:
        """What a step that may succeed inside (a write into the host's private copy) got out."""
        planted = os.path.join(self.home, ".claude", "planted")
        return ["write a host's real state dir"] if os.path.exists(planted) else []

    def close(self) -> None:
        for s in self.sockets:
            s.close()
        shutil.rmtree(self.sock_dir, True)
