"""What counts as an event of a `plugkit work` run: rows, each looking at an item before (None:
first seen) and now and saying in one line what changed (worker started, exited, check green/red,
landed, held and why with the retry command). The runner's journal (runner/core/work/journal.py)
applies them as the run goes; `work --wait`, `work status --follow`, `work trace` and the page
read what it recorded. Pure logic on the item's fields by name."""

from __future__ import annotations

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


def _per_attempt(name: str, old: Optional[Item], new: Item) -> Optional[str]:
    """A line the attempt sets once (its readiness, its teardown): said when it is new, or the same
    text again on a later attempt."""
    said = new.get(name)
    if said and (old is None or old.get(name) != said or old.get("attempt") != new.get("attempt")):
        return said
    return None


def _ready(old: Optional[Item], new: Item) -> Optional[str]:
    return _per_attempt("ready", old, new)


def _torn_down(old: Optional[Item], new: Item) -> Optional[str]:
    return _per_attempt("teardown", old, new)


def _worker_ended(old: Optional[Item], new: Item) -> Optional[str]:
    # The worker's task is over once its item moves on to the runner's own judging.
    if new["state"] == "verifying" and (old is None or old["state"] != "verifying"):
        return "worker exited; the runner judges its commits"
    return None


def _check_started(old: Optional[Item], new: Item) -> Optional[str]:
    if new.get("verify_task_id") is not None and (old is None or old.get("verify_task_id") != new["verify_task_id"]):
        return f"the runner's check runs (task_{new['verify_task_id']})"
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
    if state == "spawning" and new.get("reason"):  # an attempt ended and the item is tried again: why
        return "tried again: " + (new.get("message") or new["reason"]).split("\n", 1)[0][:200]
    if state in ("queued", "spawning", "running", "verifying", "landing") or (state == "completed" and new.get("landed")):
        return None  # said by the rows above (started, landed) or not news
    word = state + (f"/{new['reason']}" if new.get("reason") else "")
    why = (new.get("message") or "").split("\n", 1)[0][:160]
    line = f"{word}: {why}" if why else word
    return line + (f"; next: {hint}" if (hint := retry_hint(new)) else "")


ROWS: tuple[Row, ...] = (_ready, _started, _worker_ended, _check_started, _checked, _landed, _torn_down, _state)
FIELDS = ("id", "state", "reason", "message", "attempt", "task_id", "verify_task_id", "verify", "landed",
          "receipt", "branch", "node", "ready", "teardown")  # what the rows read: the journal snapshots these only


def changes(old: Optional[Item], new: Item) -> list[str]:
    """The lines the rows say for one item's change (none when nothing they watch moved)."""
    return [said for row in ROWS if (said := row(old, new))]


def retry_hint(it: Item) -> str:
    """For an item held or ended without landing: the exact commands that try it again, and the
    branch its work is kept on (empty for one that needs nothing, or a person's approval)."""
    if it["state"] not in UNFINISHED:
        return ""
    kept = f" (its work is kept on branch {it['branch']})" if it.get("branch") else ""
    return f"plugkit prd update {it['id']} --status pending && plugkit work --items {it['id']}{kept}"
