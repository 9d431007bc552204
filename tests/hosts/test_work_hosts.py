"""`plugkit work` driving real agent hosts (from npm) as its workers, each against the scripted
fake model: a 4-item .prd (two independent items, one depending on both, one critical) run
unattended two at a time by each of Claude Code, Qwen Code, Gemini CLI and Codex CLI, its
third worker trying `rm -rf ..`; and with Claude Code, a worker claiming "done" on a red
check, a worker that hangs, and workers moving `main` and rewriting their own check."""

import json

import pytest

from tests.hosts.hosts import HOSTS, installed
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Hang, Say, Script, Scripts
from tests.hosts.work_run import FOUR, committing, four_scripts, make_repo, prompt_line
from tests.support.agent import git
from tests.support.load import stretched
from tests.support.person import at_terminal
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e
FOUR_HOSTS = ("claude", "qwen", "gemini", "codex")
# Where `plugkit install` puts each worker's hooks in its worktree: never committed.
HOOK_DIRS = {"claude-code": ".claude", "qwen": ".qwen", "gemini": ".gemini", "codex": ".codex"}


@pytest.fixture
def host():
    return installed(HOSTS["claude"])


@pytest.fixture(params=FOUR_HOSTS)
def any_host(request):
    return installed(HOSTS[request.param])


def items(run: dict) -> dict:
    return {i["id"]: i for i in run["items"]}


def test_four_items_two_in_parallel_landed_then_halted_on_the_critical_one(tmp_path, home, any_host):
    host = any_host
    with ModelServer(Scripts([])) as server:
        work = make_repo(tmp_path, host, cli_argv(), server.url, FOUR)
        server.script = scripts = four_scripts(host, work)
        work.cli("work", "--worker", host.platform, "--afk", "--parallel", "2", "--stall-min", "2")
        run = work.settled()
        got = items(run)
        why = json.dumps(run, indent=1)
        assert run["state"] == "halted" and "plugkit approve w4" in run["halt"], why
        assert [got[i]["state"] for i in ("w1", "w2", "w3", "w4")] == ["completed"] * 3 + ["waiting"], why
        w1, w2 = got["w1"]["phases"], got["w2"]["phases"]
        assert max(w1["spawn"], w2["spawn"]) < min(w1["terminate"], w2["terminate"]), why  # at once
        assert got["w3"]["phases"]["spawn"] >= max(got["w1"]["ended_at"], got["w2"]["ended_at"]), why
        # The hooks in each worktree reached this runner: the boot heartbeat, and w3's
        # `rm -rf ..` refused with the policy's reason, which the model read.
        assert all("boot" in got[i]["phases"] for i in ("w1", "w2", "w3")), why
        denied = scripts[prompt_line("w3")].reply_to(0)
        assert denied is not None and "plugkit work" in denied.newest and "worktree" in denied.newest, why
        # The attempt's trace is what the runner witnessed of it: the host booted, the denied
        # `rm -rf ..` with its answer, then the commit it allowed, in that order.
        trace = work.cli("work", "trace", "w3").stdout
        assert trace.startswith(f"w3: attempt 1 of 1 in run {run['id']}, completed/landed; last: landed as"), trace
        denial = next((n for n, line in enumerate(trace.splitlines()) if "rm -rf ..: denied (" in line), None)
        commit = next((n for n, line in enumerate(trace.splitlines())
                       if "git add -A && git commit" in line and line.endswith(": allowed")), None)
        assert " boot " in trace and denial is not None and commit is not None and denial < commit, trace
        assert (work.repo / "README").exists() and (work.repo.parent / "host-home").exists()
        for name in ("w1.txt", "w2.txt", "w3.txt"):
            assert (work.repo / name).exists(), name
        assert HOOK_DIRS[host.platform] not in git(work.repo, "ls-files")  # the worker's hook config stayed out
        person = at_terminal([*work.plugkit, "approve", "w4"], work.env, cwd=work.repo)  # a person's own terminal
        assert person.returncode == 0, person.stdout
        run = work.until(lambda r: r["ended_at"] is not None)
        assert run["state"] == "done" and items(run)["w4"]["state"] == "completed", json.dumps(run, indent=1)
        prd = {i["id"]: i for i in json.loads((work.repo / ".prd").read_text())}
        assert all(prd[i]["status"] == "completed" and prd[i]["evidence"] for i in FOUR)


