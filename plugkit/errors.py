"""JSON-RPC error codes: the standard ones and plugkit's application codes.

A table, so the runner, the client and the docs agree on one list.
Standard library only: the client maps these to exit codes and hints.
"""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602
INTERNAL_ERROR = -32603

NOT_FOUND = -32001
FORBIDDEN = -32002
LIMIT = -32003
TIMEOUT = -32004
CONFLICT = -32005
UNAVAILABLE = -32006

# code -> (short name, what it means)
CODES = {
    PARSE_ERROR: ("parse_error", "the body is not valid JSON"),
    INVALID_REQUEST: ("invalid_request", "not a JSON-RPC 2.0 request, or batch too large"),
    METHOD_NOT_FOUND: ("method_not_found", "no such method"),
    INVALID_PARAMS: ("invalid_params", "params missing, extra or of the wrong type"),
    INTERNAL_ERROR: ("internal_error", "unexpected runner error; see the log by correlation id"),
    NOT_FOUND: ("not_found", "no such task in this session"),
    FORBIDDEN: ("forbidden", "refused by a safety rule"),
    LIMIT: ("limit", "a configured limit was reached"),
    TIMEOUT: ("timeout", "the operation did not finish in time"),
    CONFLICT: ("conflict", "the target is not in a state that allows this"),
    UNAVAILABLE: ("unavailable", "a required program or device is missing"),
}


class RpcError(Exception):
    """An error the runner reports to the caller as-is (message written for the caller)."""

    def __init__(self, code: int, message: str, data: object = None) -> None:
        super().__init__(message)
        self.code = code
        self.message = message
        self.data = data
