"""What the runner reads for a caller (search) stays inside the caller's root: a hostile command
worker (tests/fixtures/search_link_attacks.py) links the person's SSH key, the runner's log and
token, /etc/shadow and a directory of secrets into its worktree and asks search for them through
its own capability; nothing behind a link comes back, so no token is read and none is used. And
a FIFO planted in a workspace neither wedges its index nor keeps `runner stop` from stopping.
Real runner, real bwrap, real git, the real CLI."""

import os
import sys
from pathlib import Path

import pytest

from tests.support.search_repo import answer, commit, git
from tests.support.work_cli import Work
from tests.support.agent import make_repo
from tests.support.attempts import FAKE_KEY, home_with_a_key

pytestmark = pytest.mark.e2e
ATTACKS = str(Path(__file__).resolve().parents[1] / "fixtures" / "search_link_attacks.py")


def test_a_worker_reads_nothing_outside_its_worktree_through_search(home, tmp_path):
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    user_home = home_with_a_key(tmp_path / "user")
    secrets = tmp_path / "secrets"
    secrets.mkdir()
    (secrets / "aws.py").write_text("AWS_SECRET = 'hunter2secret'\n")
    marker = tmp_path / "escaped.txt"
    w = Work(home, repo, {})
    w.env["HOME"] = str(user_home)
    w.add("w1", "--verify", "test -f done.txt")
    home.cli("exec:bash", "--session", "person", "echo runner-log-has-lines", cwd=repo)  # the log is not empty
    argv = [str(user_home / ".ssh" / "id_rsa"), str(home.path / "runner.log"), str(home.path / "token"),
            str(secrets), str(marker)]
    w.cli("work", "--items", "w1", "--run", f"{sys.executable} {ATTACKS} {' '.join(argv)}", "--json")
    run = w.until(lambda r: r["ended_at"] is not None)
    logs = w.cli("work", "logs", "w1").stdout
    token = home.token()
    assert "ESCAPE denied" in logs, logs
    assert not marker.exists(), "an unsandboxed task ran with the token read through search"
    seen = [line for line in logs.splitlines() if line.startswith("SEEN ")]
    assert not seen, "search gave back lines from behind a link:\n" + "\n".join(seen)
    assert FAKE_KEY.strip() not in logs and "hunter2secret" not in logs
    assert token not in logs and all(part not in logs for part in (token[:12], token[-12:]))
    assert w.items(run)["w1"]["state"] == "completed", run  # its own work still lands


def test_search_of_a_workspace_with_links_out_answers_only_its_own_files(home, tmp_path):
    """The same from a person's `plugkit search` (no sandbox): a link out, tracked or not, a link
    to a directory and a link to a file inside the root; only the root's own files answer."""
    outside = tmp_path / "outside"
    outside.mkdir()
    (outside / "creds.py").write_text("def leaked_credential():\n    return 'swordfish_outside'\n")
    repo = tmp_path / "proj"
    repo.mkdir()
    git(repo, "init", "-q")
    commit(repo, {"src/own.py": "def own_function():\n    return 'swordfish_inside'\n"}, "own code")
    os.symlink(outside / "creds.py", repo / "tracked_link.py")
    git(repo, "add", "tracked_link.py")
    git(repo, "commit", "-qm", "a tracked link out")
    os.symlink(outside / "creds.py", repo / "untracked_link.py")
    os.symlink(outside, repo / "linked_dir")
    os.symlink("src/own.py", repo / "inside_link.py")
    found = answer(home, repo, "swordfish_outside leaked_credential swordfish_inside own_function")
    paths = {h["path"] for h in found["hits"]} | {d["path"] for d in found["definitions"]}
    text = str(found)
    assert "swordfish_outside" not in text and "leaked_credential" not in text, found
    assert paths == {"src/own.py"}, found  # a link inside the root is not read twice: its target answers


@pytest.mark.parametrize("kind", ["plain_folder", "git_tracked"])
def test_a_fifo_in_the_workspace_neither_wedges_search_nor_runner_stop(home, tmp_path, kind):
    """A FIFO blocks whoever opens it for reading until a writer comes: in a folder that is no
    repository (walked) or in place of a tracked file (git still lists it)."""
    repo = tmp_path / "proj"
    (repo / "src").mkdir(parents=True)
    (repo / "src" / "a.py").write_text("def before_the_fifo():\n    pass\n")
    if kind == "git_tracked":
        git(repo, "init", "-q")
        commit(repo, {"src/pipe.py": "x = 1\n"}, "code")
        os.unlink(repo / "src" / "pipe.py")
        os.mkfifo(repo / "src" / "pipe.py")
    else:
        os.mkfifo(repo / "pipe.py")
        os.mkfifo(repo / "src" / "pipe.txt")
    found = answer(home, repo, "before_the_fifo")
    assert [d["path"] for d in found["definitions"]] == ["src/a.py"], found
    (repo / "src" / "b.py").write_text("def after_the_fifo():\n    pass\n")
    found = answer(home, repo, "after_the_fifo")  # the index still follows the workspace
    assert [d["path"] for d in found["definitions"]] == ["src/b.py"], found
    done = home.cli("runner", "stop", timeout=60)
    assert done.returncode == 0, done.stderr
    assert "killed" not in done.stdout and "did not stop" not in done.stderr, done.stdout + done.stderr
    log = (home.path / "runner.log").read_text()
    assert "runner_stopped" in log, log[-2000:]  # it shut down itself, not by a signal