def test_done_on_a_red_check_is_not_completed_and_a_hanging_worker_is_ended_stalled(tmp_path, home, host):
    with ModelServer(Scripts([])) as server:
        work = make_repo(tmp_path, host, cli_argv(), server.url,
                         {"lazy": ("test -f feature.txt", ()), "hang": ("true", ())})
        lazy = Script([host.shell("echo notes > notes.txt && git add -A && git commit -qm notes"),
                       Say("All done: the feature works and the tests pass.")], prompt=prompt_line("lazy"))
        server.script = Scripts([lazy, Script([Hang()], prompt=prompt_line("hang"))])
        # 6 s of silence ends the hanging worker; stretched on a loaded machine, where the lazy (real
        # Claude Code) worker went 6 s between hook calls and was ended stalled too (load 12, 2 cores).
        work.cli("work", "--worker", "claude-code", "--stall-min", f"{stretched(6.0) / 60:.3g}")
        run = work.until(lambda r: r["ended_at"] is not None)
        got = items(run)
        why = json.dumps(run, indent=1)
        assert (got["lazy"]["state"], got["lazy"]["reason"], got["lazy"]["attempt"]) == ("blocked", "replan", 2), why
        assert "verify_failed" in got["lazy"]["message"] and got["lazy"]["verify"] == "red", why
        assert not (work.repo / "notes.txt").exists(), why  # nothing landed
        assert (got["hang"]["state"], got["hang"]["reason"]) == ("blocked", "replan"), why
        assert "stalled" in got["hang"]["message"], why


def test_a_project_that_commits_its_host_settings_never_gets_the_workers_hooks(tmp_path, home, host):
    with ModelServer(Scripts([])) as server:
        work = make_repo(tmp_path, host, cli_argv(), server.url, {"w1": ("test -f w1.txt", ())})
        settings = work.repo / ".claude" / "settings.json"
        settings.parent.mkdir()
        settings.write_text('{"permissions": {"allow": ["Bash(ls:*)"]}}\n')
        git(work.repo, "add", "-A")
        git(work.repo, "commit", "-qm", "the project's own Claude settings")
        server.script = Scripts([committing(host, work, "w1")])
        work.cli("work", "--worker", "claude-code")
        run = work.until(lambda r: r["ended_at"] is not None)
        assert run["state"] == "done", json.dumps(run, indent=1)
        assert "boot" in items(run)["w1"]["phases"]  # the hooks were in place for the worker
        assert git(work.repo, "show", "main:.claude/settings.json") == '{"permissions": {"allow": ["Bash(ls:*)"]}}\n'


