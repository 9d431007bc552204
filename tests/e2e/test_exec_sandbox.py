"""`plugkit exec:<lang> --sandbox` and `exec_sandbox = true`: one task in the worker sandbox,
through the real CLI, the real runner and real bwrap. A Python task that reads the runner's
token or a credential, or writes outside its workspace, is denied; its own workspace stays
writable and an ordinary task still works. Without the sandbox the same task reads the
token: what the option adds."""

from pathlib import Path

import pytest

from tests.support.agent import git, make_repo
from tests.support.attempts import PRELUDE, home_with_a_key

pytestmark = pytest.mark.e2e

PROBE = PRELUDE + """
attempt("read_token", lambda: open({token!r}).read())
attempt("read_ssh_key", lambda: open({ssh!r}).read())
attempt("write_outside", lambda: open({outside!r}, "w").write("pwned"))
open("inside.txt", "w").write("ok")
print("wrote inside", 6 * 7)
"""


@pytest.fixture
def ws(tmp_path) -> Path:
    return make_repo(tmp_path / "ws", 'gates = "advisory"\n')


@pytest.fixture
def user_home(tmp_path) -> Path:
    return home_with_a_key(tmp_path / "user")


def _probe(home, ws: Path, user_home: Path, tmp_path: Path, *flags: str) -> dict[str, str]:
    code = PROBE.format(token=str(home.path / "token"), ssh=str(user_home / ".ssh" / "id_rsa"),
                        outside=str(tmp_path / "outside.txt"))
    done = home.cli("exec:python", *flags, "--", code, cwd=ws, env={"HOME": str(user_home)})
    assert done.returncode == 0 and "wrote inside 42" in done.stdout, (done.stdout, done.stderr)
    assert (ws / "inside.txt").read_text() == "ok"
    return dict(line.split()[1:3] for line in done.stdout.splitlines() if line.startswith("ATTACK "))


def test_a_sandboxed_task_keeps_its_workspace_and_nothing_else(shared_home, ws, user_home, tmp_path):
    assert set(_probe(shared_home, ws, user_home, tmp_path, "--sandbox").values()) == {"denied"}
    assert not (tmp_path / "outside.txt").exists()
    assert shared_home.cli("exec:bash", "--sandbox", "echo $((6 * 7))", cwd=ws).stdout.strip() == "42"
    # What the option adds: without it the same task reads the token.
    assert _probe(shared_home, ws, user_home, tmp_path)["read_token"] == "ALLOWED"


def test_exec_sandbox_in_the_workspace_puts_every_task_in_the_sandbox(shared_home, ws, user_home, tmp_path):
    config = ws / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + "exec_sandbox = true\n")
    git(ws, "commit", "-qam", "sandbox every task")
    assert set(_probe(shared_home, ws, user_home, tmp_path).values()) == {"denied"}


def test_an_agent_turning_exec_sandbox_off_in_the_file_changes_nothing(shared_home, ws, user_home, tmp_path):
    config = ws / ".plugkit" / "config.toml"
    config.write_text(config.read_text() + "exec_sandbox = true\n")
    git(ws, "commit", "-qam", "sandbox every task")
    assert shared_home.cli("gate", "status", cwd=ws).returncode == 0  # the runner holds the setting now
    config.write_text(config.read_text().replace("exec_sandbox = true", "exec_sandbox = false"))
    assert set(_probe(shared_home, ws, user_home, tmp_path).values()) == {"denied"}
