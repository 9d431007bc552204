"""One workspace rule for the gates, memory and language plugins, and the places that are never a
workspace: /, $HOME and $PLUGKIT_HOME (issue 15 item 5, issue 17 item 8)."""

import os
from pathlib import Path

import pytest

from plugkit.languages import lookup
from plugkit.languages import plugins
from plugkit.lifecycle.errors import Invalid
from plugkit.lifecycle.workspace import Workspace, workspace_of
from plugkit.memory.rules import Draft
from plugkit.memory.store import MemoryStore
from plugkit.workspace import MARKERS, NotAWorkspace, find_root, refusal, root_or_none


@pytest.fixture
def fake_home(tmp_path, monkeypatch):
    """A $HOME and a $PLUGKIT_HOME of the test's own, so refusing them is tested on real dirs."""
    home = Path(os.path.realpath(tmp_path)) / "user"
    state = tmp_path / "state"
    home.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PLUGKIT_HOME", str(state))
    return home


def roots(cwd: Path, state: Path) -> dict[str, str | None]:
    """What each of the three subsystems takes as the workspace of cwd."""
    lang = plugins.plugins_for(str(cwd))
    return {
        "gates": workspace_of(str(cwd)).root,
        "memory": MemoryStore.for_cwd(str(cwd), str(state)).workspace,
        "plugins": lang.workspace if lang is not None else None,
    }


def plugin(root: Path) -> None:
    (root / ".plugkit" / "lang").mkdir(parents=True, exist_ok=True)
    (root / ".plugkit" / "lang" / "awk.toml").write_text('run = ["awk", "-f", "{file}"]\n')


def test_gates_memory_and_plugins_agree_when_a_bare_dot_plugkit_sits_below_the_repo(tmp_path):
    # The case the three old rules disagreed on: gates said repo, memory and plugins said repo/src.
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    (repo / ".git").mkdir(parents=True)
    (repo / "src" / ".plugkit").mkdir(parents=True)
    plugin(repo)
    assert roots(repo / "src", tmp_path / "state") == {"gates": str(repo), "memory": str(repo), "plugins": str(repo)}
    assert lookup("awk", workspace=str(repo / "src")).origin == ".plugkit/lang/awk.toml"
    # A project memory written from repo/src lands in the workspace the gates use.
    memory = MemoryStore.for_cwd(str(repo / "src"), str(tmp_path / "state")).add(
        Draft(type="reference", name="where", body="The docs live in docs/."))
    assert Path(memory.path).parent == repo / ".plugkit" / "memory"


@pytest.mark.parametrize("marker", ["lang", "memory", "config.toml", "state.json"])
def test_a_sub_project_marker_under_dot_plugkit_moves_all_three(tmp_path, marker):
    repo = Path(os.path.realpath(tmp_path)) / "repo"
    (repo / ".git").mkdir(parents=True)
    sub = repo / "src"
    (sub / ".plugkit").mkdir(parents=True)
    target = sub / ".plugkit" / marker
    target.mkdir() if "." not in marker else target.write_text("")
    plugin(sub)
    (sub / "pkg").mkdir()
    assert set(roots(sub / "pkg", tmp_path / "state").values()) == {str(sub)}


def test_marker_set_is_the_one_every_subsystem_reads():
    assert ".git" in MARKERS and ".prd" in MARKERS
    assert ".plugkit" not in MARKERS and os.path.join(".plugkit", "evidence") not in MARKERS


def test_without_markers_the_cwd_itself_is_the_workspace(tmp_path):
    deep = Path(os.path.realpath(tmp_path)) / "a" / "b"
    deep.mkdir(parents=True)
    assert find_root(str(deep)) == str(deep)


def test_the_filesystem_root_is_never_a_workspace():
    with pytest.raises(NotAWorkspace) as caught:
        find_root("/")
    message = str(caught.value)
    assert "\n" not in message and "filesystem root" in message and "--cwd" in message
    assert root_or_none("/") is None
    assert refusal("/") == "the filesystem root"


def test_home_is_refused_and_its_markers_ignored(fake_home):
    (fake_home / ".git").mkdir()  # a dotfiles repository
    (fake_home / ".prd").write_text("[]")
    project = fake_home / "code" / "app"
    project.mkdir(parents=True)
    # Below $HOME is where projects live: an unmarked one is its own workspace, not $HOME.
    assert find_root(str(project)) == str(project)
    with pytest.raises(NotAWorkspace, match=r"home directory \(\$HOME\)"):
        find_root(str(fake_home))
    os.symlink(fake_home, fake_home.parent / "alias")  # a symlink to $HOME is $HOME
    with pytest.raises(NotAWorkspace):
        find_root(str(fake_home.parent / "alias"))


def test_plugkit_home_and_below_are_refused(fake_home, tmp_path):
    state = tmp_path / "state" / "tasks" / "t1"
    state.mkdir(parents=True)
    for cwd in (tmp_path / "state", state):
        with pytest.raises(NotAWorkspace, match=r"\$PLUGKIT_HOME"):
            find_root(str(cwd))


@pytest.mark.parametrize("where", ["root", "home"])
def test_workspace_files_are_never_created_in_refused_places(fake_home, where):
    # Belt and braces: even a Workspace built by hand refuses to make .plugkit/ there.
    root = "/" if where == "root" else str(fake_home)
    before = os.path.exists(os.path.join(root, ".plugkit"))
    with pytest.raises(Invalid, match="keeps no .prd or .plugkit/"):
        Workspace(root).ensure_dir()
    assert os.path.exists(os.path.join(root, ".plugkit")) == before == False  # noqa: E712


def test_memory_in_home_offers_user_memories_and_refuses_project_ones(fake_home, tmp_path):
    store = MemoryStore.for_cwd(str(fake_home), str(tmp_path / "state"))
    assert store.workspace is None
    user = store.add(Draft(type="user", name="prefers tabs", body="Prefers tabs over spaces."))
    assert user.scope == "user" and [m.name for m in store.all()[0]] == ["prefers tabs"]
    with pytest.raises(NotAWorkspace, match=r"\$HOME"):
        store.add(Draft(type="reference", name="docs", body="The docs live in docs/."))
    assert not (fake_home / ".plugkit").exists()
    assert plugins.plugins_for(str(fake_home)) is None
