"""`plugkit work`: the runner drives coding agents as workers through the .prd.

    plugkit work [--parallel N] [--items ID...] [--worker W] [--run PROGRAM] [--afk]
                 [--budget-min M] [--budget-tokens N] [--budget-cost USD] [--item-budget-tokens N]
                 [--item-budget-cost USD] [--item-budget-min M] [--budget-day-tokens N] [--budget-day-cost USD]
                 [--stall-min M] [--merge ff|merge] [--no-sandbox]
                 [--no-quota-wait]
                 [--network host|loopback-model] [--runtime local|ray] [--cluster HOST:PORT]
                 [--allow-remote-cluster] [--wait S]
    plugkit work status [RUN] [--wait S | --follow] | stop | runs
    plugkit work logs ITEM [--verify] [--follow] [--run RUN] | trace ITEM [--attempt N] [--run RUN]
    plugkit work rollback ITEM [--run RUN]
    plugkit work allow-check ITEM   (a person: the item's branch may change its own check)
    plugkit work resume [--budget-tokens N] [--budget-cost USD] [--item-budget-tokens N] [--item-budget-cost USD]
                        [--item-budget-min M] [--budget-day-tokens N] [--budget-day-cost USD]
                                    (a person: raise the caps of a run paused on a spent budget)
    plugkit work ray-secrets        (the Ray cluster's token and node key, 0600; prints their env)

The run lives in the runner: this command starts it and returns (`--wait S` follows it for
up to S seconds, a line per event from the runner's journal of the run; `work status --follow`
prints the same lines until the run halts or ends); `work status` looks once. `work runs` lists
the kept runs; status, logs, trace and rollback reach any of them with RUN (an id or its prefix).
Every form takes --json, --cwd, --session.
Exit codes: 0 done (or started, without --wait); 1 refused (the line says why); 2 usage;
3 with --wait (`work` and `work status` alike): the run halted or stopped, or an item ended
without completing; 130 Ctrl-C stopped following (the run goes on).
"""

import argparse
import json
import os
import shlex
import sys
import time

from client.show import work as show
from client.show import work_events
from client.show.work_events import event_line
from client.verbs.brief import BriefParser, names_next
from client.wire.session import Caller, connect
from plugkit.hosts import WORKER_NAMES
from plugkit.vocab import WORK_NETWORKS, WORK_RUNTIMES

SUBS = ("status", "stop", "runs", "logs", "trace", "rollback", "allow-check", "ray-secrets", "resume")
WORKERS = WORKER_NAMES
LOG_TAIL = 8 << 10
FOLLOW_START_S = 600.0  # --follow on an item still queued waits this long for its worker


def _common(parser: BriefParser) -> None:
    parser.add_argument("--json", action="store_true", help="print the runner's JSON result")
    parser.add_argument("--session", help="session id (default: $PLUGKIT_SESSION, else one per directory)")
    parser.add_argument("--cwd", help="a directory of the workspace (default: the current one)")


def _workers_epilog() -> str:
    from plugkit.work.workers import WORKERS

    return "workers (how each says it is done):\n" + "\n".join(
        f"  {name:<12} {row.done}" for name, row in WORKERS.items())


