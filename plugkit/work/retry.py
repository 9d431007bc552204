"""The retry rule of `plugkit work`, one policy: what an item's next step is once an attempt ended.

Before it had a name the rule lived as literals and ifs in the attempt loop and the run driver
(the two passes, which ends are retried, which send the item back to PLAN, which halt an
unattended run, which do not count as a failed pass); here it is one frozen object with named
knobs and one method, `after`, and every caller acts on its answer. The reason words are
plugkit.vocab's rows; this module only says what follows from each.
"""

from dataclasses import dataclass
from typing import Optional

from plugkit.vocab import (WORK_HELD_REASONS, WORK_MAX_REPLACEMENTS, WORK_REPLACED_REASONS,
                           WORK_RETRIED_REASONS)

# What happens next (Next.action).
WAIT = "wait"  # parked on a usage limit: waits out its reset, worktree kept, then goes on
PAUSE = "pause"  # a spent budget ended it: branch kept, resumed when a person raises the cap
AGAIN = "again"  # the cluster lost its node: placed again, not the item's failure
RETRY = "retry"  # a failed pass with passes left: a fresh worktree, told why the last one failed
REPLAN = "replan"  # its last pass failed: blocked/replan, the workspace back to PLAN
HOLD = "hold"  # an end a person looks at first: blocked in .prd
END = "end"  # any other end (a stop, the budget, a refusal): as it ended
ACTIONS = (WAIT, PAUSE, AGAIN, RETRY, REPLAN, HOLD, END)


@dataclass(frozen=True)
class Next:
    action: str  # one of ACTIONS
    counted: bool = False  # a failed pass: `failures` grows by one
    prd: Optional[str] = None  # the .prd status the item gets; None: left as it is
    halts: bool = False  # an unattended (--afk) run halts: no new worker starts


@dataclass(frozen=True)
class RetryPolicy:
    passes: int = 2  # failed passes an item gets before it goes back to PLAN (the two-pass rule)
    retried: frozenset[str] = WORK_RETRIED_REASONS  # ends that count as a failed pass
    held: frozenset[str] = WORK_HELD_REASONS  # ends held for a person (and halting an --afk run)
    replaced: frozenset[str] = WORK_REPLACED_REASONS  # the cluster's ends: placed again, uncounted
    max_replacements: int = WORK_MAX_REPLACEMENTS  # ... at most this many times per item
    waited: frozenset[str] = frozenset({"quota"})  # ends waited out, uncounted (quota.py)
    paused: str = "paused"  # the state a spent budget ends an attempt in, uncounted (budget.py)
    kept: frozenset[str] = frozenset({"refused"})  # ends that leave the .prd status as the gates left it
    # Not decided here because no attempt's end reaches `after`: an interruption by the runner's
    # death is resumed at boot (resume.py) and, like every uncounted end above, leaves `failures`.

    def after(self, state: str, reason: str, *, failures: int, node_losses: int, stopping: bool,
              afk: bool) -> Next:
        """What follows an attempt that ended (state, reason), for an item that failed `failures`
        passes and lost `node_losses` nodes before it, in a run being stopped or not, --afk or not.
        A stop (by a person or the budget) is never retried: the item ends as the stop ended it."""
        if reason in self.waited:
            return Next(WAIT)
        if state == self.paused and not stopping:
            return Next(PAUSE)
        if reason in self.replaced and not stopping and node_losses < self.max_replacements:
            return Next(AGAIN)
        if reason in self.retried and not stopping:
            if failures + 1 < self.passes:
                return Next(RETRY, counted=True)
            return Next(REPLAN, counted=True, prd="blocked", halts=afk)
        if reason in self.held:
            return Next(HOLD, prd="blocked", halts=afk)
        return Next(END, prd=None if reason in self.kept else "pending")


POLICY = RetryPolicy()
