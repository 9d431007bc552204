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
    """The answer as an agent reads it, cut at MAX_BYTES on a whole line."""
    out: list[str] = []
    if a.get("indexing"):
        p = a["indexing"]
        out.append(f"indexing {p['done']:,}/{p['total']:,} files; partial results")
    if a.get("semantic"):
        out.append(a["semantic"])
    if a["definitions"]:
        out.append("definitions:")
        out += [f"  {d['name']} -> {d['path']}:{d['line']} ({d['kind']})" for d in a["definitions"]]
    if a["hits"]:
        out.append("code:")
        for h in a["hits"]:
            out.append(f"  {h['path']}:{h['line']}" + (f"  [{h['symbol']}]" if h["symbol"] else ""))
            out += [f"    {ln['line']}: {ln['text'].strip()}" for ln in h["lines"]]
    if a["commits"]:
        out.append("commits:")
        for c in a["commits"]:
            paths = ", ".join(c["paths"][:4]) + (" ..." if len(c["paths"]) > 4 else "")
            out.append(f"  {c['hash'][:10]} {c['date'][:10]} {c['subject'][:120]}" + (f"  ({paths})" if paths else ""))
    if len(out) == bool(a.get("indexing")) + bool(a.get("semantic")):
        out.append(f"no match for {query!r} under {a['root']}")
    text, size, kept = "", 0, []
    for line in out:
        size += len(line.encode()) + 1
        if size > MAX_BYTES:
            kept.append(f"... more: plugkit search {json.dumps(query)} --json (or --limit {max(1, limit // 2)})")
            break
        kept.append(line)
    return "\n".join(kept)


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