def _start_parser() -> BriefParser:
    p = BriefParser(prog="plugkit work", formatter_class=argparse.RawDescriptionHelpFormatter, words=SUBS,
                    epilog=_workers_epilog(), description=(
        "Run the .prd's ready items as coding-agent workers, each in its own git worktree on branch "
        "plugkit/<item>; the runner verifies each item itself and lands it only when its check passes. "
        "Also: plugkit work status [RUN]|stop|runs|logs ITEM|trace ITEM|rollback ITEM|allow-check ITEM."))
    p.add_argument("--parallel", type=int, default=3, help="workers at once (default 3)")
    p.add_argument("--items", nargs="+", default=[], metavar="ID", help="only these items (default: every open one)")
    p.add_argument("--worker", choices=WORKERS, default="claude-code", help="the agent that works each item")
    p.add_argument("--run", metavar="PROGRAM", help="--worker command: the program (a shell-quoted line), "
                                                   "run in the worktree with the prompt on stdin")
    p.add_argument("--afk", action="store_true", help="unattended: halt (never guess) on an approval, a "
                                                     "conflict, an item failing twice, the budget")
    p.add_argument("--budget-min", type=float, help="bound the whole run (minutes)")
    _caps(p, "cap")
    p.add_argument("--stall-min", type=float, default=10.0, help="end a worker silent this long (default 10)")
    p.add_argument("--merge", choices=("ff", "merge"), help="land by fast-forward (rebased) or merge commit "
                                                          "(default: work_merge in .plugkit/config.toml, else ff)")
    p.add_argument("--network", choices=WORK_NETWORKS,
                   help="the workers' network: host (default: the workspace's work_network), or loopback-model: "
                        "loopback only, reaching this runner and the model endpoints their *_BASE_URL name")
    p.add_argument("--no-sandbox", dest="sandbox", action="store_false",
                   help="a person's override: run the workers without the bwrap sandbox (status shows it)")
    p.add_argument("--no-quota-wait", dest="quota_wait", action="store_false",
                   help="a worker stopped by its model's usage limit fails its attempt (retried once) instead "
                        "of waiting, its worktree kept, until the limit resets")
    p.add_argument("--runtime", choices=WORK_RUNTIMES, help="where workers run (default: work_runtime in "
                                                              ".plugkit/config.toml, else local)")
    p.add_argument("--cluster", metavar="HOST:PORT", help="--runtime ray: the cluster's GCS address "
                                                          "(default: work_cluster)")
    p.add_argument("--allow-remote-cluster", action="store_true",
                   help="a person's override: send workers to a cluster that is neither on this machine nor TLS")
    p.add_argument("--wait", type=float, default=0.0, help="follow the run up to S seconds, a line per event "
                                                           "(started, worker exited, check, landed, held)")
    _common(p)
    return p


def _caps(p: BriefParser, verb: str) -> None:
    """The token and cost caps: counted from the workers' own telemetry; a spent one pauses the run."""
    p.add_argument("--budget-tokens", type=int, metavar="N", help=f"{verb} the run's model tokens (a spent cap "
                                                                   "pauses the run until a person raises it)")
    p.add_argument("--budget-cost", type=float, metavar="USD", help=f"{verb} the run's cost (workers that report "
                                                                     "their cost: claude-code)")
    p.add_argument("--item-budget-tokens", type=int, metavar="N", help=f"{verb} each item's tokens")
    p.add_argument("--item-budget-cost", type=float, metavar="USD", help=f"{verb} each item's cost")
    p.add_argument("--item-budget-min", type=float, metavar="M", help=f"{verb} each item's workers' wall time "
                                                                       "(minutes, over its attempts)")
    p.add_argument("--budget-day-tokens", type=int, metavar="N", help=f"{verb} the workspace's tokens per local day, "
                   "every run counted (renews at midnight; work_day_tokens in .plugkit/config.toml)")
    p.add_argument("--budget-day-cost", type=float, metavar="USD", help=f"{verb} the workspace's cost per local day "
                   "(work_day_cost in .plugkit/config.toml)")


def _cap_params(a) -> dict:
    return {k: v for k, v in (("budget_tokens", a.budget_tokens), ("budget_cost", a.budget_cost),
                              ("item_budget_tokens", a.item_budget_tokens),
                              ("item_budget_cost", a.item_budget_cost),
                              ("item_budget_min", a.item_budget_min), ("budget_day_tokens", a.budget_day_tokens),
                              ("budget_day_cost", a.budget_day_cost)) if v is not None}


def _call(a, method: str, **params) -> dict:
    me = Caller({"cwd": a.cwd, "session": a.session})
    client = connect()
    try:
        return client.call(method, me.params(**params), timeout=660.0)
    finally:
        client.close()


