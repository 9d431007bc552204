"""A workspace's spend per local day (issue 47 #1's per-day caps), kept in the runner's home.

The day is the person's: the runner's local calendar day (it runs as that person, in their
time zone), so a cap of "N tokens a day" renews at their midnight, not at UTC's. Every run of
the workspace adds to it (one runner drives a workspace's runs, one at a time), and it is on
disk (`$PLUGKIT_HOME/work-days/<workspace key>.json`, 0600 in a 0700 directory, rewritten
atomically), so neither a new run nor a runner restart starts the day from zero. Only the
last KEEP_DAYS days are kept. Pure but for that file; `now` is always passed in (the clock is
the manager's).
"""

import json
import os
import time
from typing import Any, Optional

from runner.core.work.store import workspace_key, write_atomic

KEEP_DAYS = 7
DAY_CAPS = ("day_tokens", "day_cost")  # runner/core/work/budget.py's CAPS rows counted per day


def day_of(now: float) -> str:
    """The local calendar day of `now`: what a per-day cap is counted against."""
    return time.strftime("%Y-%m-%d", time.localtime(now))


def next_day(now: float) -> float:
    """When the local day of `now` ends (its next local midnight; a DST change moves it, not the date)."""
    t = time.localtime(now)
    midnight = time.mktime((t.tm_year, t.tm_mon, t.tm_mday + 1, 0, 0, 0, 0, 0, -1))
    return midnight if midnight > now else now + 24 * 3600


def today(kept: dict, now: float) -> tuple[int, float]:
    """(tokens, cost) of `kept` (a run's copy, or the ledger's) on the local day of `now`: nothing
    once that day is over, which is how a per-day cap renews."""
    if kept.get("date") != day_of(now):
        return 0, 0.0
    return int(kept.get("tokens", 0)), float(kept.get("cost", 0.0))


def at_start(caps: dict[str, float], cfg: Any) -> dict[str, float]:
    """A run's caps: the caller's, with the workspace's day caps (work_day_tokens, work_day_cost).
    Where both name one, the lower holds: whoever starts the run (an agent may) cannot lift the
    workspace's; only a person's `plugkit work resume` raises a cap."""
    for cap, setting in (("day_tokens", cfg.work_day_tokens), ("day_cost", cfg.work_day_cost)):
        if setting is not None:
            caps[cap] = float(min(setting, caps.get(cap, setting)))
    return caps


class DaySpend:
    """Each workspace's spend per local day, in the runner's home (None: kept in memory only)."""

    def __init__(self, home: Optional[str]) -> None:
        self.dir = os.path.join(home, "work-days") if home else None
        self._days: dict[str, dict[str, dict]] = {}  # workspace -> day -> {tokens, cost}

    def _file(self, workspace: str) -> Optional[str]:
        return os.path.join(self.dir, f"{workspace_key(workspace)}.json") if self.dir else None

    def _load(self, workspace: str) -> dict[str, dict]:
        if workspace not in self._days:
            days: dict[str, dict] = {}
            path = self._file(workspace)
            try:
                with open(path or "", "rb") as fh:
                    raw = json.load(fh)
                if isinstance(raw, dict) and raw.get("workspace") == workspace and isinstance(raw.get("days"), dict):
                    days = {d: {"tokens": int(v.get("tokens", 0)), "cost": float(v.get("cost", 0.0))}
                            for d, v in raw["days"].items() if isinstance(v, dict)}
            except (OSError, ValueError, TypeError, AttributeError):
                pass  # none yet, or unreadable: the day starts from what this runner counts
            self._days[workspace] = days
        return self._days[workspace]

    def for_run(self, workspace: str, now: float, caps: dict[str, float]) -> dict:
        """A new run's copy (Run.day_spend): the day's spend of its earlier runs, when it has a day cap."""
        return self.spent(workspace, now) if any(c in DAY_CAPS for c in caps) else {}

    def spent(self, workspace: str, now: float) -> dict:
        """The day of `now` and its spend so far: a run keeps this copy (Run.day_spend)."""
        day = day_of(now)
        kept = self._load(workspace).get(day, {"tokens": 0, "cost": 0.0})
        return {"date": day, "tokens": kept["tokens"], "cost": kept["cost"]}

    def add(self, workspace: str, now: float, tokens: int, cost: float) -> dict:
        """Spend reported at `now` added to its day, on disk before it is answered."""
        days = self._load(workspace)
        day = day_of(now)
        kept = days.setdefault(day, {"tokens": 0, "cost": 0.0})
        kept["tokens"] += int(tokens)
        kept["cost"] += float(cost)
        for old in sorted(days)[:-KEEP_DAYS]:
            del days[old]
        path = self._file(workspace)
        if path is not None:
            write_atomic(path, json.dumps({"workspace": workspace, "days": days}).encode())
        return self.spent(workspace, now)
