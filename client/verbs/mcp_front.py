"""`plugkit mcp` answers `initialize` before the MCP SDK has loaded (issue 46: hosts give up on
a server that takes seconds; importing the SDK's models takes 2-4 s on a loaded machine).

The answer is the SDK's own: the first time, the SDK answers and its result is kept in
$PLUGKIT_HOME/mcp-initialize.json, keyed by the SDK's and plugkit's versions and the protocol
version the host asked for. Afterwards the front answers from that record at once and still
hands the same request to the SDK (so its session is initialized as always), dropping the
SDK's duplicate answer. Everything else passes through unchanged: two threads copy the real
stdin into the SDK's fd 0 and the SDK's fd 1 out to the real stdout, line by line.
"""

import json
import os
import threading
from typing import Callable, Optional

RECORD = "mcp-initialize.json"
MAX_LINE = 16 << 20


def _key(first: dict, versions: str) -> Optional[str]:
    if first.get("method") != "initialize" or "id" not in first:
        return None
    asked = (first.get("params") or {}).get("protocolVersion")
    return f"{versions} {asked}" if isinstance(asked, str) else None


def _load(path: str) -> dict:
    try:
        with open(path, encoding="utf-8") as fh:
            data = json.load(fh)
        return data if isinstance(data, dict) else {}
    except (OSError, ValueError):
        return {}


def _keep(path: str, key: str, result: dict) -> None:
    data = _load(path)
    data[key] = result
    tmp = f"{path}.{os.getpid()}.tmp"
    try:
        fd = os.open(tmp, os.O_WRONLY | os.O_CREAT | os.O_TRUNC, 0o600)
        with os.fdopen(fd, "w", encoding="utf-8") as fh:
            json.dump(dict(list(data.items())[-8:]), fh)  # a few SDK/plugkit versions, never more
        os.replace(tmp, path)
    except OSError:
        pass  # no record: the next start is slow once more, nothing else


def serve(home: str, versions: str, run_sdk: Callable[[], None]) -> None:
    """Run `run_sdk` (the SDK's stdio server) behind the front; returns when it does."""
    real_in, real_out = os.fdopen(os.dup(0), "rb", buffering=0), os.dup(1)
    first_line = real_in.readline(MAX_LINE)
    try:
        first = json.loads(first_line) if first_line.strip() else {}
    except ValueError:
        first = {}
    record = os.path.join(home, RECORD)
    key = _key(first if isinstance(first, dict) else {}, versions)
    known = _load(record).get(key) if key else None
    out_lock = threading.Lock()

    def write(data: bytes) -> None:
        with out_lock:
            os.write(real_out, data)

    if known is not None:
        write((json.dumps({"jsonrpc": "2.0", "id": first["id"], "result": known}) + "\n").encode())

    in_r, in_w = os.pipe()
    out_r, out_w = os.pipe()
    os.dup2(in_r, 0)
    os.dup2(out_w, 1)
    os.close(in_r)
    os.close(out_w)

    def feed() -> None:
        with os.fdopen(in_w, "wb", buffering=0) as sdk_in:
            try:
                sdk_in.write(first_line)
                while True:
                    line = real_in.readline(MAX_LINE)
                    if not line:
                        return
                    sdk_in.write(line)
            except (BrokenPipeError, OSError):
                return

    def drain() -> None:
        waiting = key is not None  # the SDK's answer to the first initialize: dropped or recorded
        with os.fdopen(out_r, "rb") as sdk_out:
            for line in sdk_out:
                if waiting:
                    try:
                        answer = json.loads(line)
                    except ValueError:
                        answer = {}
                    if isinstance(answer, dict) and answer.get("id") == first.get("id") and "result" in answer:
                        waiting = False
                        if known is not None:
                            continue  # already answered from the record
                        _keep(record, key or "", answer["result"])
                write(line)

    threads = [threading.Thread(target=feed, daemon=True), threading.Thread(target=drain, daemon=True)]
    for t in threads:
        t.start()
    try:
        run_sdk()
    finally:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, 1)  # the SDK's end of the pipe closes: drain sees EOF and ends
        os.close(devnull)
        threads[1].join(timeout=5)
