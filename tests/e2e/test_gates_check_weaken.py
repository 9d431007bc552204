"""`prd verify` and `gate verify` hold the check to the commit the item started from (issue 44
#3): through the real CLI and daemon in a git repository, a working tree that skips a test the
start ran or adds a conftest.py is refused touches_check with the evidence, while a new test is
welcome."""

import sys

import pytest

from tests.support.check_weaken import TWO
from tests.support.agent import Agent, git, make_repo

pytestmark = pytest.mark.e2e

CHECK = f"{sys.executable} -m pytest -q -p no:cacheprovider"


@pytest.fixture
def agent(home, tmp_path):
    repo = make_repo(tmp_path / "repo", f'gates = "advisory"\nverify = "{CHECK}"\n')
    (repo / "tests").mkdir()
    (repo / "tests" / "test_one.py").write_text("def test_one():\n    assert True\n")
    (repo / "tests" / "test_two.py").write_text(TWO)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the tests")
    agent = Agent(home, repo)
    agent.hook("SessionStart", source="startup")
    agent.plugkit("prd", "add", "make it", "--id", "w1", "--verify", CHECK)
    agent.plugkit("prd", "update", "w1", "--status", "in_progress")  # the start: HEAD is its base
    return agent


def test_prd_and_gate_verify_refuse_a_check_weakened_since_the_item_started(agent):
    (agent.repo / "tests" / "test_new.py").write_text("def test_new():\n    assert True\n")
    git(agent.repo, "add", "-A")
    git(agent.repo, "commit", "-qm", "a new test: welcome")
    assert agent.json("prd", "verify", "w1")["outcome"] == "green"

    (agent.repo / "tests" / "test_two.py").write_text("import pytest\n\n\n@pytest.mark.skip\n" + TWO)
    for verb in (("prd", "verify", "w1"), ("gate", "verify", "--wait", "20")):
        refused = agent.plugkit(*verb, ok=False)
        assert refused.returncode != 0, refused.stdout
        assert "touches_check" in refused.stderr and "tests/test_two.py::test_two newly skipped" in refused.stderr, \
            (verb, refused.stderr)

    (agent.repo / "tests" / "test_two.py").write_text(TWO)
    (agent.repo / "tests" / "conftest.py").write_text("collect_ignore = ['test_two.py']\n")  # never committed
    refused = agent.plugkit("prd", "verify", "w1", ok=False)
    assert "touches_check" in refused.stderr and "tests/conftest.py" in refused.stderr, refused.stderr
