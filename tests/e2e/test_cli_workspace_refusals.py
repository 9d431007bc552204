"""Issue 17 item 8 from a shell: `plugkit prd|gate|mutable|memory` run in /, in $HOME or in
$PLUGKIT_HOME is refused in one line that says how to pick the root, and creates nothing there."""

import os
import shutil

import pytest

pytestmark = pytest.mark.e2e

PLANTED = (".prd", ".plugkit")
VERBS = [
    ("prd", "add", "planted item"),
    ("gate", "advance", "EXECUTE"),
    ("mutable", "add", "planted"),
    ("memory", "add", "--type", "reference", "--name", "planted", "Planted at the root."),
]


@pytest.fixture
def root_guard():
    before = {name for name in PLANTED if os.path.lexists(os.path.join("/", name))}
    yield before
    for name in set(PLANTED) - before:  # a regression must not leave a workspace at / behind
        path = os.path.join("/", name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


def test_cli_refuses_to_plant_a_workspace_at_root_home_or_plugkit_home(home, tmp_path, root_guard):
    fake_home = tmp_path / "user"
    fake_home.mkdir()
    env = {"HOME": str(fake_home)}  # the runner the CLI starts inherits it too
    for where in ("/", str(fake_home), str(home.path)):
        before = {name for name in PLANTED if os.path.lexists(os.path.join(where, name))}
        for argv in VERBS:
            done = home.cli(*argv, cwd=where, env=env)
            assert done.returncode != 0, (where, argv, done.stdout)
            lines = done.stderr.strip().splitlines()
            assert len(lines) == 1, (where, argv, done.stderr)
            assert "keeps no .prd or .plugkit/ there" in lines[0] and "--cwd DIR" in lines[0]
        assert {name for name in PLANTED if os.path.lexists(os.path.join(where, name))} == before
    assert {name for name in PLANTED if os.path.lexists(os.path.join("/", name))} == root_guard

    # The way out the message names: --cwd pointing at the project works from anywhere.
    project = fake_home / "app"
    project.mkdir()
    done = home.cli("prd", "add", "real item", "--cwd", str(project), cwd="/", env=env)
    assert done.returncode == 0, done.stderr
    assert (project / ".prd").exists()
