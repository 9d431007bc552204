"""The one table from a refusal's kind to its JSON-RPC code; dispatch answers every refusal through it.

Below runner/rpc nothing knows wire codes: the task core, the executors, the OS code
and the lifecycle model raise refusals by kind (plugkit.refusals, plugkit.lifecycle.errors).
"""

from typing import Any

from plugkit import errors

# refusal kind -> JSON-RPC code (a new kind is a new row; a unit test checks every kind has one)
CODES = {
    "invalid": errors.INVALID_PARAMS,
    "not_found": errors.NOT_FOUND,
    "forbidden": errors.FORBIDDEN,
    "limit": errors.LIMIT,
    "conflict": errors.CONFLICT,
    "unavailable": errors.UNAVAILABLE,
    "timeout": errors.TIMEOUT,
}


def code_of(exc: Exception) -> int:
    """A refusal's code; an unknown kind is a conflict (refused, never an internal error)."""
    return CODES.get(getattr(exc, "kind", ""), errors.CONFLICT)


def wire(exc: Exception) -> errors.RpcError:
    """The refusal as the caller sees it: its code, its message, its data."""
    data: Any = getattr(exc, "data", None)
    return errors.RpcError(code_of(exc), getattr(exc, "message", str(exc)), data)
