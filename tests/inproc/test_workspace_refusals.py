"""The attack of issue 17 item 8 through the real app: a gate, prd, mutable, evidence, approval or
memory call with cwd "/", $HOME or $PLUGKIT_HOME must not plant `.prd` or `.plugkit/` there
(from then on every unmarked directory below would share that one workspace). Refused -32602
with one line saying how to pick the right root."""

import os
import shutil
from pathlib import Path

import pytest

from plugkit import errors
from tests.support.inproc import RpcError, call

PLANTED = (".prd", ".plugkit")
# Every namespace that writes workspace files, with the smallest params that would write.
WRITES = [
    ("gate.advance", {"to": "EXECUTE"}),
    ("gate.emit", {"files": [{"path": "x.py", "content": "x"}]}),
    ("prd.add", {"subject": "planted"}),
    ("mutable.add", {"name": "planted"}),
    ("evidence.add", {"path": "etc/hostname"}),
    ("approval.grant", {"item_id": "w1", "via": "cli", "user": "someone"}),
    ("memory.add", {"type": "reference", "name": "planted", "text": "Planted at the root."}),
]
READS = [("gate.status", {}), ("prd.list", {}), ("mutable.list", {}), ("evidence.list", {})]


@pytest.fixture
def places(tmp_path, monkeypatch):
    """cwd name -> directory: the real /, and a $HOME and $PLUGKIT_HOME of the test's own."""
    home, state = tmp_path / "user", tmp_path / "state"
    home.mkdir()
    state.mkdir()
    monkeypatch.setenv("HOME", str(home))
    monkeypatch.setenv("PLUGKIT_HOME", str(state))
    return {"root": Path("/"), "home": home, "plugkit_home": state}


@pytest.fixture
def root_guard():
    """What the test must not create in /; removed again if a regression created it anyway, so one
    failing run cannot leave the machine with a workspace at /."""
    before = {name for name in PLANTED if os.path.lexists(os.path.join("/", name))}
    yield before
    for name in set(PLANTED) - before:
        path = os.path.join("/", name)
        if os.path.isdir(path) and not os.path.islink(path):
            shutil.rmtree(path)
        elif os.path.lexists(path):
            os.unlink(path)


@pytest.mark.parametrize("where", ["root", "home", "plugkit_home"])
@pytest.mark.parametrize("method,params", WRITES, ids=[m for m, _ in WRITES])
async def test_no_call_plants_a_workspace_in_a_refused_place(make_client, places, root_guard, where, method, params):
    client = await make_client()
    cwd = places[where]
    before = {name for name in PLANTED if os.path.lexists(cwd / name)}
    with pytest.raises(RpcError) as caught:
        await call(client, method, session_id="s1", cwd=str(cwd), **params)
    assert caught.value.code == errors.INVALID_PARAMS
    message = caught.value.args[0]
    assert "\n" not in message and "keeps no .prd or .plugkit/ there" in message and "--cwd" in message
    assert {name for name in PLANTED if os.path.lexists(cwd / name)} == before
    if where == "root":
        assert before == root_guard


@pytest.mark.parametrize("method,params", READS, ids=[m for m, _ in READS])
async def test_reads_in_home_are_refused_the_same_way(make_client, places, method, params):
    client = await make_client()
    with pytest.raises(RpcError) as caught:
        await call(client, method, session_id="s1", cwd=str(places["home"]), **params)
    assert caught.value.code == errors.INVALID_PARAMS and "$HOME" in caught.value.args[0]


async def test_markers_planted_in_home_do_not_capture_the_projects_below(make_client, places):
    # A dotfiles ~/.git (or a .prd planted there before this fix) must not make every unmarked
    # directory under $HOME one shared workspace.
    home = places["home"]
    (home / ".git").mkdir()
    (home / ".prd").write_text("[]")
    project = home / "scratch"
    project.mkdir()
    client = await make_client()
    status = await call(client, "gate.status", session_id="s1", cwd=str(project))
    assert status["workspace"] == os.path.realpath(project)
    await call(client, "prd.add", session_id="s1", cwd=str(project), subject="local")
    assert (project / ".prd").exists() and (home / ".prd").read_text() == "[]"


async def test_user_memories_still_work_from_home(make_client, places):
    client = await make_client()
    home = str(places["home"])
    added = await call(client, "memory.add", session_id="s1", cwd=home, type="user", name="prefers tabs",
                       text="Prefers tabs over spaces.")
    assert added["scope"] == "user"
    listed = await call(client, "memory.list", session_id="s1", cwd=home)
    assert [m["name"] for m in listed["memories"]] == ["prefers tabs"]
    assert not (places["home"] / ".plugkit").exists()


@pytest.mark.parametrize("where", ["root", "home"])
async def test_hooks_there_stay_quiet_and_create_nothing(make_client, places, root_guard, where):
    # No workspace, so nothing to gate: no note on every tool call, no Stop block, no error.
    client = await make_client()
    cwd = str(places[where])
    before = {name for name in PLANTED if os.path.lexists(os.path.join(cwd, name))}
    session = {"session_id": "hooked", "cwd": cwd}
    started = await call(client, "hook.session_start", **session, platform="claude-code", source="startup")
    assert "keeps no" not in started["context"]
    decided = await call(client, "hook.pre_tool", **session, tool_name="Write",
                         tool_input={"file_path": os.path.join(cwd, "x.py"), "content": "x"})
    assert decided == {"decision": "allow", "reason": ""}
    assert (await call(client, "hook.stop", **session))["block"] is False
    await call(client, "hook.session_end", **session)
    assert {name for name in PLANTED if os.path.lexists(os.path.join(cwd, name))} == before
