"""Per-day caps (issue 47 #1) on an injected clock: the workspace's spend per local day, kept
in the runner's home across restarts (0600), a run paused on a day cap renewing itself at the
person's local midnight and not before, a day cap already spent by the day's earlier runs
pausing a new run before it starts anything, and a workspace's day cap an agent starting the
run cannot lift."""

import os
import stat
import time
from types import SimpleNamespace

import pytest

from plugkit.lifecycle import config, config_pin
from runner.core.work import budget, days
from runner.core.work.model import ItemRun, Run


@pytest.fixture
def tz(monkeypatch):
    """A local time zone far from UTC, so a UTC day would be caught counting the wrong day."""
    monkeypatch.setenv("TZ", "America/Los_Angeles")
    time.tzset()
    yield
    monkeypatch.undo()
    time.tzset()


def _local(y, mo, d, h, mi=0) -> float:
    return time.mktime((y, mo, d, h, mi, 0, 0, 0, -1))


def _run(caps: dict, day_spend: dict) -> Run:
    run = Run(id="r", workspace="/w", worker="command", parallel=1, afk=False, merge="ff", branch="main",
              base="x", started_at=0.0, stall_min=10.0, caps=caps, day_spend=day_spend)
    run.items = {"a": ItemRun(id="a", subject="a", tokens=300)}
    return run


def test_the_days_spend_survives_a_runner_restart_in_a_private_file_and_renews_at_local_midnight(tmp_path, tz):
    home = tmp_path / "home"
    evening = _local(2026, 11, 29, 23, 30)  # 07:30 UTC the next day: a UTC day would already be the 30th
    ledger = days.DaySpend(str(home))
    assert ledger.add("/w", evening, 700, 0.5) == {"date": "2026-11-29", "tokens": 700, "cost": 0.5}
    ledger.add("/other", evening, 5, 0.0)  # another workspace's day is its own
    again = days.DaySpend(str(home))  # the next runner, after a restart
    assert again.spent("/w", evening + 60) == {"date": "2026-11-29", "tokens": 700, "cost": 0.5}
    assert again.add("/w", evening + 120, 100, 0.0)["tokens"] == 800
    files = list((home / "work-days").iterdir())
    assert len(files) == 2 and all(stat.S_IMODE(f.stat().st_mode) == 0o600 for f in files)
    assert stat.S_IMODE(os.stat(home / "work-days").st_mode) == 0o700
    after = _local(2026, 11, 30, 0, 1)
    assert days.next_day(evening) == _local(2026, 11, 30, 0, 0)
    assert again.spent("/w", after) == {"date": "2026-11-30", "tokens": 0, "cost": 0.0}
    assert days.today({"date": "2026-11-29", "tokens": 800, "cost": 0.5}, after) == (0, 0.0)


def test_a_run_paused_on_its_day_cap_resumes_itself_at_local_midnight_and_not_before(tz):
    evening = _local(2026, 11, 29, 22, 0)
    run = _run({"day_tokens": 1000.0, "tokens": 10_000.0}, {"date": "2026-11-29", "tokens": 900, "cost": 0.0})
    attempts = SimpleNamespace(run=run, live={})
    assert budget.check_clock(attempts, evening) == (False, False)
    run.day_spend["tokens"] = 1000  # what budget.record keeps after an export
    why = budget.tripped(run, now=evening)
    assert why.startswith("the workspace spent 1000 tokens today (2026-11-29) of its --budget-day-tokens 1000")
    assert "renews at local midnight (2026-11-30 00:00 PST)" in why
    assert budget.pause(run, why) and run.state == "paused"
    assert "resumes by itself then, or a person raises the cap with `plugkit work resume --budget-day-tokens N`" \
        in run.halt
    assert budget.check_clock(attempts, _local(2026, 11, 29, 23, 59)) == (False, False)
    assert run.state == "paused"
    assert budget.check_clock(attempts, _local(2026, 11, 30, 0, 0)) == (True, True)
    assert run.state == "running" and run.halt is None
    assert run.day_spend == {"date": "2026-11-30", "tokens": 0, "cost": 0.0}


def test_a_run_paused_on_another_cap_does_not_resume_at_midnight(tz):
    run = _run({"day_tokens": 1000.0, "tokens": 300.0}, {"date": "2026-11-29", "tokens": 300, "cost": 0.0})
    attempts = SimpleNamespace(run=run, live={})
    assert budget.check_clock(attempts, _local(2026, 11, 29, 22, 0)) == (True, False)  # the run's own cap
    assert run.state == "paused" and "--budget-tokens" in run.halt
    assert budget.check_clock(attempts, _local(2026, 11, 30, 0, 1)) == (True, False)  # a new day, still spent
    assert run.state == "paused"


def test_a_day_already_spent_by_earlier_runs_pauses_a_new_run_before_it_starts_anything(tz):
    run = _run({"day_tokens": 1000.0}, {"date": "2026-11-29", "tokens": 1200, "cost": 0.0})
    run.items["a"].tokens = 0
    assert budget.check_clock(SimpleNamespace(run=run, live={}), _local(2026, 11, 29, 9, 0)) == (True, False)
    assert run.state == "paused" and run.halt.startswith("budget: the workspace spent 1200 tokens today")


def test_the_workspaces_day_cap_holds_over_a_higher_flag_and_only_a_lower_setting_is_adopted():
    cfg = config.parse({"work_day_tokens": 5000, "work_day_cost": 2})
    assert (cfg.work_day_tokens, cfg.work_day_cost, cfg.problems) == (5000, 2.0, ())
    assert days.at_start({"day_tokens": 10 ** 9}, cfg) == {"day_tokens": 5000.0, "day_cost": 2.0}
    assert days.at_start({"day_tokens": 100.0}, cfg)["day_tokens"] == 100.0  # a lower flag holds
    assert days.at_start({"tokens": 7.0}, config.parse({})) == {"tokens": 7.0}
    # a workspace's day cap no worker of the run can report is refused at start, and says where it came from
    why = budget.refusal("codex", days.at_start({}, cfg), "local")
    assert "cannot be pointed" in why and "work_day_tokens / work_day_cost in .plugkit/config.toml" in why
    assert config.parse({"work_day_tokens": -1}).problems and config.parse({"work_day_cost": True}).problems
    # held by the runner: a lower cap (or a first one) is adopted, raising or dropping it is a person's to confirm
    assert config_pin.stronger("work_day_tokens", None, 5000) and config_pin.stronger("work_day_tokens", 5000, 10)
    assert not config_pin.stronger("work_day_tokens", 5000, 6000)
    assert not config_pin.stronger("work_day_cost", 2.0, None)
