"""What the lifecycle model refuses: the same kinds as every other refusal (plugkit.refusals),
mapped to JSON-RPC codes once in runner/rpc/errors.py, so the model never speaks wire codes.
Messages are written for the agent (what was refused, and what to do next)."""

from plugkit.refusals import Conflict, Forbidden, Invalid, NotFound, Refused

# The gates' name for a refusal of any kind.
GateError = Refused

__all__ = ["Conflict", "Cycle", "Forbidden", "GateError", "Invalid", "NotFound"]


class Cycle(Invalid):
    def __init__(self, cycle: list[str]) -> None:
        super().__init__(f"work items would depend on each other in a cycle: {' -> '.join(cycle)}",
                         {"cycle": cycle})
        self.cycle = cycle
