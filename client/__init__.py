"""The `plugkit` command line.

ClientError lives here, in the package every client module loads first anyway, so the
argument parser (client.args, a leaf) and the wire (client.wire) share it without either
importing the other and without one more module on the hot path.
"""


class ClientError(Exception):
    """Something the user must act on; `str()` is the one-or-two-line message. `code`: the
    runner's JSON-RPC error code when the runner refused (what --json reports), else None."""

    exit_code = 1
    code: object = None
