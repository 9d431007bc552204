"""`plugkit gate|mutable|prd|evidence|approve`: the lifecycle gates from a shell.

Not hot-path verbs (argparse is fine here). Each names its session and cwd like the
exec verbs (--session, else $PLUGKIT_SESSION, else one per directory; --cwd, else the
current directory) and prints a few lines, or the runner's JSON result with --json.
Exit codes: 0 done; 1 refused or unmet (the lines say why); 2 usage.
"""

import argparse
import json
import os
import sys
from typing import Callable

from plugkit.vocab import TASK_ID_TAG

from client.verbs.brief import BriefParser, names_next
from client.show import gate as show
from client.args import task_id
from client import ClientError
from client.wire.session import Caller, caller_environ, connect

Render = Callable[[dict], list[str]]


def _parser(prog: str, description: str) -> tuple[argparse.ArgumentParser, argparse._SubParsersAction,
                                                   argparse.ArgumentParser]:
    common = BriefParser(add_help=False)
    common.add_argument("--json", action="store_true", help="print the runner's JSON result")
    common.add_argument("--session", help="session id (default: $PLUGKIT_SESSION, else one per directory)")
    common.add_argument("--cwd", help="the directory whose workspace to use (default: the current one)")
    parser = BriefParser(prog=prog, description=description)
    return parser, parser.add_subparsers(dest="action", required=True), common


def _call(args: argparse.Namespace, method: str, render: Render, ok: Callable[[dict], bool] = lambda r: True,
          **params: object) -> int:
    me = Caller({"cwd": args.cwd, "session": args.session})
    client = connect()
    try:
        result = client.call(method, me.params(**params), timeout=660.0)
    finally:
        client.close()
    print(json.dumps(result, indent=1) if args.json else "\n".join(render(result)))
    return 0 if ok(result) else 1


LAST = "last"


def _task_or_last(word: str) -> int | str:
    """TASK as task_N, N, or `last`: this session's newest finished task."""
    return LAST if word == LAST else task_id(word)


def _task_of(args: argparse.Namespace, value: int | str) -> int:
    """`last` -> the id of this session's newest finished task (said on stderr, so the
    caller sees which); an id is itself."""
    if value != LAST:
        return int(value)
    me = Caller({"cwd": args.cwd, "session": args.session})
    client = connect()
    try:
        tid = client.call("task.last", me.params(caller_pid=os.getpid()))["task_id"]
    finally:
        client.close()
    if tid is None:
        raise ClientError(f"`last` names this session's newest finished task, and {me.describe()} has none "
                          f"yet; run the command with `plugkit exec:<lang>` first (`plugkit exec:tasks` lists tasks)")
    print(f"plugkit: last = task_{tid} (this session's newest finished task)", file=sys.stderr)
    return tid


def _base(args: argparse.Namespace) -> str:
    """Where a relative PATH argument starts: --cwd when given (as `git -C` does), since that
    is the directory the caller named; the shell's own directory may be anywhere else."""
    return Caller({"cwd": args.cwd, "session": args.session}).cwd


def _emit_file(word: str, base: str) -> dict:
    """PATH=SHA256 declares a hash; a bare PATH pins the file's content as it is now.
    Sent absolute either way, so both forms name the same file."""
    path, sep, digest = word.partition("=")
    full = os.path.join(base, path)
    if sep:
        return {"path": full, "sha256": digest.lower()}
    try:
        with open(full, "rb") as fh:
            return {"path": full, "content": fh.read().decode()}
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"{path}: {exc}; give PATH=SHA256 instead") from None


