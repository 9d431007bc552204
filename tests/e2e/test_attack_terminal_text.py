"""What a sandboxed worker prints, and what the runner logs on its account, reaches the person's
terminal without a control sequence of the worker's: no OSC 52 writing their clipboard, no title,
no DCS, no cursor moves hiding lines, no C1 controls; a colour may stay at a terminal. Real
`plugkit work` (the worker is tests/fixtures/terminal_escape_worker.py), real runner, `work logs`
and `runner logs` read through a real pseudo-terminal."""

import sys
from pathlib import Path

import pytest

from tests.support.agent import make_repo
from tests.support.terminal import at_terminal
from tests.support.work_cli import Work

pytestmark = pytest.mark.e2e
WORKER = Path(__file__).resolve().parents[1] / "fixtures" / "terminal_escape_worker.py"
CONTROL = ("\x1b]", "\x1bP", "\x1b[2A", "\x1b[2K", "\u009b", "\x07")


def test_a_workers_control_sequences_never_reach_the_persons_terminal(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    w = Work(home, repo, {})
    w.add("w1", "--verify", "test -f done.txt")
    w.cli("work", "--run", f"{sys.executable} {WORKER}", "--json")
    w.until(lambda r: r["ended_at"] is not None)
    shown = at_terminal(home, repo, "work", "logs", "w1")
    assert "worker says" in shown and "hidden" in shown and "end" in shown, shown
    assert not any(c in shown for c in CONTROL), repr(shown)
    assert "\x1b[31mred" in shown, repr(shown)  # a colour is the terminal's to show
    piped = w.cli("work", "logs", "w1").stdout
    assert "worker says" in piped and "\x1b" not in piped and "\u009b" not in piped, repr(piped)
    for args in (("work", "status"), ("work", "trace", "w1"), ("runner", "logs", "-n", "400")):
        text = at_terminal(home, repo, *args)
        assert not any(c in text for c in CONTROL), (args, repr(text))
