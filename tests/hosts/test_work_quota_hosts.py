"""A real host's usage limit (issue 47 #2) through `plugkit work`: the scripted model refuses a
turn as its API refuses a request over a subscription's limit (a 429 with the reset), the host
prints its own usage-limit message, and the runner parks the worker `waiting_quota`, resumes it
in the worktree it left once the reset passed, and lands what its check passed.

Claude Code 2.1, signed in with a claude.ai subscription (an OAuth token: with an API key it
prints "Request rejected (429)" and no reset, a limit of the API key's rate, not a usage limit).
"""

import dataclasses
import json
import time

import pytest

from tests.hosts.hosts import HOSTS, installed
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Limit, Say, Script, Scripts
from tests.hosts.work_run import make_repo, prompt_line
from tests.support.runner_home import cli_argv

pytestmark = pytest.mark.e2e


def _subscribed(url: str) -> dict:
    env = {k: v for k, v in HOSTS["claude"].env(url).items() if k != "ANTHROPIC_API_KEY"}
    # The token Claude Code reads from its environment, and its scopes: a subscriber's (Ao()).
    return {**env, "CLAUDE_CODE_OAUTH_TOKEN": "sk-ant-oat01-e2e-not-a-secret",
            "CLAUDE_CODE_OAUTH_SCOPES": "user:inference user:profile"}


def test_claude_codes_own_usage_limit_parks_the_worker_and_it_resumes_after_the_reset_and_lands(tmp_path, home):
    host = dataclasses.replace(installed(HOSTS["claude"]), env=_subscribed)
    with ModelServer(Scripts([])) as server:
        work = make_repo(tmp_path, host, cli_argv(), server.url, {"w1": ("test -f w1.txt && test -f wip.txt", ())})
        wt = work.worktree("w1")
        # The reset is now: Claude Code shows it to the minute ("resets 7:10am (UTC)"), so the
        # wait is at most a second past it, and the test waits on the run, not on a clock.
        first = Script([host.write(str(wt / "wip.txt"), "half\n"), Limit(reset_at=time.time())],
                       prompt=prompt_line("w1"))
        again = Script([host.shell("test -f wip.txt && echo kept > w1.txt && git add -A && git commit -qm 'w1: done'"),
                        Say("w1 is done.")], prompt="your host hit its usage limit at")
        server.script = Scripts([again, first])  # the resumed attempt's prompt says so: routed there first
        work.cli("work", "--worker", host.platform)
        run = work.until(lambda r: r["ended_at"] is not None)
        it, why = {i["id"]: i for i in run["items"]}["w1"], json.dumps(run, indent=1)
        assert run["state"] == "done" and it["state"] == "completed", why
        assert (it["attempt"], it["quota_waits"], it["failures"]) == (2, 1, 0), why
        assert (work.repo / "w1.txt").read_text() == "kept\n" and (work.repo / "wip.txt").read_text() == "half\n"
        events = work.cli("work", "trace", "w1", "--attempt", "1").stdout
        assert "waiting_quota/quota: parked until" in events, events
        assert "claude-code hit a usage limit (\"You've hit your session limit \u00b7 resets " in events, events
        assert "tried again: resumed after the usage limit reset" in events, events
        # `again` answered only a prompt carrying plugkit's note of where the worker stopped.
        assert again.main and all("plugkit waited until it reset at" in s.everything for s in again.main)
        limited = [s for s in first.main if isinstance(s.answer, Limit)]
        assert len(limited) == 1, first.main  # the host did not retry it: it stopped, and plugkit waited