def test_the_digest_reads_no_manifest_through_a_link(home, tmp_path):
    """The digest reads manifests and CI files for its caller: linked to a secret, they give nothing."""
    outside = tmp_path / "outside"
    (outside / "wf").mkdir(parents=True)
    (outside / "package.json").write_text('{"scripts": {"leak": "echo pkg_secret_outside"}}')
    (outside / "Makefile").write_text("make_secret_outside:\n\ttrue\n")
    (outside / "wf" / "ci.yml").write_text("    - run: echo ci_secret_outside\n")
    repo = tmp_path / "proj"
    (repo / ".github").mkdir(parents=True)
    git(repo, "init", "-q")
    commit(repo, {"src/a.py": "x = 1\n", "pyproject.toml": '[project]\nname = "own"\n'}, "code")
    os.symlink(outside / "package.json", repo / "package.json")
    os.symlink(outside / "Makefile", repo / "Makefile")
    os.symlink(outside / "wf", repo / ".github" / "workflows")
    os.mkfifo(repo / ".gitlab-ci.yml")
    done = home.cli("digest", cwd=repo, timeout=60)
    assert done.returncode == 0, done.stderr
    assert "project digest of" in done.stdout and "secret_outside" not in done.stdout, done.stdout


FILES = str(Path(__file__).resolve().parents[1] / "fixtures" / "workspace_file_attacks.py")
FILE_CALLS = ("gate_status", "prd_list", "memory_list", "memory_search", "evidence_add_key", "evidence_list",
              "exec_plugin")


def test_what_the_runner_reads_of_a_worktree_follows_no_link_and_no_fifo(home, tmp_path):
    """The gates, the plan, memories, receipts and language plugins of a worker's worktree are
    read for its session: a link there reads nothing outside, a FIFO holds no call, and the
    runner keeps answering."""
    import hashlib

    from tests.support.runner_home import rpc

    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    user_home = home_with_a_key(tmp_path / "user")
    secret = tmp_path / "secret.toml"
    secret.write_text('swordfish_key_name = "swordfish_value"\nname = "swordfish_lang"\n')
    w = Work(home, repo, {})
    w.env["HOME"] = str(user_home)
    w.add("w1", "--verify", "test -f done.txt")
    key = user_home / ".ssh" / "id_rsa"
    w.cli("work", "--items", "w1", "--run", f"{sys.executable} {FILES} {secret} {key}", "--json")
    run = w.until(lambda r: r["ended_at"] is not None, timeout=180)
    logs = w.cli("work", "logs", "w1").stdout
    calls = {line.split()[1]: line.split()[2] for line in logs.splitlines() if line.startswith("CALL ")}
    assert set(calls) == set(FILE_CALLS), logs
    assert "LOST" not in calls.values(), logs  # no call held by a FIFO
    assert calls["evidence_add_key"] == "refused", logs  # no receipt (a hash) of the linked key
    assert "swordfish" not in logs and FAKE_KEY.strip() not in logs, logs
    assert hashlib.sha256(FAKE_KEY.encode()).hexdigest() not in logs, logs
    assert rpc(home, "runner.info")["pid"] == home.discovery()["pid"]  # the runner still answers
    assert w.items(run)["w1"]["state"] == "completed", run


GIT_CONFIG_ATTACK = str(Path(__file__).resolve().parents[1] / "fixtures" / "search_git_config_attack.py")


def test_git_configuration_a_worker_plants_is_never_obeyed_by_the_runners_search(home, tmp_path):
    """A worker's nested repository names a program as core.fsmonitor (and its hooks); the
    runner's search runs git there outside any sandbox (`ls-files` runs an fsmonitor), so every
    git the runner starts runs with fsmonitor and hooks off (runner.system.git.SAFE)."""
    repo = make_repo(tmp_path / "repo", 'gates = "advisory"\n')
    marker = tmp_path / "fsmonitor-ran.txt"
    w = Work(home, repo, {})
    w.add("w1", "--verify", "test -f done.txt")
    w.cli("work", "--items", "w1", "--run", f"{sys.executable} {GIT_CONFIG_ATTACK} {marker}", "--json")
    run = w.until(lambda r: r["ended_at"] is not None)
    logs = w.cli("work", "logs", "w1").stdout
    assert "ANSWERED True" in logs, logs  # the nested directory was searched: git ran there
    assert not marker.exists(), "the runner ran a program a sandboxed worker named in git config"
    assert w.items(run)["w1"]["state"] == "completed", run
