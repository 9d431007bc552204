"""What an agent writes into the plan or its memories reaches the person's terminal without a
control sequence of the agent's: a critical item added as "drop the prod db ESC[2K CR fix a typo"
was listed by `prd list` (and echoed by `prd add`) as "fix a typo", the line the person reads
before `plugkit approve`. Real CLI and runner; stdout and stderr as pipes and at a terminal."""

import pytest

from tests.support.agent import make_repo
from tests.support.terminal import at_terminal

pytestmark = pytest.mark.e2e
SUBJECT = "drop the prod db\x1b[2K\rfix a typo\x1b]52;c;cm0gLXJmIH4=\x07\u009b2A"
CONTROL = ("\x1b", "\x07", "\u009b")  # and no CR but a terminal's own (it ends each line with CR LF)


def test_an_agents_subject_and_memory_carry_no_control_sequence_to_the_person(shared_home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    added = shared_home.cli("prd", "add", SUBJECT, "--id", "c1", "--risk", "critical", cwd=repo)
    assert added.returncode == 0, added.stderr
    kept = shared_home.cli("memory", "add", "--type", "project", "--name", "note1",
                           f"{SUBJECT}\nWhy: {SUBJECT}\nHow to apply: {SUBJECT}", cwd=repo)
    assert kept.returncode == 0, kept.stderr
    shown = {"prd add": added.stdout + added.stderr}
    for args in (("prd", "list"), ("gate", "status"), ("memory", "show", "note1"), ("memory", "list")):
        done = shared_home.cli(*args, cwd=repo)
        assert done.returncode == 0, (args, done.stderr)
        shown[" ".join(args)] = done.stdout + done.stderr
    shown["prd list (terminal)"] = at_terminal(shared_home, repo, "prd", "list")
    for verb, text in shown.items():
        assert not any(c in text for c in CONTROL), (verb, text)
        assert "\r" not in (text.replace("\r\n", "\n") if "terminal" in verb else text), (verb, text)
    assert "drop the prod db" in shown["prd list"] and "fix a typo" in shown["prd list"], shown["prd list"]
    assert "drop the prod db" in shown["memory show note1"], shown["memory show note1"]
