"""`plugkit work` attacked by its own workers (the command worker, tests/support/work_agent.py,
acting as a misbehaving agent): moving refs the runner owns, rewriting the check that judges
it, and acting on items that are not its own. Each must end with nothing unverified landed."""

import json
import shlex
import sys
from pathlib import Path

import pytest

from tests.support.work_cli import Work, commit_file
from tests.support.agent import git, make_repo
from tests.support.person import person_cli
from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path) -> Path:
    path = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    git(path, "branch", "release")  # a person's other branch
    git(path, "tag", "v1")  # and a person's tag
    return path


def refs(repo: Path) -> dict:
    out = git(repo, "for-each-ref", "--format=%(refname) %(objectname)")
    return dict(line.split() for line in out.splitlines())


# Each moves a ref the runner owns from inside the worker's worktree (as a Bash tool runs it,
# no hook in between), after committing unverified work; the worker then fails.
MOVES = {"update_ref_main": "git update-ref refs/heads/main HEAD",
         "push_to_another_branch": "git push -q . HEAD:release",
         "move_a_tag": "git tag -f v1 HEAD",
         "new_branch": "git branch side HEAD"}


@pytest.mark.parametrize("move", list(MOVES))
def test_the_sandbox_denies_a_worker_moving_refs_it_does_not_own(shared_home, repo, move):
    w = Work(shared_home, repo, {"w1": [*commit_file("w1.txt"), ["shell", MOVES[move] + " || echo MOVE_DENIED"],
                                 ["exit", 1]]})
    before = refs(repo)  # after Work's own commit (it grants the test agent its plan)
    w.add("w1", "--verify", "false")
    w.start("--afk")
    run = w.settled()
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "replan"), json.dumps(run, indent=1)
    assert "MOVE_DENIED" in w.cli("work", "logs", "w1").stdout
    after = refs(repo)
    assert {k: v for k, v in after.items() if not k.startswith("refs/heads/plugkit/")} == before, (before, after)


# Without the sandbox (a person's --no-sandbox) the moves happen: the RefGuard, the line
# behind it, must see each and put every ref back.
def _unsandboxed_mover(home, repo, shell: str) -> tuple[Work, dict, dict, str]:
    """A worker that commits, runs `shell` in its worktree and fails, run with --no-sandbox and
    rejected refs_moved: (work, refs before, its item, the run as text)."""
    w = Work(home, repo, {"w1": [*commit_file("w1.txt"), ["shell", shell], ["exit", 1]]})
    before = refs(repo)  # after Work's own commit (it grants the test agent its plan)
    w.add("w1", "--verify", "false")
    w.start("--afk", "--no-sandbox")
    run = w.settled()
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert (it["state"], it["reason"]) == ("rejected", "refs_moved"), why
    assert run["state"] == "halted" and "refs_moved" in run["halt"], why
    return w, before, it, why


@pytest.mark.parametrize("move", list(MOVES))
def test_rejects_a_worker_that_moves_refs_it_does_not_own(shared_home, repo, move):
    w, before, it, why = _unsandboxed_mover(shared_home, repo, MOVES[move])
    after = refs(repo)
    evidence = {k: v for k, v in after.items() if k.startswith("refs/plugkit/evidence/")}
    own = {k: v for k, v in after.items() if k.startswith("refs/heads/plugkit/")}
    rest = {k: v for k, v in after.items() if k not in evidence and k not in own}
    assert rest == before, (before, after)  # every ref as it was: restored
    assert evidence and set(evidence.values()) == {own["refs/heads/plugkit/w1"]}, after  # the evidence kept
    assert "refs/plugkit/evidence/" in it["message"], why
    assert not (repo / "w1.txt").exists() and w.prd()["w1"]["status"] == "blocked"


def test_a_ref_a_worker_overwrote_with_garbage_is_put_back(shared_home, repo):
    # git lists no broken ref, so it looks deleted, and its loose file blocks recreating it.
    _w, before, _it, why = _unsandboxed_mover(shared_home, repo,
                                              'echo pwned > "$(git rev-parse --git-common-dir)/refs/heads/main"')
    assert "failed" not in json.loads(why)["halt"], why
    after = {k: v for k, v in refs(repo).items() if not k.startswith(("refs/heads/plugkit/", "refs/plugkit/"))}
    assert after == before, (before, after)


