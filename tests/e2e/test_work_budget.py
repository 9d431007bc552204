"""Budgets that pause and ask (issue 47 #1), against the real runner, CLI, git and sandbox: a
command worker reports its tokens over OTLP/JSON with the secret the runner put in its
environment; the spent cap pauses the run, the worker's next tool call is refused and its
attempt ends with its branch kept; only a person raises the cap, and the item then lands from
its kept commits and the work it had not committed, in the worktree it left (only what the
check passed lands). A forged or absent secret reaches nothing; a cost cap no worker can report
is refused at start. A day cap (work_day_tokens) counts the workspace's every run of the day,
and a run started on a day already spent is paused before it starts anything."""

import json
import sys
import urllib.error
import urllib.request

from tests.support.work_cli import AGENT, Work, commit_file, repo  # noqa: F401  (repo: the fixture)
from tests.support.person import person_cli

GO = "go.flag"  # written by the test into the worker's worktree: its second export may go


def _post(home, path: str, headers: dict, body: bytes = b'{"resourceMetrics": []}') -> int:
    request = urllib.request.Request(f"http://127.0.0.1:{home.port}{path}", body,
                                     {"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return answer.status
    except urllib.error.HTTPError as exc:
        return exc.code


def test_a_spent_token_cap_pauses_the_run_until_a_person_raises_it_and_the_item_lands(home, repo):
    w = Work(home, repo, {"w1": [
        [*commit_file("w1.txt"), ["write", "wip.txt", "half done\n"], ["otlp", 400], ["until", GO], ["otlp", 800],
         ["hook", "Bash", {"command": "true"}], ["hook", "Write", {"file_path": "more.txt"}], ["hang"]],
        # Attempt 2 commits what attempt 1 left uncommitted (no wip.txt: no commit, the attempt fails),
        # and leaves a file of its own uncommitted, which must not land.
        [["prompt"], ["shell", "git add wip.txt && git commit -qm 'the kept work'"], ["write", "junk.txt", "x\n"]]]})
    w.add("w1", "--verify", "test -f w1.txt && test -f wip.txt")  # green only with the kept commit and kept work
    # A cost cap where no price is known (the command worker reports none) is refused at start, not ignored.
    refused = w.cli("work", "--run", f"{sys.executable} {AGENT}", "--budget-cost", "2", ok=False)
    assert refused.returncode != 0 and "--budget-cost: no price is known for the command worker" in refused.stderr, (
        refused.stdout, refused.stderr)
    assert json.loads(w.cli("work", "status", "--json").stdout) == {"run": None}
    started = w.start("--budget-tokens", "1000")
    assert started["caps"] == {"tokens": 1000.0}, started
    run = w.until(lambda r: w.items(r)["w1"]["tokens"] == 400)
    # Nobody but the worker holding its secret reaches its spend.
    assert _post(home, "/v1/metrics", {}) == 401
    assert _post(home, "/v1/metrics", {"x-plugkit-telemetry": "forged-secret"}) == 401
    assert _post(home, "/v1/logs", {"x-plugkit-telemetry": "forged-secret"}) == 401
    assert _post(home, "/v1/metrics", {"Authorization": f"Bearer {home.token()}"}) == 401  # the token is not it
    assert w.items(w.status())["w1"]["tokens"] == 400
    (repo / ".plugkit" / "worktrees" / "w1" / GO).write_text("go\n")
    run = w.until(lambda r: r["state"] == "paused" and w.items(r)["w1"]["state"] == "paused")
    it, why = w.items(run)["w1"], json.dumps(run, indent=1)
    assert "budget: the run spent 1200 tokens of its --budget-tokens 1000 tokens" in run["halt"], why
    assert (it["reason"], it["failures"], it["pauses"], it["tokens"], it["model"]) == (
        "budget_spent", 0, 1, 1200, "scripted-model"), why
    assert run["spend"]["tokens"] == 1200, why
    assert w.prd()["w1"]["status"] == "in_progress"
    trace = w.cli("work", "trace", "w1", "--attempt", "1").stdout
    assert "Bash true: denied (plugkit work: the run's budget is spent" in trace, trace
    # The attempt ends at that call; whatever the worker still tries before it is gone is refused too.
    after = trace.split("Bash true: denied", 1)[1]
    assert ": allowed" not in after, trace
    shown = w.cli("work", "status").stdout
    assert "1200 tokens of --budget-tokens 1000 tokens" in shown and "plugkit work resume" in shown, shown
    # An agent (no terminal of its own) cannot raise it; a person raising it too little is told so.
    agent = w.cli("work", "resume", "--budget-tokens", "5000", ok=False)
    assert agent.returncode != 0 and "work resume refused" in agent.stderr, (agent.stdout, agent.stderr)
    low = person_cli(home, "work", "resume", "--budget-tokens", "1100", cwd=repo, env=w.env)
    assert low.returncode != 0 and "still spent: the run spent 1200 tokens" in low.stdout, low.stdout
    assert w.status()["state"] == "paused"
    done = person_cli(home, "work", "resume", "--budget-tokens", "5000", cwd=repo, env=w.env)
    assert done.returncode == 0, done.stdout
    run = w.until(lambda r: r["ended_at"] is not None)
    it, why = w.items(run)["w1"], json.dumps(run, indent=1)
    assert run["state"] == "done" and run["caps"] == {"tokens": 5000.0}, why
    assert (it["state"], it["attempt"], it["failures"], it["pauses"]) == ("completed", 2, 0, 1), why
    assert (repo / "w1.txt").exists() and (repo / "wip.txt").read_text() == "half done\n"
    assert not (repo / "junk.txt").exists()  # left uncommitted by attempt 2: never checked, never landed
    told = w.cli("work", "logs", "w1").stdout  # the resumed worker's prompt
    assert "the run's budget was spent during your attempt 1" in told and "a person raised the budget" in told, told
    assert "what you had not committed is still in this worktree" in told, told
    assert not (repo / ".plugkit" / "worktrees" / "w1").exists()  # gone once the item landed


def test_a_day_cap_pauses_the_run_counts_every_run_of_the_day_and_a_person_raises_it(home, repo):
    config = repo / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + "work_day_tokens = 1000\n")
    w = Work(home, repo, {"w1": [
        [*commit_file("w1.txt"), ["otlp", 1200], ["hook", "Bash", {"command": "true"}], ["hang"]],
        [*commit_file("w1b.txt")]], "w2": [commit_file("w2.txt")]})
    w.add("w1", "--verify", "test -f w1.txt && test -f w1b.txt")
    started = w.start("--budget-day-tokens", "1000000")  # an agent's flag cannot lift the workspace's cap
    assert started["caps"] == {"day_tokens": 1000.0}, started
    run = w.until(lambda r: r["state"] == "paused" and w.items(r)["w1"]["state"] == "paused")
    assert run["halt"].startswith("budget: the workspace spent 1200 tokens today (") and \
        "of its --budget-day-tokens 1000 tokens; it renews at local midnight" in run["halt"], run["halt"]
    assert "resumes by itself then, or a person raises the cap with `plugkit work resume --budget-day-tokens N`" \
        in run["halt"], run["halt"]
    assert run["spend"]["day_tokens"] == 1200 and run["day_spend"]["tokens"] == 1200, run
    shown = w.cli("work", "status").stdout
    assert "1200 tokens on " in shown and "of --budget-day-tokens 1000 tokens" in shown, shown
    assert "plugkit work resume --budget-day-tokens N" in shown, shown
    done = person_cli(home, "work", "resume", "--budget-day-tokens", "5000", cwd=repo, env=w.env)
    assert done.returncode == 0, done.stdout
    run = w.until(lambda r: r["ended_at"] is not None)
    assert run["state"] == "done" and w.items(run)["w1"]["state"] == "completed", run
    # The day's spend is the workspace's, kept by the runner (0600): the next run starts spent.
    kept = list((home.path / "work-days").iterdir())
    assert len(kept) == 1 and kept[0].stat().st_mode & 0o777 == 0o600
    w.add("w2", "--verify", "test -f w2.txt")
    second = w.start()
    assert second["caps"] == {"day_tokens": 1000.0}, second
    run = w.until(lambda r: r["state"] == "paused")
    assert run["halt"].startswith("budget: the workspace spent 1200 tokens today ("), run["halt"]
    assert w.items(run)["w2"]["attempt"] == 0 and w.items(run)["w2"]["state"] == "queued", run
    w.cli("work", "stop")
    assert w.status()["state"] == "stopped"