def _print(a, result: dict, lines: list[str]) -> int:
    print(json.dumps(result, indent=1) if a.json else "\n".join(lines))
    return 0


def _wait_ms(seconds: float) -> int:
    return int(max(0.0, min(seconds, 600.0)) * 1000)


@names_next("work")
def main(argv: list[str]) -> int:
    from client.show.terminal_text import guard_output

    guard_output()  # a worker's output, commit subjects and file names carry no control sequence to the terminal
    if argv and argv[0] in SUBS:
        return SUB_MAINS[argv[0]](argv[1:])
    a = _start_parser().parse_args(argv)
    if a.run is not None and not any(w == "--worker" or w.startswith("--worker=") for w in argv):
        a.worker = "command"  # --run alone means the command worker
    params: dict = {"parallel": a.parallel, "items": a.items, "worker": a.worker, "afk": a.afk,
                    "stall_min": a.stall_min, "env": dict(os.environ)}
    if not a.sandbox:
        params["sandbox"] = False
    if not a.quota_wait:
        params["quota_wait"] = False
    if a.network:
        params["network"] = a.network
    if a.run is not None:
        try:
            params["run"] = shlex.split(a.run)
        except ValueError as exc:
            print(f"plugkit work: --run: {exc}; quote it as one shell line", file=sys.stderr)
            return 2
    params.update({k: v for k, v in (("budget_min", a.budget_min), ("merge", a.merge), ("runtime", a.runtime),
                                     ("cluster", a.cluster)) if v is not None})
    params.update(_cap_params(a))
    if a.allow_remote_cluster:
        params["allow_remote_cluster"] = True
    result = _call(a, "work.start", **params)
    if a.wait <= 0:
        return _print(a, result, show.run_lines(result["run"]))
    return _follow(a, result["run"], a.wait)


EVENTS_WAIT_S = 10.0  # one work.events call waits this long for the next event (it answers at once on one)
FOLLOW_BACKLOG = 30  # `work status --follow`: the run's events so far, the newest this many


def _follow(a, run: dict | None, limit_s: float | None, backlog: int = 5000) -> int:
    """Print the run's journal line by line (not --json) until the run halts, waits for a person
    or ends, or `limit_s` passes (None: no limit); then its status. Ctrl-C stops following, never
    the run. Exit codes as `wait_exit` says, for `work` and `work status` alike."""
    if run is None:
        return _print(a, {"run": None}, show.run_lines(None))
    deadline = None if limit_s is None else time.monotonic() + max(0.0, min(limit_s, 600.0))
    seq, first = 0, True
    try:
        while True:
            left = EVENTS_WAIT_S if deadline is None else min(EVENTS_WAIT_S, deadline - time.monotonic())
            r = _call(a, "work.events", run=run["id"], after=seq, limit=backlog if first else 5000,
                      wait_ms=0 if first else _wait_ms(max(0.0, left)))
            if not a.json:
                if first and r["skipped"]:
                    print(f"... {r['skipped']} earlier event(s) of run {run['id']} "
                          f"(`plugkit work trace ITEM` shows an item's)", flush=True)
                for ev in r["events"]:
                    print(event_line(ev, r["started_at"]), flush=True)
            seq, first = r["seq"], False
            if r["ended"] or r["state"] != "running" or (deadline is not None and time.monotonic() >= deadline):
                break
    except KeyboardInterrupt:
        print(f"\nplugkit: stopped following; run {run['id']} goes on in the runner: `plugkit work status "
              "--follow` follows it again, `plugkit work stop` ends it", file=sys.stderr)
        return 130
    run = _call(a, "work.status", run=run["id"])["run"]
    _print(a, {"run": run}, show.run_lines(run))
    return show.wait_exit(run)