@names_next("gate")
def gate_main(argv: list[str]) -> int:
    p, sub, common = _parser("plugkit gate", "The workspace's phase: PLAN -> EXECUTE -> EMIT -> VERIFY -> COMPLETE.")
    st = sub.add_parser("status", parents=[common], help="phase, next conditions, recent transitions")
    st.add_argument("--all", action="store_true", help="name every id a condition lists, not the first ten")
    adv = sub.add_parser("advance", parents=[common], help="move to the next phase if its conditions hold")
    adv.add_argument("to", nargs="?", choices=["EXECUTE", "EMIT", "VERIFY", "COMPLETE", "PLAN"])
    ret = sub.add_parser("retreat", parents=[common], help="move back, naming the trigger")
    ret.add_argument("trigger", choices=["new_unknown", "verify_failed_code", "verify_failed_emit", "replan"])
    ret.add_argument("reason", nargs="+")
    emit = sub.add_parser("emit", parents=[common], help="declare the files the emission writes")
    emit.add_argument("files", nargs="+", metavar="PATH[=SHA256]")
    ver = sub.add_parser("verify", parents=[common], help="run the configured verify command, witnessed")
    ver.add_argument("--wait", type=float, default=60.0, help="seconds to wait for it (default 60)")
    ci = sub.add_parser("ci", parents=[common], help="the runner asks CI about HEAD (ci in .plugkit/config.toml); "
                                                     "COMPLETE needs it green")
    ci.add_argument("--wait", type=float, default=0.0, help="while CI is pending, ask again for up to S seconds")
    sub.add_parser("context", parents=[common], help="the lines a SessionStart hook shows the agent")
    sub.add_parser("restore", parents=[common],
                   help="write .prd and .plugkit/state.json again from the runner's ledger, dropping outside edits")
    sub.add_parser("confirm-config", parents=[common],
                   help="take .plugkit/config.toml's settings as they are now, weaker ones too (a person only)")
    a = p.parse_args(argv)
    if a.action == "confirm-config":
        return _call(a, "gate.confirm_config", lambda r: [f"settings confirmed: {c}" for c in r["changed"]]
                     or ["settings confirmed: .plugkit/config.toml says what the runner holds"])
    if a.action == "restore":
        return _call(a, "gate.restore", lambda r: [f"views restored from the runner's ledger; dropped: {d}"
                                                   for d in r["dropped"]] or ["views restored; nothing was edited"])
    if a.action == "status":
        return _call(a, "gate.status", lambda r: show.status(r, a.all))
    if a.action == "advance":
        return _call(a, "gate.advance", show.advance, lambda r: r["ok"], **({"to": a.to} if a.to else {}))
    if a.action == "retreat":
        return _call(a, "gate.retreat", lambda r: [show.transition(r)], trigger=a.trigger, reason=" ".join(a.reason))
    if a.action == "emit":
        try:
            files = [_emit_file(word, _base(a)) for word in a.files]
        except ValueError as exc:
            emit.error(str(exc))
        return _call(a, "gate.emit", lambda r: [f"declared for emission ({r['phase']}): {', '.join(r['declared'])}"],
                     files=files)
    if a.action == "verify":
        return _call(a, "gate.verify", show.verify, lambda r: r["verify"]["outcome"] in (None, "green"),
                     wait_ms=int(max(0.0, min(a.wait, 600.0)) * 1000), environ=caller_environ())
    if a.action == "ci":
        return _call(a, "gate.ci", _ci_lines, lambda r: r["state"] == "green",
                     wait_ms=int(max(0.0, min(a.wait, 600.0)) * 1000))
    return _call(a, "gate.context", lambda r: r["lines"])


def _ci_lines(r: dict) -> list[str]:
    lines = [f"CI {r['state']} on {r['sha'][:12]} ({r['provider']}): {r['note']}"]
    if r.get("log"):
        tail = r["log"].rstrip("\n").splitlines()[-20:]
        lines += ["the failing job's log ends:"] + [f"  {line[:200]}" for line in tail]
    nxt = {"green": "plugkit gate advance COMPLETE", "pending": "plugkit gate ci --wait 600",
           "red": "fix it, commit, push, then plugkit gate ci", "error": "fix what the line names, then plugkit gate ci"}
    lines.append(f"next: {nxt[r['state']]}")
    return lines


