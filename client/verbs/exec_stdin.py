"""What of `exec`'s own stdin becomes the task's stdin (the CLI only: a hook's stdin is the
host's JSON and never a task's).

Piped or redirected data is the task's, streamed, end-of-file at its end, as `python -c`,
`bash -c` and `docker run -i` do; an empty one (/dev/null, a closed pipe) is end-of-file at
once. At a person's terminal the lines typed while exec follows in the foreground go to the
task, Ctrl-D ends them (`docker run -it`). An agent host's terminal is no person: Qwen Code
runs its shell on a pseudo-terminal nobody types into, and Claude Code, Gemini CLI and Codex
give /dev/null; there, and with --stdin, the task's stdin stays open for exec:type as before.
"""

import os
import sys

# What a short pipe holds is read before the start and goes with task.exec itself (one
# request, no wait); a longer or slower one is streamed in chunks after it.
READ_AHEAD = 256 << 10
CHUNK = 64 << 10  # under the wire's bound on task.input data (max_code_bytes characters)
# What a request carries is JSON: a control character or NUL is six bytes there (\u0000), a
# character past the BMP twelve. The read-ahead goes with task.exec only while its JSON is this
# small, and every task.input carries at most CHUNK characters (under 1 MiB, the runner's body
# limit by default, whatever they are): else the runner refuses the request (HTTP 413).
INLINE_JSON = 256 << 10
CLOSED, OPEN, DATA, STREAM, TERMINAL = "closed", "open", "data", "stream", "terminal"


def person_at_terminal(fd: int = 0) -> bool:
    """stdin is a terminal and no agent host's marker is in our environment (a host's shell
    on a pseudo-terminal is an agent's tool call, not a person typing)."""
    try:
        if not os.isatty(fd):
            return False
    except (ValueError, OSError):
        return False
    from plugkit.hosts import marked_by

    return marked_by(dict(os.environ)) is None


class Feed:
    """The plan for the task's stdin, then (STREAM, TERMINAL) the thread that carries it."""

    def __init__(self, mode: str, head: bytes = b"", fd: int = 0) -> None:
        import codecs

        self.mode, self.fd = mode, fd
        # Text on the wire: a split UTF-8 sequence is joined across chunks, other bytes replaced.
        self._decoder = codecs.getincrementaldecoder("utf-8")("replace")
        self.head = self._decoder.decode(head, final=mode == DATA)
        self.progress = 0  # bumped by every delivery and by the end: the follower waits on it
        self.live = mode in (STREAM, TERMINAL)
        self.sent = len(head)
        self.failure: str | None = None  # why the input was cut short (the pump's refusal), if it was
        if self.live:  # threading only when a thread will carry it: `exec` with no stdin stays lean
            import threading

            self._changed = threading.Condition()

    def exec_stdin(self) -> str | None:
        """task.exec's `stdin`: the whole of it (then closed), or None to leave it open."""
        return {CLOSED: "", DATA: self.head}.get(self.mode)

    def start(self, me, tid: int) -> None:
        if self.live:
            import threading

            threading.Thread(target=self._pump, args=(me, tid), name="stdin", daemon=True).start()

    def wait_progress(self, seen: int, timeout: float) -> bool:
        """Until something more was delivered (or the end) after `seen`, at most `timeout` s."""
        with self._changed:
            return self._changed.wait_for(lambda: self.progress != seen, max(0.0, timeout))

    def _bump(self, live: bool = True) -> None:
        with self._changed:
            self.progress += 1
            self.live = self.live and live
            self._changed.notify_all()

    def _pump(self, me, tid: int) -> None:
        from client.wire.rpc import ClientError, RpcFailure
        from client.wire.session import connect
        from plugkit import errors

        client = None
        try:
            client = connect(start=False)
            if client is None:
                return
            for at in range(0, len(self.head), CHUNK):
                client.call("task.input", me.ref(tid, data=self.head[at:at + CHUNK]), timeout=30)
                self._bump()
            while True:
                raw = os.read(self.fd, CHUNK)
                text = self._decoder.decode(raw, final=not raw)
                client.call("task.input", me.ref(tid, data=text, eof=not raw), timeout=30)
                self.sent += len(raw)
                self._bump(live=bool(raw))
                if not raw:
                    return
        except RpcFailure as exc:
            # The task ended or closed its stdin (`yes | exec:bash 'head -1'`): nothing more to
            # carry. Anything else cut the input short, and exec must not end as if it had not.
            if exc.code not in (errors.CONFLICT, errors.NOT_FOUND):
                self.failure = exc.message
        except ClientError as exc:  # the runner lost, or refused the request
            self.failure = str(exc)
        except OSError:
            # A terminal we were put in the background of (EIO, SIGTTIN ignored): nothing more to carry.
            pass
        finally:
            self._bump(live=False)
            if client is not None:
                client.close()


def plan(opts: dict, code_from_stdin: bool) -> Feed:
    if opts.get("no_stdin"):
        return Feed(CLOSED)
    if opts.get("stdin") or sys.stdin is None:
        return Feed(OPEN)  # for exec:type
    if code_from_stdin:
        return Feed(CLOSED)  # the code used it up: the task reads end-of-file, as `bash -` would
    try:
        fd = sys.stdin.fileno()
    except (ValueError, OSError):
        return Feed(OPEN)
    if os.isatty(fd):
        return _terminal(fd)
    head, ended = _read_ahead(fd)
    if ended:
        feed = Feed(DATA, head, fd)
        from plugkit import codec

        if len(codec.dumps(feed.head)) <= INLINE_JSON:
            return feed
    return Feed(STREAM, head, fd)  # the pump sends it in pieces, then reads on to the end


def _terminal(fd: int) -> Feed:
    try:
        foreground = os.tcgetpgrp(fd) == os.getpgrp()
    except OSError:
        foreground = False
    if not foreground or not person_at_terminal(fd):
        return Feed(OPEN)
    import signal

    # Put in the background later (Ctrl-Z, bg), a read would stop the whole exec (SIGTTIN):
    # ignored, the read fails with EIO and the forwarding ends there.
    signal.signal(signal.SIGTTIN, signal.SIG_IGN)
    return Feed(TERMINAL, b"", fd)


def _read_ahead(fd: int) -> tuple[bytes, bool]:
    """What stdin holds right now (never waiting for more), and whether that is all of it."""
    import select
    import stat

    regular = stat.S_ISREG(os.fstat(fd).st_mode)
    parts: list[bytes] = []
    size = 0
    while size < READ_AHEAD:
        # A regular file never blocks; a pipe nobody writes (an agent's shell left open) must
        # not hold us here: only what it has ready now is taken.
        if not regular and not select.select([fd], [], [], 0)[0]:
            return b"".join(parts), False
        raw = os.read(fd, READ_AHEAD - size)
        if not raw:
            return b"".join(parts), True
        parts.append(raw)
        size += len(raw)
    return b"".join(parts), False
