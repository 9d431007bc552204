"""What the gates say when they refuse (issue 42, gates): an advance names what each unmet
condition asks for and the next command; `prd verify --complete` completes in one step (a
critical item still needs its approval); a stale verify names `plugkit gate verify`; the
advisory Stop counts a long list instead of naming every id; no id is said twice."""

import json

import pytest

from tests.support.agent import SID, Agent, git, make_repo

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path):
    return make_repo(tmp_path / "repo", 'gates = "advisory"\nverify = "true"\nverify_lang = "bash"\n')


def cli(home, repo, *args):
    return home.cli(*args, "--session", SID, cwd=str(repo))


def test_a_refused_advance_says_what_a_plan_pass_is_and_what_to_do(shared_home, repo):
    assert cli(shared_home, repo, "gate", "advance").returncode == 0  # PLAN -> EXECUTE: nothing was added
    assert cli(shared_home, repo, "mutable", "add", "port", "--expected", "8080").returncode == 0  # back to PLAN
    refused = cli(shared_home, repo, "gate", "advance")
    assert refused.returncode == 1
    lines = refused.stdout.splitlines()
    assert lines[0] == "still PLAN: not every condition for EXECUTE holds"
    assert "NO  last_pass_added_nothing: mutable port" in lines[1]
    assert "a pass finds nothing new" in lines[2]  # what the condition asks for, under it
    assert lines[-1] == "next: review them (plugkit gate status), then plugkit gate advance"
    assert cli(shared_home, repo, "gate", "advance").returncode == 0  # the named next step works


def test_prd_verify_complete_is_one_step_and_keeps_the_approval_rule(shared_home, repo):
    assert cli(shared_home, repo, "prd", "add", "easy", "--id", "e1", "--verify", "true").returncode == 0
    done = cli(shared_home, repo, "prd", "verify", "e1", "--complete")
    assert done.returncode == 0, done.stderr
    first, second = done.stdout.splitlines()
    assert first.startswith("e1's check green") and "task_1 task_1" not in first  # the id once
    assert "e1" in second and "completed" in second
    items = {i["id"]: i for i in json.loads(cli(shared_home, repo, "prd", "list", "--json").stdout)["items"]}
    assert items["e1"]["status"] == "completed"
    assert cli(shared_home, repo, "prd", "add", "risky", "--id", "c1", "--verify", "true", "--risk", "critical").returncode == 0
    refused = cli(shared_home, repo, "prd", "verify", "c1", "--complete")
    assert refused.returncode == 1 and "approv" in refused.stderr, (refused.stdout, refused.stderr)
    items = {i["id"]: i for i in json.loads(cli(shared_home, repo, "prd", "list", "--json").stdout)["items"]}
    assert items["c1"]["status"] != "completed"
    red = cli(shared_home, repo, "prd", "add", "red", "--id", "r1", "--verify", "false")
    assert red.returncode == 0
    failed = cli(shared_home, repo, "prd", "verify", "r1", "--complete")
    assert failed.returncode == 1 and "fix it and run `plugkit prd verify r1` again" in failed.stdout


def test_a_stale_verify_names_the_command_that_runs_it_again(shared_home, repo):
    for _ in range(2):  # PLAN -> EXECUTE -> EMIT
        assert cli(shared_home, repo, "gate", "advance").returncode == 0
    (repo / "out.txt").write_text("x\n")
    assert cli(shared_home, repo, "gate", "emit", "out.txt").returncode == 0
    assert cli(shared_home, repo, "gate", "advance").returncode == 0  # -> VERIFY
    assert cli(shared_home, repo, "gate", "verify").returncode == 0
    git(repo, "add", "out.txt")
    git(repo, "commit", "-qm", "out")  # HEAD moves after the verify
    status = cli(shared_home, repo, "gate", "status").stdout
    line = next(ln for ln in status.splitlines() if "verify_green" in ln)
    assert "stale" in line and "`plugkit gate verify`" in line, status


def test_the_advisory_stop_counts_a_long_item_list(shared_home, repo):
    agent = Agent(shared_home, repo)
    agent.hook("SessionStart", source="startup")
    for n in range(25):
        assert cli(shared_home, repo, "prd", "add", f"item {n}", "--id", f"i{n}").returncode == 0
    said = agent.hook("Stop", stop_hook_active=False).stdout.decode()
    assert "i0, i1" in said and "15 more" in said and "i24" not in said, said
