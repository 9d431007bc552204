"""A run's journal: every event of a `plugkit work` run in order, kept beside the run's file.

One source for whoever watches: `work --wait` and `work status --follow` print it line by
line, `work trace ITEM` reads one attempt's part of it, the page shows it. Events are what
plugkit.work.events' rows see change on an item (worker started, exited, check, landed, held
and why), the run's own state, and what only the runner witnesses: a worker's first heartbeat,
each tool call its hooks reported (allowed or denied, and why), each `exec:` task it started,
each call refused as not its own. Appended as JSON lines (a restarted runner reads a past run's
journal back); bounded: at most MAX_EVENTS per run and MAX_TOOLS tool calls per attempt, with a
count of what was left out.
"""

import asyncio
import json
import os
from typing import Any, Callable, Optional

from plugkit.work import events as rows
from runner.core.work.model import ItemRun, Run
from runner.system import logs

log = logs.get("plugkit.work")

MAX_EVENTS = 5000
MAX_TOOLS = 400  # tool calls kept per attempt; the rest are counted
TEXT = 300  # one event's text, cut


def _snapshot(it: ItemRun) -> dict:
    return {name: getattr(it, name) for name in rows.FIELDS}


def read(path: Optional[str]) -> list[dict]:
    """A past run's journal from its file (what a restarted runner shows of it)."""
    if not path:
        return []
    out = []
    try:
        with open(path, encoding="utf-8", errors="replace") as fh:
            for line in fh:
                try:
                    ev = json.loads(line)
                except ValueError:
                    continue  # a line cut by a crash mid-write: the rest stands
                if isinstance(ev, dict) and isinstance(ev.get("seq"), int):
                    out.append(ev)
    except OSError:
        return []
    return out[-MAX_EVENTS:]


class RunJournal:
    def __init__(self, run: Run, path: Optional[str], clock: Callable[[], float]) -> None:
        self.run_id, self.path, self.clock = run.id, path, clock
        self.events: list[dict] = read(path)
        self.seq = self.events[-1]["seq"] if self.events else 0
        self.seen: dict[str, dict] = {i.id: _snapshot(i) for i in run.items.values()} if self.events else {}
        self.state: Optional[str] = run.state if self.events else None
        self.tools: dict[tuple[str, int], int] = {}
        self.booted: set[tuple[str, int]] = set()
        self.dropped = 0
        self._changed = asyncio.Event()
        self._heal()

    def _heal(self) -> None:
        """A line a crash cut short is ended, so the next event starts a line of its own."""
        try:
            with open(self.path or "", "rb+") as fh:
                if fh.seek(0, os.SEEK_END) and (fh.seek(-1, os.SEEK_END), fh.read(1))[1] != b"\n":
                    fh.write(b"\n")
        except OSError:
            pass  # no journal yet

    # --- recording -------------------------------------------------------------------------

    def _append(self, item: Optional[str], attempt: int, kind: str, text: str, **extra: Any) -> None:
        if len(self.events) >= MAX_EVENTS:
            self.dropped += 1
            return
        self.seq += 1
        ev = {"seq": self.seq, "t": self.clock(), "item": item, "attempt": attempt, "kind": kind,
              "text": text[:TEXT], **extra}
        self.events.append(ev)
        if self.path:
            try:
                with open(self.path, "a", encoding="utf-8") as fh:
                    fh.write(json.dumps(ev, ensure_ascii=False) + "\n")
            except OSError as exc:  # the watchers still see it; only a restart would lose it
                log.warning("work_journal_write_failed", run=self.run_id, error=exc.strerror or str(exc))
        self._changed.set()
        self._changed = asyncio.Event()

    def observe(self, run: Run) -> None:
        """What changed on the run and its items since last looked: one event per row that says so."""
        for it in run.items.values():
            self.observe_item(it)
        if run.state != self.state:
            if self.state is not None or run.state != "running":
                self._append(None, 0, "run", f"run {run.id} {run.state}" + (f": {run.halt}" if run.halt else ""),
                             state=run.state)
            self.state = run.state

    def observe_item(self, it: ItemRun) -> None:
        new = _snapshot(it)
        old = self.seen.get(it.id)
        if old == new:
            return
        for text in rows.changes(old, new):
            self._append(it.id, it.attempt, "item", text, state=it.state)
        self.seen[it.id] = new

    def boot(self, it: ItemRun) -> None:
        """A worker's first heartbeat in this attempt: it booted and its hooks reach the runner."""
        key = (it.id, it.attempt)
        if key not in self.booted and it.state == "running":
            self.booted.add(key)
            self._append(it.id, it.attempt, "boot", "first heartbeat: the worker's host is up and its hooks "
                                                    "reach the runner")

    def tool(self, it: ItemRun, tool: str, summary: str, decision: str, reason: str = "") -> None:
        key = (it.id, it.attempt)
        n = self.tools[key] = self.tools.get(key, 0) + 1
        if n > MAX_TOOLS:
            return
        word = "allowed" if decision == "allow" else "denied"
        self._append(it.id, it.attempt, "tool", f"{tool} {summary}".strip() + f": {word}"
                     + (f" ({reason.splitlines()[0][:160]})" if reason and decision != "allow" else ""),
                     tool=tool, decision=word)

    def exec(self, it: ItemRun, task_id: int, lang: str, code: str) -> None:
        first = (code.strip().splitlines() or [""])[0][:120]
        self._append(it.id, it.attempt, "exec", f"exec:{lang} task_{task_id}: {first}", task_id=task_id)

    def refused(self, it: ItemRun, what: str) -> None:
        self._append(it.id, it.attempt, "refused", f"refused (not its own item): {what}")

    # --- reading ---------------------------------------------------------------------------

    def since(self, after: int, item: Optional[str] = None, attempt: Optional[int] = None) -> list[dict]:
        """Events past `after`: every one, or one item's (of one attempt)."""
        return [ev for ev in self.events if ev["seq"] > after and (item is None or ev["item"] == item)
                and (attempt is None or ev["attempt"] == attempt)]

    def tools_left_out(self, item: str, attempt: int) -> int:
        return max(0, self.tools.get((item, attempt), 0) - MAX_TOOLS)

    async def wait(self, after: int, timeout_s: float) -> None:
        """Until an event past `after` is recorded, or the timeout."""
        if self.seq > after or timeout_s <= 0:
            return
        try:
            await asyncio.wait_for(self._changed.wait(), timeout_s)
        except asyncio.TimeoutError:
            pass
