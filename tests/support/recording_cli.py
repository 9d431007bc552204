"""The real `plugkit` CLI, with every JSON-RPC call it sends appended to $PLUGKIT_TEST_CALLS (one
JSON line: method and params), so a test can check what each verb puts on the wire.

Run as `python -m tests.support.recording_cli VERB ARGS...` with the repository on PYTHONPATH.
"""

import json
import os
import sys


def main() -> None:
    from client.wire import rpc

    send = rpc.Client.call
    log = os.environ["PLUGKIT_TEST_CALLS"]

    def recorded(self, method, params=None, timeout=30.0):
        with open(log, "a", encoding="utf-8") as fh:
            fh.write(json.dumps({"method": method, "params": params or {}}) + "\n")
        return send(self, method, params, timeout)

    rpc.Client.call = recorded
    sys.argv[0] = "plugkit"
    from client.cli import main as cli_main

    cli_main()


if __name__ == "__main__":
    main()