def _secrets(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work ray-secrets",
                    description="Make the Ray cluster's token and the node key (0600 files, once); print "
                                "the environment `ray start` and the nodes need.")
    _common(p)
    a = p.parse_args(argv)
    from plugkit import paths
    from plugkit.work import cluster

    token, key = cluster.secret_paths(os.environ, paths.home())
    made = [path for path in (token, key) if cluster.make_secret(path)]
    lines = [f"export {cluster.AUTH_MODE_VAR}=token {cluster.TOKEN_PATH_VAR}={shlex.quote(token)} "
             f"{cluster.NODE_KEY_VAR}={shlex.quote(key)}"]
    for path, what in ((token, "the cluster's token"), (key, "the node key")):
        problem = cluster.secret_problem(path, what)
        if problem:
            print(f"plugkit work ray-secrets: {problem}", file=sys.stderr)
            return 1
    if a.json:
        print(json.dumps({"token": token, "node_key": key, "made": made}))
    else:
        print("\n".join(lines))
    return 0


def _status(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work status", description="The workspace's latest run (or run RUN, "
                                                            "from `plugkit work runs`), why it halted first.")
    p.add_argument("run", nargs="?", metavar="RUN", help="a kept run's id, or its prefix (default: the latest)")
    how = p.add_mutually_exclusive_group()
    how.add_argument("--wait", type=float, default=0.0, help="follow it up to S seconds (a line per event) "
                                                             "until it halts or ends")
    how.add_argument("--follow", action="store_true", help="follow it (a line per event) until it halts or "
                                                           "ends; Ctrl-C stops following, not the run")
    _common(p)
    a = p.parse_args(argv)
    following = a.follow or a.wait > 0
    # Following, a first short wait: a run waiting for a person who just answered is looked at
    # again by the runner (`plugkit approve`), so it is followed resumed, not ended stale.
    result = _call(a, "work.status", run=a.run, wait_ms=_wait_ms(0.5) if following else 0)
    if following:
        return _follow(a, result["run"], None if a.follow else a.wait, backlog=FOLLOW_BACKLOG)
    return _print(a, result, show.run_lines(result["run"]))


def _stop(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work stop", description="End every running worker and the run.")
    _common(p)
    a = p.parse_args(argv)
    result = _call(a, "work.stop")
    return _print(a, result, show.run_lines(result["run"]))


def _rollback(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work rollback", description="Undo a landed high or critical item.")
    p.add_argument("item")
    _run_option(p)
    _common(p)
    a = p.parse_args(argv)
    r = _call(a, "work.rollback", item=a.item, run=a.run)
    return _print(a, r, [f"{r['item']} rolled back by {r['how']}; the branch is at {r['head'][:12]}; "
                         f"the item is pending again"])


def _allow_check(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work allow-check", description=(
        "A person lets the item's branch change the files of its own check (held blocked/touches_check "
        "until then); kept until the item lands."))
    p.add_argument("item")
    _common(p)
    a = p.parse_args(argv)
    r = _call(a, "work.allow_check", item=a.item)
    return _print(a, r, [f"{a.item} may change its own check ({r['run']['check_allowed'].get(a.item)}); "
                         f"next: plugkit prd update {a.item} --status pending && plugkit work"])


def _resume(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work resume", description=(
        "A person raises the caps of a run paused on a spent budget (from their own terminal): the run goes "
        "on, each paused item continuing on its kept branch."))
    _caps(p, "raise")
    _common(p)
    a = p.parse_args(argv)
    r = _call(a, "work.resume", **_cap_params(a))
    return _print(a, r, show.run_lines(r["run"]))


