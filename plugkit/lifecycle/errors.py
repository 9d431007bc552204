"""What the lifecycle model refuses, by kind; the runner maps each kind to a JSON-RPC code.

Kept apart from plugkit.errors so the model does not speak wire codes: messages are
written for the agent (what was refused, and what to do next)."""

from plugkit.refusals import Refused


class GateError(Refused):
    kind = "conflict"


class Invalid(GateError):
    """The request itself is malformed (bad name, unknown id referenced, a cycle)."""

    kind = "invalid"


class NotFound(GateError):
    kind = "not_found"


class Conflict(GateError):
    """The request is well-formed but the workspace is not in a state that allows it."""

    kind = "conflict"


class Forbidden(GateError):
    """A safety rule: e.g. an approval that arrived through a hook."""

    kind = "forbidden"


class Cycle(Invalid):
    def __init__(self, cycle: list[str]) -> None:
        super().__init__(f"work items would depend on each other in a cycle: {' -> '.join(cycle)}",
                         {"cycle": cycle})
        self.cycle = cycle
