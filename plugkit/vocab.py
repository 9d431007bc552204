"""The words runner, client and docs share: task states, end reasons, the PLUGKIT_* environment tags.

No imports at all: the client's hot path loads this module (even `typing` would cost it ~3 ms).
Each word is declared here once; every other module imports it instead of spelling it again.
"""

# --- task states ------------------------------------------------------------------------------
# pending -> running -> one terminal state. There is no "rejected" task: a refused exec (the
# running-task cap, a bad language) is an RPC error and never becomes a task.
TASK_STATES: tuple[str, ...] = ("pending", "running", "completed", "failed", "killed", "timed_out")
PENDING, RUNNING, COMPLETED, FAILED, KILLED, TIMED_OUT = TASK_STATES
LIVE_STATES: tuple[str, ...] = (PENDING, RUNNING)
TERMINAL_STATES: frozenset[str] = frozenset(TASK_STATES) - frozenset(LIVE_STATES)

# --- end reasons: word -> the sentence shown after "task_N " ----------------------------------
# One table so the runner, the ledger (which writes runner_lost without the runner) and the docs agree.
END_REASONS: dict[str, str] = {
    "exit_zero": "exited with code 0",
    "exit_nonzero": "exited with a non-zero code",
    "signal": "was ended by a signal it did not handle",
    "timeout": "ran past its timeout and was killed with its whole process tree",
    "killed": "was killed on request",
    "session_end": "was killed because its session ended",
    "host_gone": "was killed because the agent host its session ran in exited",
    "runner_shutdown": "was killed because the runner shut down",
    "runner_restart": "was ended by a runner restart: what it held (a browser page, a serial port, a worker) "
                      "cannot cross one",
    "runner_lost": "was lost when the runner stopped unexpectedly",
    "spawn_failed": "could not be started",
    "attempt_ended": "was killed because the `plugkit work` attempt whose worker started it ended",
    "compile_error": "failed to compile",
    "device_lost": "lost its serial device (unplugged, or the other end of the line closed)",
    "closed": "was closed on request and its port released",
    "js_error": "threw an error in the page",
    "command_failed": "could not carry out its browser command",
    "page_lost": "lost its browser page",
    "browser_unavailable": "found no browser it could start",
    "browser_crashed": "lost its browser: Chromium died (the next browser task relaunches it)",
}


def end_message(task_id: int, reason: str) -> str:
    """`task_7 was killed on request`; an unknown reason word is shown as itself."""
    return f"task_{task_id} {END_REASONS.get(reason, reason)}"


# --- environment tags -------------------------------------------------------------------------
# Every process a task starts carries these in its environment: the kill sweep and the boot reaper
# find a task's processes by them, and the client refuses person-only steps inside a task.
RUNNER_ID_TAG = "PLUGKIT_RUNNER_ID"
TASK_ID_TAG = "PLUGKIT_TASK_ID"
SESSION_ID_TAG = "PLUGKIT_SESSION_ID"
HOME_TAG = "PLUGKIT_HOME"  # the runner's configuration (where its home is); never handed to a task
# A task names the runner's home by id only (a hash of its path): the home holds the token.
HOME_ID_TAG = "PLUGKIT_HOME_ID"
TAG_NAMES: frozenset[str] = frozenset({RUNNER_ID_TAG, TASK_ID_TAG, SESSION_ID_TAG, HOME_ID_TAG})
# The tags that say which runner/task/session a process belongs to. Never inherited: a runner (or
# a task) started from inside another runner's task would otherwise be killed along with it.
IDENTITY_TAGS: frozenset[str] = frozenset({RUNNER_ID_TAG, TASK_ID_TAG, SESSION_ID_TAG})

# Set inside a worker's sandbox (runner/system/sandbox.py): the runner lives in another PID
# namespace there, so the client checks it by /health alone and never starts one of its own.
SANDBOXED_TAG = "PLUGKIT_SANDBOXED"
# What a sandboxed `plugkit work` worker's network is (runner/system/netrelay.py):
#   host            the machine's network, as any program of the user has it;
#   loopback-model  its own network namespace: loopback only, where a relay the runner holds
#                   reaches this runner and the model endpoints its *_BASE_URL variables name.
WORK_NETWORKS = ("host", "loopback-model")
WORK_RUNTIMES: tuple[str, ...] = ("local", "ray")  # where `plugkit work` runs workers: here, or a Ray cluster

# --- languages only the runner starts ------------------------------------------------------------
# A worker task is handed the runner's home (where the token is): task.exec refuses it from the
# wire, and only `plugkit work`'s engine starts one.
WORKER_LANG = "worker"

