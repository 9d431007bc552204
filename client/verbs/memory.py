"""`plugkit memory add|list|show|forget|search|index`: memories kept across sessions.

Not a hot path (an agent saves or recalls a memory now and then), so argparse is fine.
Scope: a memory belongs to the workspace (its .plugkit/memory/) unless it is of type
user or --user is given; then it is user-wide ($PLUGKIT_HOME/memory/).
"""

import argparse
import json
import sys

from client.verbs.brief import BriefParser, names_next
from client.wire.session import Caller, connect

TYPES = ("user", "feedback", "project", "reference")
EXAMPLE = ("example: plugkit memory add --type feedback --name 'no mocks' "
           "$'Use hand-written fakes.\\nWhy: a mock hid a bug.\\nHow to apply: in every new test.'")


def _parser() -> argparse.ArgumentParser:
    common = BriefParser(add_help=False)
    common.add_argument("--cwd", help="the workspace (default: the current directory)")
    common.add_argument("--session", help="session id (default: $PLUGKIT_SESSION, else one per directory)")
    common.add_argument("--json", action="store_true", help="print the runner's JSON result")
    p = BriefParser(prog="plugkit memory", description="Memories kept across agent sessions.")
    sub = p.add_subparsers(dest="action", required=True)
    add = sub.add_parser("add", parents=[common], help="save a memory", epilog=EXAMPLE,
                         description="feedback and project memories need 'Why:' and 'How to apply:' lines.")
    add.add_argument("--type", required=True, choices=TYPES)
    add.add_argument("--name", required=True, help="short unique name (it becomes the file name)")
    add.add_argument("--description", help="one line under 80 characters (default: the text's first line)")
    add.add_argument("--user", action="store_true", help="user-wide, not just this workspace (type user always is)")
    add.add_argument("--replace", action="store_true", help="overwrite a memory of the same name")
    add.add_argument("text", nargs="+", help="the memory's text, or - to read it from stdin")
    sub.add_parser("list", parents=[common], help="list memories, newest first")
    for action, text in (("show", "print one memory"), ("forget", "delete one memory")):
        sub.add_parser(action, parents=[common], help=text).add_argument("name")
    search = sub.add_parser("search", parents=[common], help="ranked text search")
    search.add_argument("text", nargs="+")
    search.add_argument("--limit", type=int, default=10)
    sub.add_parser("index", parents=[common], help="the bounded index a SessionStart hook injects")
    return p


@names_next("memory")
def main(argv: list[str]) -> int:
    args = _parser().parse_args(argv)
    caller = Caller({"cwd": args.cwd, "session": args.session})
    client = connect()
    try:
        result = ACTIONS[args.action](client, caller, args)
    finally:
        client.close()
    if args.json:
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(RENDER[args.action](result))
    return 0


def _add(client, caller: Caller, args: argparse.Namespace) -> dict:
    text = sys.stdin.read() if args.text == ["-"] else " ".join(args.text)
    params = caller.params(type=args.type, name=args.name, text=text, replace=args.replace)
    if args.description is not None:
        params["description"] = args.description
    if args.user:
        params["scope"] = "user"
    return client.call("memory.add", params)


ACTIONS = {
    "add": _add,
    "list": lambda c, caller, a: c.call("memory.list", caller.params()),
    "show": lambda c, caller, a: c.call("memory.show", caller.params(name=a.name)),
    "forget": lambda c, caller, a: c.call("memory.forget", caller.params(name=a.name)),
    "search": lambda c, caller, a: c.call("memory.search", caller.params(text=" ".join(a.text), limit=a.limit)),
    "index": lambda c, caller, a: c.call("memory.index", caller.params()),
}


def _stale(m: dict) -> str:
    return f"  [STALE: {'; '.join(m['stale'])}]" if m.get("stale") else ""


def _line(m: dict) -> str:
    where = " (user-wide)" if m["scope"] == "user" and m["type"] != "user" else ""
    score = f"{m['score']:>6.1f}  " if m.get("score") is not None else ""
    return f"{score}[{m['type']}] {m['name']}{where}: {m['description']}{_stale(m)}"


def render_list(result: dict) -> str:
    lines = [_line(m) for m in result["memories"]] or ["no memories; save one with "
                                                      "`plugkit memory add --type T --name N TEXT`"]
    lines += [f"warning: {p}" for p in result.get("problems", [])]
    return "\n".join(lines)


def render_search(result: dict) -> str:
    if not result["memories"]:
        return "no memory matches"
    return render_list(result)


def render_show(m: dict) -> str:
    head = [f"{m['name']}  [{m['type']}, {'user-wide' if m['scope'] == 'user' else 'workspace'}]",
            f"description: {m['description']}",
            f"updated {m['updated']} (created {m['created']}), file {m['file']}"]
    if m.get("stale"):
        # Said before the body, so nobody reads the body as current truth first.
        head.append("STALE: this memory names what the workspace no longer has ("
                    + "; ".join(m["stale"]) + "). Treat it as history, not fact; "
                    "verify, then update it (add --replace) or forget it.")
    return "\n".join(head) + "\n\n" + (m.get("body") or "")


RENDER = {
    "add": lambda m: f"saved {m['type']} memory {m['name']!r} ({m['file']}){_stale(m)}",
    "list": render_list,
    "show": render_show,
    "forget": lambda m: f"forgot {m['type']} memory {m['name']!r}",
    "search": render_search,
    "index": lambda r: r["text"] or "no memories",
}
