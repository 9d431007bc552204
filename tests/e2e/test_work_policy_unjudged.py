"""The work policy's holes closed, through the real hook of a real worker (the command worker,
tests/support/work_agent.py): `eval` text and commands whose program only the shell knows."""

from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path) -> Path:
    return make_repo(tmp_path / "repo", 'gates = "advisory"\n')


def test_eval_and_unnamed_programs_are_denied_through_the_real_hook(home, repo, tmp_path):
    victim = tmp_path / "victim"
    victim.mkdir()
    (victim / "keep.txt").write_text("precious\n")
    denied = ["eval 'rm -rf ..'", f"cmd=rm; $cmd -rf {victim}", f"$(echo rm) -rf {victim}",
              f"`echo rm` -rf {victim}", "$G update-ref refs/heads/main HEAD"]
    allowed = ["eval echo hi", "$(which python3) -m pytest -q"]
    w = Work(home, repo, {"w1": [*[["hook", "Bash", {"command": c}] for c in denied + allowed],
                                 *commit_file("w1.txt")]})
    log, answers = w.hook_answers()
    assert len(answers) == len(denied + allowed), log
    for call, answer in zip(denied, answers):
        assert '"permissionDecision": "deny"' in answer and "plugkit work" in answer, (call, answer)
    for call, answer in zip(allowed, answers[len(denied):]):
        assert "deny" not in answer, (call, answer)
    assert (victim / "keep.txt").exists()
