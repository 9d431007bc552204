"""ApprovalDesk.judge with hand-made callers: a person must be shown, not merely not found."""

from runner.core.gates.approvals import ApprovalDesk
from runner.system.peers import Caller


def caller(**kw) -> Caller:
    return Caller(**{"pid": 10, "user": "kim", "tty": "/dev/pts/3", "chain": ("sh[10]",), **kw})


def test_no_agent_found_is_not_enough():
    verdict = ApprovalDesk().judge("/w", "c1", caller(ctty=False, tty=None))
    assert not verdict.ok and "no terminal of its own" in verdict.reason


def test_a_terminal_an_agent_holds_is_not_a_persons():
    verdict = ApprovalDesk().judge("/w", "c1", caller(ctty=True, tty_holder="OpenCode (42)"))
    assert not verdict.ok and "held by OpenCode (42)" in verdict.reason


def test_a_terminal_of_its_own_is_a_person():
    verdict = ApprovalDesk().judge("/w", "c1", caller(ctty=True))
    assert verdict.ok and verdict.channel == "terminal"


def test_a_task_or_an_unknown_caller_never_is():
    assert not ApprovalDesk().judge("/w", "c1", caller(ctty=True, task="task 4")).ok
    assert not ApprovalDesk().judge("/w", "c1", None).ok


def test_a_terminal_in_an_environment_a_host_set_is_not_a_persons():
    verdict = ApprovalDesk().judge("/w", "c1", caller(ctty=True, marked="CLAUDECODE from Claude Code (7)"))
    assert not verdict.ok and "set by an agent host" in verdict.reason
