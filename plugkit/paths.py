"""Where the runner keeps its state, and the environment that configures it.

Standard library only (`os`): the client imports this on every call.
"""

import os

DEFAULT_PORT = 32882


def home(env=None) -> str:
    """$PLUGKIT_HOME, else ${XDG_STATE_HOME:-~/.local/state}/plugkit (of `env`, default ours)."""
    env = os.environ if env is None else env
    explicit = env.get("PLUGKIT_HOME")
    if explicit:
        return os.path.abspath(os.path.expanduser(explicit))
    user_home = env.get("HOME") or os.path.expanduser("~")
    state = env.get("XDG_STATE_HOME") or os.path.join(user_home, ".local", "state")
    return os.path.join(state, "plugkit")


def ensure_home(path: str | None = None) -> str:
    """Create the state dir 0700 (and tighten it if someone loosened it)."""
    path = home() if path is None else path
    os.makedirs(path, mode=0o700, exist_ok=True)
    if os.stat(path).st_mode & 0o077:
        os.chmod(path, 0o700)
    return path


def port(env=None) -> int:
    raw = (os.environ if env is None else env).get("PLUGKIT_PORT", "")
    if not raw:
        return DEFAULT_PORT
    value = int(raw) if raw.strip().isdigit() else 0
    if not 0 < value < 65536:
        raise ValueError(f"PLUGKIT_PORT={raw!r} is not a TCP port (1-65535); unset it or give a free port")
    return value


def _in_home(name: str, home_dir: str | None) -> str:
    # The runner passes the home it booted with; the client reads its environment.
    return os.path.join(home() if home_dir is None else home_dir, name)


def port_file(home_dir: str | None = None) -> str:
    return _in_home("port", home_dir)


def token_file(home_dir: str | None = None) -> str:
    return _in_home("token", home_dir)


def instance_lock(home_dir: str | None = None) -> str:
    return _in_home("runner.lock", home_dir)


def pid_file(home_dir: str | None = None) -> str:
    return _in_home("runner.pid", home_dir)


def start_lock(home_dir: str | None = None) -> str:
    return _in_home("start.lock", home_dir)


def log_file(home_dir: str | None = None) -> str:
    return _in_home("runner.log", home_dir)


def stdio_file(home_dir: str | None = None) -> str:
    """Where a detached runner's stdout/stderr go (crash output before logging is up)."""
    return _in_home("runner.out", home_dir)


def ledger_file(home_dir: str | None = None) -> str:
    """The task ledger of `home_dir` (default: this process's $PLUGKIT_HOME)."""
    return _in_home("ledger.sqlite3", home_dir)


def write_private(path: str, text: str) -> None:
    """Write atomically (temp + rename) with mode 0600."""
    tmp = f"{path}.{os.getpid()}.tmp"
    fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
    try:
        os.write(fd, text.encode())
        os.fsync(fd)
    finally:
        os.close(fd)
    os.replace(tmp, path)
