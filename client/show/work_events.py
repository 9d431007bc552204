"""What `plugkit work --wait` prints as a run goes: one line per event, read off successive
`work.status` answers (the runner keeps the state; the client says what changed since it last
looked). Events are rows: a field of an item that changed, and the line that says so."""

from __future__ import annotations

import time
from typing import Callable, Optional

from plugkit import vocab

Item = dict
UNFINISHED = frozenset(vocab.WORK_TERMINAL_STATES) - {vocab.COMPLETED}  # ended without landing
# (what changed, the line for it): each row looks at the item before (None: first seen) and now.
Row = Callable[[Optional[Item], Item], Optional[str]]


def _started(old: Optional[Item], new: Item) -> Optional[str]:
    # While spawning, `attempt` already counts the next try but `task_id` still names the last.
    if new["state"] == "spawning":
        return None
    if new.get("task_id") is not None and (old is None or old.get("task_id") != new["task_id"]):
        attempt = f"attempt {new.get('attempt') or 1}, " if (new.get("attempt") or 1) > 1 else ""
        node = f" on node {new['node']}" if new.get("node") else ""
        return f"worker started ({attempt}task_{new['task_id']}{node})"
    return None


def _worker_ended(old: Optional[Item], new: Item) -> Optional[str]:
    # The check starts once the worker's task is over: its verify task appears.
    if new.get("verify_task_id") is not None and (old is None or old.get("verify_task_id") != new["verify_task_id"]):
        return f"worker exited; the runner's check runs (task_{new['verify_task_id']})"
    return None


def _checked(old: Optional[Item], new: Item) -> Optional[str]:
    if new.get("verify") in ("green", "red") and (old is None or old.get("verify") != new["verify"]
                                                  or old.get("verify_task_id") != new.get("verify_task_id")):
        return f"check {new['verify']}" + (f" (task_{new['verify_task_id']})" if new.get("verify_task_id") else "")
    return None


def _landed(old: Optional[Item], new: Item) -> Optional[str]:
    if new.get("landed") and (old is None or old.get("landed") != new["landed"]):
        receipt = f", receipt {new['receipt'][:12]}" if new.get("receipt") else ""
        return f"landed as {new['landed'][:12]}{receipt}"
    return None


def _state(old: Optional[Item], new: Item) -> Optional[str]:
    if old is not None and old["state"] == new["state"] and old.get("reason") == new.get("reason"):
        return None
    state = new["state"]
    if state in ("queued", "spawning", "running") or (state == "completed" and new.get("landed")):
        return None  # said by the rows above (started, landed) or not news
    word = state + (f"/{new['reason']}" if new.get("reason") else "")
    why = (new.get("message") or "").split("\n", 1)[0][:160]
    line = f"{word}: {why}" if why else word
    return line + (f"; next: {hint}" if (hint := retry_hint(new)) else "")


ROWS: tuple[Row, ...] = (_started, _worker_ended, _checked, _landed, _state)


def retry_hint(it: Item) -> str:
    """For an item held or ended without landing: the exact commands that try it again, and the
    branch its work is kept on (empty for one that needs nothing, or a person's approval)."""
    if it["state"] not in UNFINISHED:
        return ""
    kept = f" (its work is kept on branch {it['branch']})" if it.get("branch") else ""
    return f"plugkit prd update {it['id']} --status pending && plugkit work --items {it['id']}{kept}"


class EventStream:
    """Feed it each `work.status` run; it returns the new lines, each with its time since start."""

    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.seen: dict[str, Item] = {}
        self.state: Optional[str] = None
        self.clock = clock
        self.t0 = clock()

    def feed(self, run: Optional[dict]) -> list[str]:
        if run is None:
            return []
        stamp = f"+{self.clock() - self.t0:6.1f}s"
        lines = []
        for it in run["items"]:
            old = self.seen.get(it["id"])
            for row in ROWS:
                said = row(old, it)
                if said:
                    lines.append(f"{stamp}  {it['id']:<8} {said}")
            self.seen[it["id"]] = it
        if run["state"] != self.state:
            if self.state is not None or run["state"] != "running":
                halt = f": {run['halt']}" if run.get("halt") else ""
                lines.append(f"{stamp}  run {run['id']} {run['state']}{halt}")
            self.state = run["state"]
        return lines