# --- plugkit work: the state of an item's worker --------------------------------------------------
# queued -> (waiting for a person's approval) -> spawning -> running -> verifying -> landing -> one
# terminal state, with a reason word. "rejected" exists here and only here: the runner refused to
# close the item on the worker's word (its check was red, nothing was committed, ...).
# waiting_quota: its host hit a usage limit; parked (no slot, its worktree kept) until the reset.
WORK_LIVE_STATES: tuple[str, ...] = ("queued", "waiting", "spawning", "running", "verifying", "landing",
                                     "waiting_quota", "paused")
WORK_REJECTED = "rejected"
WORK_BLOCKED = "blocked"
WORK_TERMINAL_STATES: tuple[str, ...] = (COMPLETED, FAILED, KILLED, TIMED_OUT, WORK_REJECTED, WORK_BLOCKED)
WORK_ITEM_STATES: tuple[str, ...] = WORK_LIVE_STATES + WORK_TERMINAL_STATES
# The moves an item's worker makes; every move goes through runner.core.work.model.ItemRun.enter,
# which refuses any other. A worker's attempt may end in any terminal state, or go back to
# spawning for its second try; a landed item is rejected again only by a rollback; an item held
# in .prd (blocked/held) is queued again when a person re-queues it.
_WORK_ENDS = frozenset(WORK_TERMINAL_STATES)
WORK_ALLOWED: dict[str, frozenset[str]] = {
    "queued": frozenset({"waiting", "spawning", WORK_BLOCKED, KILLED}),
    "waiting": frozenset({"spawning", WORK_BLOCKED, KILLED}),
    "spawning": frozenset({"spawning", "running", "paused"}) | _WORK_ENDS,
    "running": frozenset({"spawning", "verifying", "waiting_quota", "paused"}) | _WORK_ENDS,
    "verifying": frozenset({"spawning", "landing", "waiting_quota"}) | _WORK_ENDS,  # exit 0, no commits
    "waiting_quota": frozenset({"spawning"}) | _WORK_ENDS,  # resumed at the reset, or stopped/held
    "landing": frozenset({"spawning"}) | _WORK_ENDS,
    # A spent budget (runner/core/work/budget.py): the attempt ended at the worker's next tool call,
    # its branch kept; a person raising the cap starts its next attempt there, or a stop ends it.
    "paused": frozenset({"spawning", KILLED}),
    COMPLETED: frozenset({WORK_REJECTED}),  # rolled back by a person
    WORK_BLOCKED: frozenset({"queued"}),  # re-queued in .prd by a person
    FAILED: frozenset(), KILLED: frozenset(), TIMED_OUT: frozenset(), WORK_REJECTED: frozenset(),
}
# Every reason word an item carries (the ends, and why one waits): the word is in status, the
# sentence in messages and docs. tests/unit/test_work_vocab.py scans the work core for the words it uses.
WORK_REASONS: dict[str, str] = {
    "landed": "verified in its worktree and landed on the run's branch",
    "worker_exit": "the worker exited with a failure",
    "spawn_failed": "the worker could not be started",
    "no_commits": "the worker stopped without committing anything on its branch",
    "control_files": "its branch changes .prd, .plugkit/ or .worktreeinclude (the plan, the checks and what reaches workers are a person's)",
    "verify_failed": "the verify command failed on a fresh checkout of the item's commits",
    "ci_red": "CI (work_ci) was red on the item's pushed branch commit",
    "ci_unconfirmed": "CI (work_ci) could not confirm the item's branch commit green (pending past its wait, or not asked)",
    "stalled": "the worker was silent (no hook call, no output) past --stall-min",
    "budget": "the run's --budget-min ran out",
    "budget_spent": "a token or cost cap was spent: paused, its branch kept, until a person raises the cap "
                    "(`plugkit work resume --budget-tokens N`)",
    "stopped": "the run was stopped (plugkit work stop)",
    "runner_restarted": "the runner stopped while the worker ran",
    "merge_conflict": "its branch does not land cleanly; the branch is kept for a person",
    "evicted": "the landing queue evicted its branch (it conflicts with what landed before it, or its check is red "
               "on the rebased tree): its next attempt starts from the new tip with the conflict or the check's output",
    "replan": "it failed twice: back to PLAN instead of a third try",
    "refused": "the gates refused to start it",
    "rolled_back": "a person rolled the landed item back (plugkit work rollback); it is pending again",
    "land_failed": "git could not land it; the branch is kept for a person",
    "internal": "plugkit work failed on this item (a bug: see the runner log)",
    "held": "blocked in .prd (by an earlier run, or a person): `plugkit prd update ID --status pending` re-queues it",
    "refs_moved": "the worker moved or wrote refs only the runner moves (restored, or never imported; kept as evidence)",
    "touches_check": "its branch changes the files of its own check; held until a person allows it",
    "bad_objects": "the worker wrote a forged or corrupt git object; nothing of it entered the repository",
    "symbolic_ref": "the worker planted a symbolic ref or link where refs are written (never followed)",
    "needs_approval": "it is critical and waits for a person's approval (`plugkit approve ID`)",
    "not_ready": "its worktree could not be made ready: an include or share reaches outside the repository",
    "setup_failed": "work_setup failed in the item's fresh worktree; the worker never started",
    "quota": "its host hit a usage limit: parked until the reset, then resumed in the same worktree (not a failure)",
    "usage_limit": "its host hit a usage limit with no reset time, or one too far away: held until a person retries",
    "node_lost": "the cluster node running its worker went away; placed again elsewhere (not counted as a failure)",
}
# Ends a person looks at first: the .prd item is marked blocked and an unattended run halts.
WORK_HELD_REASONS: frozenset[str] = frozenset({"merge_conflict", "land_failed", "refs_moved", "touches_check",
                                               "bad_objects", "symbolic_ref", "ci_unconfirmed",
                                               "setup_failed", "usage_limit"})
