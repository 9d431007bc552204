"""`plugkit memory ...` end to end: the real CLI against a real (auto-started) runner."""

import json
import subprocess

import pytest

pytestmark = pytest.mark.e2e


def memory(home, cwd, *args: str, input: str | None = None) -> subprocess.CompletedProcess:
    return home.cli("memory", *args, input=input, cwd=cwd)


def test_memory_cli_round_trip_against_a_real_runner(home, tmp_path):
    ws = tmp_path / "ws"
    (ws / ".git").mkdir(parents=True)
    (ws / "tool.py").write_text("def build_all():\n    pass\n")
    text = "Call `build_all()` in tool.py before tests.\nWhy: tests import the build.\nHow to apply: always.\n"

    added = memory(home, ws, "add", "--type", "project", "--name", "Build first", "-", input=text)
    assert added.returncode == 0, added.stderr
    assert "saved project memory 'Build first'" in added.stdout

    refused = memory(home, ws, "add", "--type", "reference", "--name", "sha", "89ae02a")
    assert refused.returncode == 2 and "only a git hash" in refused.stderr

    listed = json.loads(memory(home, ws, "list", "--json").stdout)
    assert [m["name"] for m in listed["memories"]] == ["Build first"]
    assert memory(home, ws, "search", "build", "tests").stdout.split("[project] ")[1].startswith("Build first")

    (ws / "tool.py").write_text("def make_everything():\n    pass\n")  # renamed
    shown = memory(home, ws, "show", "build first")
    assert shown.returncode == 0
    assert "STALE" in shown.stdout and "`build_all()` not found" in shown.stdout
    assert shown.stdout.index("STALE") < shown.stdout.index("Why: tests import")

    assert "Build first" in memory(home, ws, "index").stdout
    assert memory(home, ws, "forget", "Build first").returncode == 0
    missing = memory(home, ws, "show", "Build first")
    assert missing.returncode == 1 and "no memory named" in missing.stderr
