"""The project digest in the SessionStart context, through a real hook call: only where the
workspace opts in (`digest_at_start = true`), cached, recomputed when a manifest changes, and
turning it off again is no tampering (it grants nothing)."""

import json

import pytest

from tests.support.search_repo import commit, git
from tests.support.hook_cli import hook
from tests.support.runner_home import rpc

pytestmark = pytest.mark.e2e


@pytest.fixture
def repo(tmp_path):
    r = tmp_path / "proj"
    r.mkdir()
    git(r, "init", "-q")
    commit(r, {"pyproject.toml": '[project]\nname = "proj"\n[project.scripts]\nproj = "src.app:main"\n',
               "src/app.py": "def main():\n    return 0\n"}, "Start the project")
    return r


def start(home, repo, sid: str) -> str:
    data = {"session_id": sid, "cwd": str(repo), "hook_event_name": "SessionStart", "source": "startup"}
    done = hook(home, "SessionStart", data)
    assert done.returncode == 0, done.stderr
    return json.loads(done.stdout)["hookSpecificOutput"]["additionalContext"]


def opt(repo, on: bool) -> None:
    (repo / ".plugkit").mkdir(exist_ok=True)
    (repo / ".plugkit" / "config.toml").write_text(f"digest_at_start = {'true' if on else 'false'}\n")


def test_session_start_names_search_and_carries_the_digest_only_when_opted_in(home, repo):
    plain = start(home, repo, "s1")
    assert "`plugkit search QUERY`" in plain and "project digest of" not in plain
    opt(repo, True)
    context = start(home, repo, "s2")
    digest = context[context.index("project digest of"):]
    assert "proj = src.app:main (pyproject scripts)" in digest and len(digest) <= 3600
    assert "`plugkit search QUERY`" in context
    assert rpc(home, "search.digest", {"session_id": "s2", "cwd": str(repo)})["cached"] is True


def test_the_digest_follows_its_inputs_and_turning_it_off_is_no_tampering(home, repo):
    opt(repo, True)
    assert "tool = src.tool:run" not in start(home, repo, "s1")
    (repo / "pyproject.toml").write_text('[project]\nname = "proj"\n[project.scripts]\nproj = "src.app:main"\n'
                                         'tool = "src.tool:run"\n')
    assert "tool = src.tool:run (pyproject scripts)" in start(home, repo, "s2")
    opt(repo, False)
    off = start(home, repo, "s3")
    assert "project digest of" not in off and "TAMPERED" not in off