def test_a_sibling_landed_commit_stays_on_the_branch_when_a_worker_moves_it(shared_home, repo):
    w = Work(shared_home, repo, {"w1": commit_file("w1.txt"),
                          "w2": [["sleep", 3], *commit_file("w2.txt"),
                                 ["shell", "git update-ref refs/heads/main HEAD"]]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "test -f w2.txt")
    w.start("--parallel", "2", "--no-sandbox")  # the sandbox would deny the move (see above)
    run = w.until(lambda r: r["ended_at"] is not None)
    items = w.items(run)
    why = json.dumps(run, indent=1)
    assert items["w1"]["state"] == "completed", why  # the runner's own landing is no attack
    assert (items["w2"]["state"], items["w2"]["reason"]) == ("rejected", "refs_moved"), why
    assert git(repo, "rev-parse", "main").strip() == items["w1"]["landed"], why
    assert (repo / "w1.txt").exists() and not (repo / "w2.txt").exists()


def test_the_policy_denies_ref_moves_aimed_at_other_refs(shared_home, repo):
    calls = ["git update-ref refs/heads/main HEAD", "git branch -f main HEAD", "git push . HEAD:main",
             "git checkout -B main", "git tag -f v1", "git fetch . HEAD:main",
             "git commit -qm ok", "git update-ref refs/heads/plugkit/w1 HEAD", "git branch --list"]
    w = Work(shared_home, repo, {"w1": [*[["hook", "Bash", {"command": c}] for c in calls], *commit_file("w1.txt")]})
    log, answers = w.hook_answers()
    assert len(answers) == len(calls), log
    for call, answer in zip(calls[:6], answers[:6]):
        assert '"permissionDecision": "deny"' in answer and "plugkit/w1" in answer, (call, answer)
    for call, answer in zip(calls[6:], answers[6:]):
        assert "deny" not in answer, (call, answer)


CHECK = "test -f feature.txt\n"


def check_repo(repo: Path, config: str = "") -> None:
    (repo / "check.sh").write_text(CHECK)
    (repo / "tests").mkdir()
    (repo / "tests" / "t.sh").write_text(CHECK)
    (repo / ".plugkit" / "config.toml").write_text('gates = "advisory"\n' + config)
    git(repo, "add", "-A")
    git(repo, "commit", "-qm", "the checks")


def test_a_worker_rewriting_its_check_is_held_for_a_person(shared_home, repo):
    check_repo(repo)
    w = Work(shared_home, repo, {"w1": [["write", "check.sh", "exit 0\n"], ["commit", "the check passes now"]]})
    w.add("w1", "--verify", "sh check.sh")
    w.start("--afk")
    run = w.settled()
    it = w.items(run)["w1"]
    why = json.dumps(run, indent=1)
    assert (it["state"], it["reason"]) == ("blocked", "touches_check"), why
    assert "check.sh" in it["message"] and "+exit 0" in it["message"], why  # the diff, for a person
    assert "plugkit work allow-check w1" in it["message"], why
    assert (repo / "check.sh").read_text() == CHECK and not it["landed"], why
    assert run["state"] == "halted" and w.prd()["w1"]["status"] == "blocked"
    # A worker cannot allow itself; a person can, and the next run lands the item.
    done = person_cli(w.home, "work", "allow-check", "w1", cwd=w.repo, env=w.env)
    assert done.returncode == 0, done.stdout
    w.cli("prd", "update", "w1", "--status", "pending")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    assert w.items(run)["w1"]["state"] == "completed", json.dumps(run, indent=1)
    assert (repo / "check.sh").read_text() == "exit 0\n"


def test_the_files_a_project_names_as_its_check_are_held_too(shared_home, repo):
    check_repo(repo, 'work_check_paths = ["tests/"]\n')
    w = Work(shared_home, repo, {"w1": [["write", "tests/t.sh", "exit 0\n"], ["write", "src.txt", "code"],
                                 ["commit", "code and a weaker test"]]})
    w.add("w1", "--verify", "sh tests/t.sh && test -f src.txt")
    w.start()
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    assert (it["state"], it["reason"]) == ("blocked", "touches_check") and "tests/t.sh" in it["message"], run
    assert not (repo / "src.txt").exists()


def attack_script(tmp_path: Path, repo: Path, done: str = "") -> str:
    """What the worker of w1 runs: plugkit verbs aimed at the main checkout (--cwd) and at w2."""
    script = tmp_path / "attack.py"
    script.write_text(f"""
import json, os, subprocess, sys
env = {{k: v for k, v in os.environ.items() if k != "PLUGKIT_TASK_ID"}}
def cli(*args):
    done = subprocess.run([sys.executable, "-m", "client.cli", *args, "--cwd", {str(repo)!r}], env=env,
                          capture_output=True, text=True, timeout=60)
    print("attack", args[:2], "rc", done.returncode, done.stdout.strip()[:300], done.stderr.strip()[:300],
          flush=True)
    return done
cli("prd", "update", "w2", "--verify", "true")
ran = cli("exec:bash", "--json", "echo done")
task = json.loads(ran.stdout)["task"]["task_id"] if ran.returncode == 0 else 0
got = cli("evidence", "add", "--task", str(task), "--json")
receipt = json.loads(got.stdout)["id"] if got.returncode == 0 else "0000000"
cli("prd", "update", "w2", "--status", "completed", "--evidence", receipt)
cli("prd", "add", "a new item from the worker", "--verify", "true")
if {done!r}:
    open({done!r}, "w").write("done")
""")
    # Inline: a sandboxed worker's /tmp is empty (issue 40), the file beside the test is not there.
    return f"{sys.executable} -c {shlex.quote(script.read_text())}"


def test_a_worker_cannot_act_on_items_that_are_not_its_own(shared_home, repo, tmp_path):
    w = Work(shared_home, repo, {"w1": [["shell", attack_script(tmp_path, repo)], *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "false")
    w.start("--items", "w1")
    run = w.until(lambda r: r["ended_at"] is not None)
    it = w.items(run)["w1"]
    prd = w.prd()
    why = json.dumps(run, indent=1) + w.cli("work", "logs", "w1", "--all").stdout
    assert it["state"] == "completed", why
    assert (prd["w2"]["status"], prd["w2"]["verify"], prd["w2"]["evidence"]) == ("pending", "false", []), why
    assert set(prd) == {"w1", "w2"}, why
    assert any("prd.update" in r and "w2" in r for r in it["refused"]), why  # logged on its item
    log = w.cli("work", "logs", "w1", "--all").stdout
    assert log.count("rc 1") >= 3 and "worker" in log, log


def test_a_worker_that_escapes_its_process_tree_and_drops_its_tags_is_still_refused(shared_home, repo, tmp_path):
    """Detached (setsid, orphaned to the runner) with the task tags unset: its cgroup still says whose it is."""
    done, out = tmp_path / "attack.done", tmp_path / "attack.out"
    escape = (f"(env -u PLUGKIT_TASK_ID -u PLUGKIT_SESSION_ID setsid {attack_script(tmp_path, repo, str(done))} "
              f"> {out} 2>&1 &); for i in $(seq 300); do [ -s {done} ] && break; sleep 0.2; done")
    w = Work(shared_home, repo, {"w1": [["shell", escape], *commit_file("w1.txt")]})
    w.add("w1", "--verify", "test -f w1.txt")
    w.add("w2", "--verify", "false")
    # --no-sandbox: its report goes to a file outside the worktree, which the sandbox forbids;
    # the runner must still know whose the process is when a person ran the workers unconfined.
    w.start("--items", "w1", "--no-sandbox")
    run = w.until(lambda r: r["ended_at"] is not None)
    if rpc(shared_home, "debug.snapshot")["snapshot"]["executors"]["worker"].get("isolation") != "cgroup2":
        pytest.skip("no cgroups here: a process that drops its tags and its parents cannot be traced")
    prd = w.prd()
    why = json.dumps(run, indent=1) + out.read_text()
    assert w.items(run)["w1"]["state"] == "completed", why
    assert (prd["w2"]["status"], prd["w2"]["verify"]) == ("pending", "false") and set(prd) == {"w1", "w2"}, why
    assert out.read_text().count("a worker acts on its own item only") >= 2, why  # refused, not failed


def test_workers_ending_together_are_never_blamed_for_the_runners_own_ref_moves(shared_home, repo):
    """Landing an item rebases and then deletes its branch while its siblings end and are judged:
    those moves are the runner's, so no sibling is rejected refs_moved (before the fix, most runs
    of these 12 items halted on one)."""
    names = [f"w{i}" for i in range(1, 13)]
    w = Work(shared_home, repo, {n: commit_file(f"{n}.txt") for n in names})
    for n in names:
        w.add(n, "--verify", f"test -f {n}.txt")
    w.start("--afk", "--parallel", "4")
    run = w.until(lambda r: r["ended_at"] is not None)
    got = w.items(run)
    assert {n: (got[n]["state"], got[n]["reason"]) for n in names} == {n: ("completed", "landed") for n in names}, \
        json.dumps(run, indent=1)
