"""The retry rule as one table: each attempt's end, for an item's history and the run's mode,
gives one next step (plugkit/work/retry.py); every end the vocab names gets exactly one."""

import pytest

from plugkit.vocab import WORK_HELD_REASONS, WORK_REASONS, WORK_RETRIED_REASONS
from plugkit.work.retry import ACTIONS, AGAIN, END, HOLD, PAUSE, POLICY, REPLAN, RETRY, WAIT, Next, RetryPolicy

# (state, reason, failures before, node losses before, stopping, afk) -> what follows
TABLE = [
    # the two-pass rule: a first failed pass is tried once more, a second goes back to PLAN
    (("failed", "worker_exit", 0, 0, False, False), Next(RETRY, counted=True)),
    (("rejected", "verify_failed", 0, 0, False, True), Next(RETRY, counted=True)),
    (("timed_out", "stalled", 1, 0, False, False), Next(REPLAN, counted=True, prd="blocked")),
    (("rejected", "no_commits", 1, 0, False, True), Next(REPLAN, counted=True, prd="blocked", halts=True)),
    # an eviction from the landing queue is a retried end too (issue 48 #4)
    (("rejected", "evicted", 0, 0, False, False), Next(RETRY, counted=True)),
    (("rejected", "evicted", 1, 0, False, True), Next(REPLAN, counted=True, prd="blocked", halts=True)),
    # a stop is never retried, whatever the end it caused
    (("failed", "worker_exit", 0, 0, True, True), Next(END, prd="pending")),
    (("killed", "stopped", 0, 0, True, False), Next(END, prd="pending")),
    (("timed_out", "budget", 0, 0, True, True), Next(END, prd="pending")),
    # held for a person: blocked in .prd; an --afk run halts, stopping or not
    (("blocked", "merge_conflict", 0, 0, False, False), Next(HOLD, prd="blocked")),
    (("rejected", "refs_moved", 0, 0, False, True), Next(HOLD, prd="blocked", halts=True)),
    (("blocked", "usage_limit", 0, 0, True, True), Next(HOLD, prd="blocked", halts=True)),
    # not a failed pass: a usage limit waited out, a spent budget's pause, a lost node
    (("waiting_quota", "quota", 1, 0, False, True), Next(WAIT)),
    (("paused", "budget_spent", 1, 0, False, True), Next(PAUSE)),
    (("paused", "budget_spent", 0, 0, True, False), Next(END, prd="pending")),  # a stop ends a pause
    (("killed", "node_lost", 1, 2, False, True), Next(AGAIN)),
    (("killed", "node_lost", 1, 3, False, True), Next(END, prd="pending")),  # the cluster lost it too often
    (("killed", "node_lost", 0, 0, True, False), Next(END, prd="pending")),
    # a refusal by the gates leaves the .prd status as the gates left it
    (("rejected", "refused", 0, 0, False, True), Next(END)),
    (("rejected", "not_ready", 0, 0, False, False), Next(END, prd="pending")),
]


@pytest.mark.parametrize("end,expected", TABLE, ids=[f"{e[0]}/{e[1]}-f{e[2]}-n{e[3]}"
                                                     f"{'-stop' if e[4] else ''}{'-afk' if e[5] else ''}"
                                                     for e, _ in TABLE])
def test_the_next_step_after_an_attempt(end, expected):
    state, reason, failures, losses, stopping, afk = end
    assert POLICY.after(state, reason, failures=failures, node_losses=losses, stopping=stopping,
                        afk=afk) == expected


def test_every_end_the_vocab_names_has_one_next_step_and_only_retried_ends_count():
    for reason in WORK_REASONS:
        for failures in range(POLICY.passes):
            nxt = POLICY.after("failed", reason, failures=failures, node_losses=0, stopping=False, afk=True)
            assert nxt.action in ACTIONS
            assert nxt.counted == (reason in WORK_RETRIED_REASONS), reason
            assert nxt.halts == (nxt.action in (REPLAN, HOLD)), reason
    assert not WORK_HELD_REASONS & WORK_RETRIED_REASONS  # an end is held or retried, never both


def test_the_knobs_are_the_rule():
    three = RetryPolicy(passes=3)
    counts = [three.after("failed", "worker_exit", failures=f, node_losses=0, stopping=False, afk=False).action
              for f in range(3)]
    assert counts == [RETRY, RETRY, REPLAN]
    strict = RetryPolicy(retried=frozenset(), held=POLICY.held | {"worker_exit"})
    assert strict.after("failed", "worker_exit", failures=0, node_losses=0, stopping=False,
                        afk=True) == Next(HOLD, prd="blocked", halts=True)
    with pytest.raises(AttributeError):
        POLICY.passes = 5  # frozen: one policy for every run, never changed under a running one
