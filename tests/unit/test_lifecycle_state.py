"""The state file (missing, corrupt, atomic, concurrent), the config file, and workspace roots."""

import logging
import os
import subprocess
import threading
from pathlib import Path

import pytest

from plugkit.lifecycle import config, state as state_mod
from plugkit.lifecycle.workspace import Workspace, find_root


@pytest.fixture
def ws(tmp_path):
    return Workspace(os.path.realpath(tmp_path))


def test_a_missing_state_is_a_fresh_plan_and_reading_writes_nothing(ws):
    st = state_mod.load(ws)
    assert (st.phase, st.mutables, st.history) == ("PLAN", {}, [])
    assert not os.path.exists(ws.dir)


def test_a_corrupt_state_is_moved_aside_and_reported_loudly(ws, caplog):
    ws.ensure_dir()
    Path(ws.state_path).write_text('{"phase": "VERIFY", "mutables": ')
    with caplog.at_level(logging.ERROR, logger="plugkit.lifecycle"):
        st = state_mod.load(ws)
    assert st.phase == "PLAN" and "moved to state.json.corrupt-" in st.notices[0]
    aside = [n for n in os.listdir(ws.dir) if n.startswith("state.json.corrupt-")]
    assert len(aside) == 1 and Path(ws.dir, aside[0]).read_text().startswith('{"phase": "VERIFY"')
    assert any("unreadable" in r.getMessage() for r in caplog.records)
    assert state_mod.load(ws).notices == st.notices  # the fresh state was written, notice included


def test_an_invalid_phase_counts_as_corrupt(ws):
    ws.ensure_dir()
    Path(ws.state_path).write_text('{"phase": "DONE"}')
    assert state_mod.load(ws).phase == "PLAN"


def test_transactions_write_atomically_and_serialise(ws):
    def bump():
        for _ in range(20):
            with state_mod.transaction(ws) as st:
                st.plan_passes += 1

    threads = [threading.Thread(target=bump) for _ in range(4)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert state_mod.load(ws).plan_passes == 80
    assert not [n for n in os.listdir(ws.dir) if n.endswith(".tmp")]


def test_a_failed_transaction_writes_nothing(ws):
    with pytest.raises(RuntimeError):
        with state_mod.transaction(ws) as st:
            st.phase = "COMPLETE"
            raise RuntimeError("boom")
    assert state_mod.load(ws).phase == "PLAN"


def test_history_is_bounded(ws):
    with state_mod.transaction(ws) as st:
        st.history = [state_mod.Transition(at=i, from_phase="PLAN", to_phase="PLAN", trigger="t")
                      for i in range(state_mod.MAX_HISTORY + 50)]
    assert len(state_mod.load(ws).history) == state_mod.MAX_HISTORY


def test_plugkit_state_is_invisible_to_git(ws):
    subprocess.run(["git", "init", "-q", ws.root], check=True)
    with state_mod.transaction(ws) as st:
        st.phase = "EXECUTE"
    Path(ws.dir, "config.toml").write_text('gates = "enforce"\n')
    out = subprocess.run(["git", "-C", ws.root, "status", "--porcelain"], capture_output=True, text=True).stdout
    assert out.splitlines() == ["?? .plugkit/"]  # only config.toml, the user's, shows
    Path(ws.dir, "config.toml").unlink()
    out = subprocess.run(["git", "-C", ws.root, "status", "--porcelain"], capture_output=True, text=True).stdout
    assert out == ""


def test_config_defaults_values_and_problems(ws):
    assert config.load(ws.config_path) == config.GateConfig()
    ws.ensure_dir()
    Path(ws.config_path).write_text('gates = "enforce"\nverify = "pytest -q"\nready_limit = 5\n')
    cfg = config.load(ws.config_path)
    assert (cfg.mode, cfg.verify, cfg.verify_lang, cfg.ready_limit, cfg.problems) == (
        "enforce", "pytest -q", "bash", 5, ())
    Path(ws.config_path).write_text('gates = "enforse"\nverify_timeout_s = 0\ncolour = 1\n')
    cfg = config.load(ws.config_path)
    assert cfg.mode == "advisory" and cfg.verify_timeout_s == 600.0
    assert [p.split(":")[1].split()[0] for p in cfg.problems] == ["gates", "verify_timeout_s", "unknown"]
    Path(ws.config_path).write_text("gates = [")
    assert "unreadable" in config.load(ws.config_path).problems[0]


def test_workspace_root_is_the_nearest_marker(tmp_path):
    root = Path(os.path.realpath(tmp_path))
    deep = root / "repo" / "src" / "pkg"
    deep.mkdir(parents=True)
    assert find_root(str(deep)) == str(deep)  # no marker: the cwd itself
    (root / "repo" / ".git").mkdir()
    assert find_root(str(deep)) == str(root / "repo")
    (root / "repo" / "src" / ".plugkit" / "evidence").mkdir(parents=True)
    assert find_root(str(deep)) == str(root / "repo")  # a bare .plugkit/ is not a marker
    (root / "repo" / "src" / ".plugkit" / "config.toml").write_text("")
    assert find_root(str(deep)) == str(root / "repo" / "src")  # a sub-project opts in
    os.symlink(deep, root / "alias")
    assert find_root(str(root / "alias")) == str(root / "repo" / "src")
