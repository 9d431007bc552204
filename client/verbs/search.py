"""`plugkit search QUERY [--path GLOB] [--lang L] [--limit N] [--history] [--json] [--status]`:
code search answered by the runner's warm index of this workspace.

On an agent's hot path, so it parses with client.args (no argparse) and imports nothing else
of weight. The text answer is bounded (MAX_BYTES): definitions, content hits with whole lines,
commits; what did not fit is named with the command that shows more."""

import json

from client.args import FLAG, VALUE, UsageError, parse_or_help
from client.wire.session import Caller, connect

USAGE = """usage: plugkit search QUERY... [--path GLOB] [--lang L] [--limit N] [--history] [--json]
       plugkit search --status [--json]
Finds definitions (symbol -> file:line), code (file:line and its lines) and, for questions
about history (why/when/changed...) or --history, the commits. Paths are relative to the
repository (or workspace) root. --path 'src/*.py' limits files; --lang python limits language."""
OPTIONS = {"--path": VALUE, "--lang": VALUE, "--limit": VALUE, "--history": FLAG, "--json": FLAG,
           "--status": FLAG, "--session": VALUE, "--cwd": VALUE}
MAX_BYTES = 4096  # what an agent reads by default: a few KiB


def main(argv: list[str]) -> int:
    opts, words = parse_or_help(argv, OPTIONS, USAGE, loose=True)
    client = connect()
    try:
        if opts.get("status"):
            result = client.call("search.status", {})
            print(json.dumps(result) if opts.get("json") else _status_text(result))
            return 0
        if not words:
            raise UsageError("a query is needed: plugkit search QUERY (or --status)")
        caller = Caller(opts)
        params = caller.params(query=" ".join(words))
        for key in ("path", "lang"):
            if opts.get(key):
                params[key] = opts[key]
        if opts.get("limit"):
            if not str(opts["limit"]).isdigit():
                raise UsageError("--limit takes a number of results (1-100)")
            params["limit"] = int(opts["limit"])
        if opts.get("history"):
            params["history"] = True
        result = client.call("search.query", params)
    finally:
        client.close()
    if opts.get("json"):
        print(json.dumps(result, ensure_ascii=False))
    else:
        print(render(result, " ".join(words), params.get("limit", 10)))
    return 0


DIGEST_USAGE = """usage: plugkit digest [--json] [--cwd D]
The project in at most ~900 tokens: languages, entry points, how to build/test/run it,
the layout and the files changed most in the last 90 days (cached until those inputs change)."""


def digest_main(argv: list[str]) -> int:
    opts, _ = parse_or_help(argv, {"--json": FLAG, "--cwd": VALUE, "--session": VALUE}, DIGEST_USAGE, max_pos=0)
    client = connect()
    try:
        result = client.call("search.digest", Caller(opts).params())
    finally:
        client.close()
    print(json.dumps(result, ensure_ascii=False) if opts.get("json") else result["text"])
    return 0


def render(a: dict, query: str, limit: int) -> str:
    """The answer as an agent reads it, within MAX_BYTES on whole lines. Every section keeps its
    header and its best item before any section gets a second (a long code section never cuts the
    commits away), and a "why" question reads its commits first: they are the answer."""
    head: list[str] = []
    if a.get("indexing"):
        p = a["indexing"]
        head.append(f"indexing {p['done']:,}/{p['total']:,} files; partial results")
    if a.get("semantic"):
        head.append(a["semantic"])
    defs = [[f"  {d['name']} -> {d['path']}:{d['line']} ({d['kind']})"] for d in a["definitions"]]
    code = [[f"  {h['path']}:{h['line']}" + (f"  [{h['symbol']}]" if h["symbol"] else "")]
            + [f"    {ln['line']}: {ln['text'].strip()}" for ln in h["lines"]] for h in a["hits"]]
    commits = []
    for c in a["commits"]:
        paths = ", ".join(c["paths"][:4]) + (" ..." if len(c["paths"]) > 4 else "")
        commits.append([f"  {c['hash'][:10]} {c['date'][:10]} {c['subject'][:120]}" + (f"  ({paths})" if paths else "")])
    sections = [("definitions:", defs), ("code:", code), ("commits:", commits)]
    if a.get("kind") == "why":
        sections = [sections[2], sections[0], sections[1]]
    sections = [(title, items) for title, items in sections if items]
    if not sections:
        return "\n".join(head + [f"no match for {query!r} under {a['root']}"])
    size = sum(len(line.encode()) + 1 for line in head)
    kept: list[list[list[str]]] = [[] for _ in sections]
    cut = False
    # Round one: each section's header and first item; then the rest in section order.
    order = [(i, 0) for i in range(len(sections))] + [(i, j) for i, (_, items) in enumerate(sections)
                                                    for j in range(1, len(items))]
    for i, j in order:
        lines = ([sections[i][0]] if j == 0 else []) + sections[i][1][j]
        cost = sum(len(line.encode()) + 1 for line in lines)
        if size + cost > MAX_BYTES or (j and len(kept[i]) < j):
            cut = True
            continue
        size += cost
        kept[i].append(lines)
    out = head + [line for items in kept for item in items for line in item]
    if cut:
        out.append(f"... more: plugkit search {json.dumps(query)} --json (or --limit {max(1, limit // 2)})")
    return "\n".join(out)


def _status_text(result: dict) -> str:
    rows = result["workspaces"]
    if not rows:
        return "no workspace indexed yet (the first plugkit search in a project starts one)"
    lines = []
    for r in rows:
        state = (f"indexing {r['indexing']['done']}/{r['indexing']['total']}" if r.get("indexing")
                 else f"built {r.get('built') or 'never'}")
        vec = r.get("vectors")
        lines.append(f"{r['root']}: {r['files']} files, {state}, head {(r.get('head') or '-')[:10]}"
                     + (f", semantic {vec['done']}/{vec['total']} chunks embedded" if vec else ""))
    return "\n".join(lines)
