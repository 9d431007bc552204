"""What the runner refuses, by kind; runner/rpc/errors.py maps each kind to its JSON-RPC code once.

The task core, the executors and the OS code raise these: none of them speaks wire
codes. Messages are written for the agent (what was refused, what to do next);
`data` is a small JSON-able dict (a `next` command, the task that holds a port).
Standard library only, so any layer may raise them.
"""

from typing import Any


class Refused(Exception):
    kind = "conflict"

    def __init__(self, message: str, data: Any = None) -> None:
        super().__init__(message)
        self.message, self.data = message, data


class Invalid(Refused):
    """The request itself is wrong (empty code, bad settings, not a serial device)."""

    kind = "invalid"


class NotFound(Refused):
    """No such task here: the same answer for an unknown id and another session's id."""

    kind = "not_found"


class Forbidden(Refused):
    """A safety rule says no."""

    kind = "forbidden"


class LimitReached(Refused):
    """A configured limit (tasks per session, running tasks) is reached."""

    kind = "limit"


class Conflict(Refused):
    """Well-formed, but the target is not in a state that allows it (task ended, port held)."""

    kind = "conflict"


class Unavailable(Refused):
    """A program or device the request needs is missing or cannot be used."""

    kind = "unavailable"


KINDS = frozenset(cls.kind for cls in (Invalid, NotFound, Forbidden, LimitReached, Conflict, Unavailable))
