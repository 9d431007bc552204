"""Who is calling: the session and cwd every task verb names, the environment a task it
starts runs in, and the connection it uses.

A session is (session_id, workspace root of the cwd) on the runner side, so the default
id only needs to be stable for a workspace, not unique across them; it is the root's, so
`cd pkg` in a project keeps the session there too.
"""

import os

from client.args import UsageError
from client.wire.rpc import Client, ClientError, RpcFailure, connect_verified
from plugkit import errors
from plugkit.vocab import ENVIRON_MAX_CHARS


class Caller:
    # The output cap a verb shows this caller; None: $PLUGKIT_MAX_OUTPUT (or --full) decides.
    output_cap: int | None = None

    def __init__(self, opts: dict) -> None:
        self.cwd_flag = opts.get("cwd")
        self.session_flag = opts.get("session")
        if self.cwd_flag is not None:
            # Relative to where the user typed it: the runner's own cwd is its state dir.
            self.cwd = os.path.abspath(os.path.expanduser(str(self.cwd_flag)))
        else:
            try:
                self.cwd = os.getcwd()
            except FileNotFoundError:
                raise ClientError("the current directory no longer exists; cd somewhere else "
                                  "or pass --cwd DIR") from None
        sid = self.session_flag or os.environ.get("PLUGKIT_SESSION") or default_session(self.cwd)
        if len(sid) > 256:
            raise UsageError("a session id is at most 256 characters")
        self.session_id = str(sid)

    def params(self, **more: object) -> dict:
        return {"session_id": self.session_id, "cwd": self.cwd, **more}

    def environ(self) -> dict | None:
        return caller_environ()

    def ref(self, task_id: int, **more: object) -> dict:
        return self.params(task_id=task_id, **more)

    def command(self, verb: str, *words: str) -> str:
        """A follow-up command that reaches this same session, flags included."""
        argv = ["plugkit", verb, *words]
        # Only flags the user gave: $PLUGKIT_SESSION and the cwd default carry over by themselves.
        if self.session_flag is not None:
            argv += ["--session", str(self.session_flag)]
        if self.cwd_flag is not None:
            argv += ["--cwd", self.cwd]
        return " ".join(_quote(w) for w in argv)

    def describe(self) -> str:
        return f"session {self.session_id!r}, cwd {self.cwd}"


def caller_environ() -> dict | None:
    """Our environment for task.exec (and gate.verify): the task runs in it, and its program is
    found on its PATH (an activated venv's python). Without plugkit's token (the runner drops it
    anyway); None when it is over the wire's bound, and the task then gets the runner's."""
    env = {k: v for k, v in os.environ.items() if not k.startswith("PLUGKIT_TOKEN")}
    size = sum(len(k) + len(v) + 2 for k, v in env.items())
    return env if size <= ENVIRON_MAX_CHARS and len(env) <= 4096 else None


_SAFE = frozenset("abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789@%+=:,./_-")


def _quote(word: str) -> str:
    """shlex.quote's rule, without importing shlex on the hot path."""
    if word and all(c in _SAFE for c in word):
        return word
    return "'" + word.replace("'", "'\"'\"'") + "'"


def default_session(cwd: str) -> str:
    """One id per workspace root (the cwd itself where there is no workspace): at a root, or
    outside any workspace, the same id as when it was one per directory, so older tasks
    recorded there are still found."""
    import binascii

    from plugkit.workspace import root_or_none  # not on the path of a caller naming its session

    try:
        real = root_or_none(cwd) or os.path.realpath(cwd)
    except OSError:
        real = cwd
    return f"cwd-{binascii.crc32(os.fsencode(real)):08x}"


def connect(start: bool = True) -> Client | None:
    """A client on our verified runner; with start, auto-start one (else None when there is none)."""
    conn = connect_verified()
    if conn is None:
        if not start:
            return None
        from client.wire.autostart import ensure_runner

        conn = ensure_runner()
    return Client(conn)


def not_found_hint(exc: RpcFailure, caller: Caller) -> ClientError:
    """The runner's not-found says "this session"; name it, since a missing --session is the usual cause."""
    if exc.code != errors.NOT_FOUND:
        return exc
    said = ClientError(f"{exc.message} ({caller.describe()}); `{caller.command('exec:tasks')}` lists its tasks")
    said.code = exc.code  # still the runner's not-found, for --json
    return said
