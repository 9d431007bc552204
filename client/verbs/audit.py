"""`plugkit audit verify|ack`: the runner's gate ledger checked as a hash chain, and its breaks
acknowledged by a person at their own terminal (then COMPLETE no longer waits on them)."""

import argparse
import json

from client.wire.session import Caller, connect


def main(argv: list[str]) -> int:
    p = argparse.ArgumentParser(prog="plugkit audit", description="The gate ledger's hash chain.")
    sub = p.add_subparsers(dest="action", required=True)
    for name, text in (("verify", "name the first record edited, removed or moved (and sign the head)"),
                       ("ack", "a person acknowledges the breaks found, from their own terminal")):
        one = sub.add_parser(name, help=text)
        one.add_argument("--json", action="store_true")
        one.add_argument("--session")
        one.add_argument("--cwd")
    a = p.parse_args(argv)
    me = Caller({"cwd": a.cwd, "session": a.session})
    client = connect()
    try:
        result = client.call(f"audit.{a.action}", me.params(), timeout=120.0)
    finally:
        client.close()
    if a.json:
        print(json.dumps(result, indent=1))
    elif a.action == "ack":
        done = result["acknowledged"]
        print(f"acknowledged by {result['user']}: " + ("; ".join(done) if done else "nothing was broken"))
    else:
        _report(result)
    return 0 if a.action == "ack" or result["ok"] else 1


def _report(result: dict) -> None:
    breaks = result["breaks"]
    open_ = [b for b in breaks if not b["acknowledged"]]
    if open_:
        first = open_[0]
        print(f"TAMPERED: first break at record {first['seq']}: {first['text']}")
        for b in open_[1:10]:
            print(f"  also: {b['text']}")
        print("  -> look, then `plugkit audit ack` from your own terminal; COMPLETE waits until then")
    else:
        print(f"ledger intact: {result['records']} records" +
              (f", head {result['sealed_at']} signed" if result.get("sealed_at") else ""))
    for b in breaks:
        if b["acknowledged"]:
            print(f"  acknowledged: {b['text']}")