def test_a_real_worker_moving_main_or_rewriting_its_check_lands_nothing(tmp_path, home, host):
    with ModelServer(Scripts([])) as server:
        work = make_repo(tmp_path, host, cli_argv(), server.url,
                         {"refs": ("test -f refs.txt && false", ()), "check": ("sh check.sh", ())})
        (work.repo / "check.sh").write_text("test -f feature.txt\n")
        git(work.repo, "add", "check.sh")
        git(work.repo, "commit", "-qm", "the check")
        main = git(work.repo, "rev-parse", "main").strip()
        sneak = "python3 -c \"import subprocess; subprocess.run(['git', 'update-ref', 'refs/heads/main', 'HEAD'])\""
        refs = Script([host.shell("echo x > refs.txt && git add -A && git commit -qm refs"),
                       host.shell("git update-ref refs/heads/main HEAD"),  # the policy denies it
                       host.shell(sneak),  # code the policy cannot read: the sandbox's read-only .git denies it
                       Say("refs is done.")], prompt=prompt_line("refs"))
        check = Script([host.shell("echo 'exit 0' > check.sh && git add -A && git commit -qm 'the check passes now'"),
                        Say("check is done.")], prompt=prompt_line("check"))
        server.script = Scripts([refs, check])
        work.cli("work", "--worker", "claude-code", "--parallel", "2")
        run = work.until(lambda r: r["ended_at"] is not None)
        got = items(run)
        why = json.dumps(run, indent=1)
        # main never moved (the RefGuard behind it: tests/e2e/test_work_attacks.py, --no-sandbox),
        # so the item ends on its own red check, tried twice.
        assert (got["refs"]["state"], got["refs"]["reason"]) == ("blocked", "replan"), why
        denied = refs.reply_to(1)
        assert denied is not None and "plugkit/refs" in denied.newest, why
        assert (got["check"]["state"], got["check"]["reason"]) == ("blocked", "touches_check"), why
        assert "+exit 0" in got["check"]["message"], why
        assert git(work.repo, "rev-parse", "main").strip() == main, why  # nothing landed
        assert (work.repo / "check.sh").read_text() == "test -f feature.txt\n"


# The worker's shell waits (on a file the test writes once the run paused, not on a time), so the
# pause lands between two of its tool calls.
WAIT_PAUSED = "until test -f go.flag; do sleep 0.2; done"


@pytest.fixture(params=("claude", "gemini"))  # the hosts plugkit/work/telemetry.py points here
def reporting_host(request):
    return installed(HOSTS[request.param])


def test_a_real_workers_own_telemetry_spends_a_token_cap_and_it_pauses_until_a_person_raises_it(
        tmp_path, home, reporting_host):
    """The host's own telemetry (its token counter over OTLP/JSON, the variables the runner set:
    plugkit/work/telemetry.py) spends the cap; its next tool call is refused; a person's resume
    lands the kept commit."""
    host = reporting_host
    with ModelServer(Scripts([])) as server:
        work = make_repo(tmp_path, host, cli_argv(), server.url, {"w1": ("test -f w1.txt && test -f w1b.txt", ())})
        wt = work.worktree("w1")
        first = Script([host.write(str(wt / "w1.txt"), "w1 done\n"),
                        host.shell("git add -A && git commit -qm 'w1: add w1.txt'"), host.shell(WAIT_PAUSED),
                        host.shell("echo after > after.txt"), Say("w1 is done.")], prompt=prompt_line("w1"))
        again = Script([host.write(str(wt / "w1b.txt"), "w1b\n"), host.shell("git add -A && git commit -qm 'w1: b'"),
                        Say("w1 is done.")], prompt="the run's budget was spent during your attempt 1")
        server.script = Scripts([again, first])  # the resumed attempt's prompt says so: routed there first
        work.cli("work", "--worker", host.platform, "--budget-tokens", "20")
        work.until(lambda r: r["state"] == "paused")  # its own telemetry spent the cap
        (wt / "go.flag").write_text("go\n")
        run = work.until(lambda r: items(r)["w1"]["state"] == "paused")
        it, why = items(run)["w1"], json.dumps(run, indent=1)
        assert run["state"] == "paused" and it["tokens"] >= 20 and it["failures"] == 0, why
        trace = work.cli("work", "trace", "w1", "--attempt", "1").stdout  # the call after the pause: refused
        assert "after.txt: denied (plugkit work: the run's budget is spent" in trace, trace
        assert not (wt / "after.txt").exists()
        person = at_terminal([*work.plugkit, "work", "resume", "--budget-tokens", "100000"], work.env, cwd=work.repo)
        assert person.returncode == 0, person.stdout
        run = work.until(lambda r: r["ended_at"] is not None)
        it, why = items(run)["w1"], json.dumps(run, indent=1)
        assert run["state"] == "done" and (it["state"], it["attempt"], it["pauses"]) == ("completed", 2, 1), why
        assert (work.repo / "w1.txt").exists() and (work.repo / "w1b.txt").exists()