@names_next("mutable")
def mutable_main(argv: list[str]) -> int:
    p, sub, common = _parser("plugkit mutable", "Named unknowns, resolved only from witnessed task output.")
    add = sub.add_parser("add", parents=[common], help="name an unknown (outside PLAN: back to PLAN)")
    add.add_argument("name")
    add.add_argument("--expected", help="the value it must turn out to have")
    add.add_argument("--description", default="")
    res = sub.add_parser("resolve", parents=[common], help="take its value from a finished task's output")
    res.add_argument("name")
    res.add_argument("task", type=_task_or_last, metavar="TASK", help="task_N, N, or `last` (this session's "
                     "newest finished task)")
    where = res.add_mutually_exclusive_group()
    where.add_argument("--line", type=int, help="line N of the output (1-based; -1 the last)")
    where.add_argument("--regex", help="the first group of this regex (else the whole match)")
    sub.add_parser("list", parents=[common], help="every mutable and its status")
    a = p.parse_args(argv)
    if a.action == "add":
        extra = {"expected": a.expected} if a.expected is not None else {}
        return _call(a, "mutable.add", show.mutable_added, name=a.name, description=a.description, **extra)
    if a.action == "resolve":
        extra = {k: v for k, v in (("line", a.line), ("regex", a.regex)) if v is not None}
        return _call(a, "mutable.resolve", show.resolved, lambda r: r["known"], name=a.name, task_id=_task_of(a, a.task),
                     **extra)
    return _call(a, "mutable.list", lambda r: [show.mutable(m) for m in r["mutables"]] or ["no mutables"])


ITEM_LISTS = (("--acceptance", "acceptance"), ("--edge-case", "edge_cases"), ("--blocked-by", "blocked_by"),
              ("--blocking", "blocking"))


def _item_flags(parser: argparse.ArgumentParser) -> None:
    for flag, dest in ITEM_LISTS:
        parser.add_argument(flag, dest=dest, action="append", metavar="TEXT",
                            help="repeatable; on update an empty value clears the list")
    parser.add_argument("--effort", choices=["small", "medium", "large"])
    parser.add_argument("--risk", choices=["low", "medium", "high", "critical"])
    parser.add_argument("--status", choices=["pending", "in_progress", "completed", "blocked"])
    parser.add_argument("--verify", metavar="COMMAND",
                        help="the item's own check (else the workspace's verify); `plugkit work` runs it")


def _item_fields(a: argparse.Namespace) -> dict:
    out = {dest: [v for v in getattr(a, dest) if v] for _f, dest in ITEM_LISTS if getattr(a, dest) is not None}
    out.update({k: getattr(a, k) for k in ("effort", "risk", "status", "verify") if getattr(a, k) is not None})
    return out


@names_next("prd")
def prd_main(argv: list[str]) -> int:
    p, sub, common = _parser("plugkit prd", "Work items in .prd at the workspace root.")
    add = sub.add_parser("add", parents=[common], help="add a work item")
    add.add_argument("subject", nargs="+")
    add.add_argument("--id", help="default: the next wN")
    _item_flags(add)
    upd = sub.add_parser("update", parents=[common],
                         help="change a work item (completing names a receipt of `plugkit prd verify ID`)")
    upd.add_argument("id")
    upd.add_argument("--subject")
    upd.add_argument("--evidence", action="append", default=[], metavar="RECEIPT", help="repeatable")
    _item_flags(upd)
    ver = sub.add_parser("verify", parents=[common],
                         help="run the item's check (its --verify, else the workspace's), witnessed at HEAD")
    ver.add_argument("id")
    ver.add_argument("--complete", action="store_true",
                     help="when green, complete the item with the receipt in the same step")
    lst = sub.add_parser("list", parents=[common], help="the items and the dependency waves (many: the first of each status)")
    lst.add_argument("--all", action="store_true", help="every item and every wave")
    ready = sub.add_parser("ready", parents=[common], help="the next wave: pending items whose blockers are done")
    ready.add_argument("--limit", type=int)
    a = p.parse_args(argv)
    if a.action == "add":
        extra = {"id": a.id} if a.id else {}
        return _call(a, "prd.add", show.item_added, subject=" ".join(a.subject), **extra, **_item_fields(a))
    if a.action == "update":
        extra = {"subject": a.subject} if a.subject else {}
        return _call(a, "prd.update", lambda r: [show.item(r)], id=a.id, evidence=a.evidence, **extra,
                     **_item_fields(a))
    if a.action == "verify":
        if a.complete:
            return _verify_and_complete(a)
        return _call(a, "prd.verify", show.item_checked, lambda r: r["outcome"] == "green", id=a.id,
                     environ=caller_environ())
    if a.action == "ready":
        return _call(a, "prd.ready", show.items, **({"limit": a.limit} if a.limit else {}))
    more = Caller({"cwd": a.cwd, "session": a.session}).command("prd", "list", "--all")
    return _call(a, "prd.list", lambda r: show.items(r, a.all, more))