def _logs(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work logs", description="A worker's output (its latest attempt).")
    p.add_argument("item")
    p.add_argument("--verify", action="store_true", help="the item's latest verify run instead")
    p.add_argument("--follow", action="store_true", help="keep printing until the task ends")
    p.add_argument("--all", action="store_true", help="from the start (default: the last 8 KB)")
    _run_option(p)
    _common(p)
    a = p.parse_args(argv)
    r = _call(a, "work.logs", item=a.item, run=a.run, verify=a.verify, max_bytes=0)
    deadline = time.monotonic() + FOLLOW_START_S
    while a.follow and r["task_id"] is None and time.monotonic() < deadline:  # queued: wait for it to start
        time.sleep(0.3)
        r = _call(a, "work.logs", item=a.item, run=a.run, verify=a.verify, max_bytes=0)
    if a.json and not a.follow:
        r = _call(a, "work.logs", item=a.item, run=a.run, verify=a.verify, cursor=0 if a.all else max(0, r["end"] - LOG_TAIL))
        return _print(a, r, [])
    if r["task_id"] is None:
        run = _call(a, "work.status", run=a.run)["run"]
        it = next((i for i in (run or {}).get("items", []) if i["id"] == a.item), None)
        print(show.never_started(a.item, "verify run" if a.verify else "worker", it, run))
        return 0
    cursor = 0 if a.all else max(0, r["end"] - LOG_TAIL)
    if cursor:
        print(f"[plugkit] ... {cursor} earlier bytes (--all shows them)")
    while True:
        r = _call(a, "work.logs", item=a.item, run=a.run, verify=a.verify, cursor=cursor, wait_ms=10_000 if a.follow else 0)
        for _stream, text in r["chunks"]:
            sys.stdout.write(text)
        sys.stdout.flush()
        cursor = r["cursor"]
        if r["more"]:
            continue
        if not a.follow or r["finished"]:
            if r["finished"] and r["end"] == 0:  # an empty answer must not read as "no logs yet"
                print(_silent(a, r["task_id"]))
            return 0


def _silent(a, task_id: int) -> str:
    """What a finished task that printed nothing ended as: a red check that printed nothing is
    still red, and says so."""
    run = _call(a, "work.status", run=a.run)["run"]
    it = next((i for i in (run or {}).get("items", []) if i["id"] == a.item), None) or {}
    what = "check" if a.verify else "worker"
    verdict = f"; the check was {it['verify']}" if a.verify and it.get("verify") else ""
    why = f" ({it['message'].splitlines()[0][:160]})" if a.verify and it.get("verify") == "red" and it.get("message") else ""
    return f"[plugkit] task_{task_id} (the {what}) printed nothing{verdict}{why}"


def _run_option(p: BriefParser) -> None:
    p.add_argument("--run", metavar="RUN", help="an earlier run's id or its prefix (`plugkit work runs`; "
                                                "default: the latest run)")


def _runs(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work runs", description="The workspace's kept runs, newest first.")
    p.add_argument("--limit", type=int, default=20, help="at most this many (default 20)")
    _common(p)
    a = p.parse_args(argv)
    r = _call(a, "work.runs", limit=max(1, min(a.limit, 200)))
    return _print(a, r, work_events.runs_lines(r["runs"]))


def _trace(argv: list[str]) -> int:
    p = BriefParser(prog="plugkit work trace", description=(
        "What one attempt's worker did, as the runner saw it: spawn, first heartbeat, each tool call its "
        "hooks reported (allowed/denied and why), each exec: task, the check, the landing. The first line "
        "says what it did last."))
    p.add_argument("item")
    p.add_argument("--attempt", type=int, metavar="N", help="which attempt (default: the latest)")
    p.add_argument("--all", action="store_true", help=f"every kept event (default: the last {work_events.MAX_TRACE})")
    _run_option(p)
    _common(p)
    a = p.parse_args(argv)
    r = _call(a, "work.events", run=a.run, item=a.item, attempt=a.attempt, limit=5000)
    if r["run"] is None:
        return _print(a, {"run": None}, show.run_lines(None))
    run = _call(a, "work.status", run=r["run"])["run"]
    it = next(i for i in run["items"] if i["id"] == a.item)
    return _print(a, r, work_events.trace_lines(it, r, r["attempt"], a.all))


SUB_MAINS = {"status": _status, "stop": _stop, "runs": _runs, "logs": _logs, "trace": _trace, "rollback": _rollback,
             "allow-check": _allow_check, "ray-secrets": _secrets, "resume": _resume}
