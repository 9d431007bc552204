"""`runner status` for a person: colour only at a terminal and never under NO_COLOR, and the
browser line only while the browser runs (not repeated on every status when nothing uses it)."""

import io

from client.verbs import runner

INFO = {"pid": 7, "port": 32882, "version": "x", "uptime_s": 5, "sessions": 0, "tasks": 0, "running_tasks": 0,
        "home": "/h", "requests": 1, "reaper": {}}


class Tty(io.StringIO):
    def isatty(self) -> bool:
        return True


def test_colour_needs_a_terminal_and_no_no_color(monkeypatch):
    monkeypatch.delenv("NO_COLOR", raising=False)
    monkeypatch.setenv("TERM", "xterm")
    assert runner.color_ok(Tty()) and not runner.color_ok(io.StringIO())
    monkeypatch.setenv("NO_COLOR", "1")
    assert not runner.color_ok(Tty())
    monkeypatch.delenv("NO_COLOR")
    monkeypatch.setenv("TERM", "dumb")
    assert not runner.color_ok(Tty())
    assert "\x1b[" not in runner.render_status(INFO, {}, color=False)


def test_the_browser_line_only_while_it_runs():
    idle = dict(INFO, browser={"running": False, "sandbox": {"on": False, "why": "root"}})
    assert "browser:" not in runner.render_status(idle, {})
    busy = dict(INFO, browser={"running": True, "pid": 9, "sandbox": {"on": True, "why": "ok"}})
    assert "browser: running (pid 9)" in runner.render_status(busy, {})