def _verify_and_complete(a: argparse.Namespace) -> int:
    """prd verify ID --complete: the check, then (green only) the completion naming its receipt,
    through the same rules as `prd update --status completed --evidence` (approvals included)."""
    me = Caller({"cwd": a.cwd, "session": a.session})
    client = connect()
    try:
        checked = client.call("prd.verify", me.params(id=a.id, environ=caller_environ()), timeout=660.0)
        done = None
        if checked["outcome"] == "green":
            done = client.call("prd.update", me.params(id=a.id, status="completed", evidence=[checked["receipt"]]),
                               timeout=60.0)
    finally:
        client.close()
    if a.json:
        print(json.dumps({"verify": checked, "item": done}, indent=1))
    else:
        lines = show.item_checked(checked)
        print("\n".join(lines[:1] + ([show.item(done)] if done else lines[1:])))
    return 0 if done else 1


@names_next("evidence")
def evidence_main(argv: list[str]) -> int:
    p, sub, common = _parser("plugkit evidence", "Receipts under .plugkit/evidence/, verifiable later.")
    add = sub.add_parser("add", parents=[common], help="record a finished task's output or a file")
    what = add.add_mutually_exclusive_group(required=True)
    what.add_argument("--task", type=_task_or_last, metavar="TASK", help="task_N, N, or `last`")
    what.add_argument("--file", metavar="PATH")
    add.add_argument("--subject", default="", help="what it is evidence for (an item id, ...)")
    add.add_argument("--note", default="")
    sub.add_parser("list", parents=[common], help="every receipt, oldest first")
    sh = sub.add_parser("show", parents=[common], help="one receipt")
    sh.add_argument("receipt")
    ver = sub.add_parser("verify", parents=[common], help="re-hash receipts and what they name")
    ver.add_argument("receipts", nargs="*", metavar="RECEIPT")
    a = p.parse_args(argv)
    if a.action == "add":
        target = {"task_id": _task_of(a, a.task)} if a.task is not None else {"path": os.path.join(_base(a), a.file)}
        return _call(a, "evidence.add", lambda r: [show.receipt(r)], subject=a.subject, note=a.note, **target)
    if a.action == "show":
        return _call(a, "evidence.show", show.receipt_detail, receipt_id=a.receipt)
    if a.action == "verify":
        return _call(a, "evidence.verify", show.verified, lambda r: r["ok"], receipt_ids=a.receipts)
    return _call(a, "evidence.list", lambda r: [show.receipt(x) for x in r["receipts"]] or ["no receipts"])


def _os_user() -> str:
    import pwd

    try:
        return pwd.getpwuid(os.getuid()).pw_name
    except KeyError:
        return str(os.getuid())


@names_next("approve")
def approve_main(argv: list[str]) -> int:
    """`plugkit approve ID`: a person approves a critical-risk item. Sent with via "cli" and the
    OS user name; the runner refuses approvals that arrive through a hook."""
    p = BriefParser(prog="plugkit approve", description="Approve a critical-risk work item (a person's step).")
    p.add_argument("id", nargs="?", help="the work item to approve")
    p.add_argument("--list", action="store_true", help="show approvals and the critical items still waiting")
    p.add_argument("--json", action="store_true")
    p.add_argument("--session")
    p.add_argument("--cwd")
    a = p.parse_args(argv)
    if a.list or a.id is None:
        return _call(a, "approval.list", show.approvals)
    # The runner tags every task's environment with PLUGKIT_TASK_ID. A task is the agent's code
    # (an `exec:` call is run from its own PreToolUse hook), so without this `exec:bash` +
    # `plugkit approve ID` would be the agent approving its own item. A deliberate unset gets
    # past it: like the via "hook" refusal, it stops the agent's easy path, not a local user.
    task = os.environ.get(TASK_ID_TAG)
    if task:
        print(f"plugkit approve: refused inside runner task_{task}: approving is a person's step, "
              f"typed in their own terminal (`plugkit approve {a.id}`)", file=sys.stderr)
        return 1
    return _call(a, "approval.grant", lambda r: [f"approved {r['item_id']} as {r['user']}"
                                                  + (f" on {r['tty']}" if r.get("tty") else "")],
                 item_id=a.id, via="cli", user=_os_user())