# Failures that count toward the two-pass rule (a kill by a person or the budget does not).
WORK_RETRIED_REASONS: frozenset[str] = frozenset({"worker_exit", "spawn_failed", "no_commits", "control_files",
                                                  "verify_failed", "stalled", "ci_red", "evicted"})
# Ends that are the cluster's, not the item's: the attempt is placed again (elsewhere) without
# counting toward the two-pass rule, at most this many times per item.
WORK_REPLACED_REASONS: frozenset[str] = frozenset({"node_lost"})
# The landing queue of a run's branch (runner/core/work/queue.py): each green branch waits its
# turn, is rebased onto the latest tip, checked again on that tree, then lands or is evicted.
WORK_QUEUE_STATES: tuple[str, ...] = ("waiting", "rebasing", "checking", "landed", "evicted")
WORK_MAX_REPLACEMENTS = 3

# --- plugkit work: the state of a run -----------------------------------------------------------
# running <-> waiting (only approvals are left, the run waits for a person) -> halted | stopped |
# done; running | waiting -> paused (a token or cost cap spent: no attempt starts until a person
# raises the cap, `plugkit work resume`) -> running | stopped. "halted" without ended_at is an
# unattended run waiting for an approval (it resumes by itself); with ended_at it is over, like
# stopped and done. Moves go through Run.enter.
WORK_RUN_STATES: tuple[str, ...] = ("running", "waiting", "halted", "done", "stopped", "paused")
WORK_RUN_ALLOWED: dict[str, frozenset[str]] = {
    "running": frozenset(WORK_RUN_STATES),
    "waiting": frozenset(WORK_RUN_STATES),
    "halted": frozenset({"running", "halted", "done", "stopped"}),
    "done": frozenset(),
    "stopped": frozenset(),
    "paused": frozenset({"paused", "running", "halted", "done", "stopped"}),
}

# --- the caller's environment on the wire (task.exec `environ`) ----------------------------------
# At most this many characters of NAME=VALUE entries: the client sends its whole environment with every
# task.exec, and the request body is capped at 1 MiB with code and stdin (512 KiB each) inside it.
# A caller over it sends none, and its task runs in the runner's environment.
ENVIRON_MAX_CHARS = 256 << 10

# --- work items (.prd): an item's status and the moves between them ---------------------------
# Every move goes through plugkit.lifecycle.item_states.move, which asserts it here. A completed
# item is reopened (pending: `plugkit work` rolled it back; in_progress: worked on again), never
# parked as blocked: its receipts say it was done.
ITEM_STATES: tuple[str, ...] = ("pending", "in_progress", "completed", "blocked")
ITEM_ALLOWED: dict[str, frozenset[str]] = {
    "pending": frozenset({"in_progress", "completed", "blocked"}),
    "in_progress": frozenset({"pending", "completed", "blocked"}),
    "blocked": frozenset({"pending", "in_progress", "completed"}),
    "completed": frozenset({"pending", "in_progress"}),
}
# The states a critical-risk item holds only with a person's approval, however it got there
# (prd update, plugkit work, a .prd adopted on first contact, a risk raised on the way).
APPROVED_ONLY_STATES: frozenset[str] = frozenset({"in_progress", "completed"})
