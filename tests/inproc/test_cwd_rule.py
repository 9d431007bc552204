"""One cwd rule for every method (issues 15.2, 17.7): a relative cwd ("." would run in the runner's
own $PLUGKIT_HOME, next to its token) or one with a NUL byte is -32602 naming the field. The
methods are read from the RPC namespaces and their params models, so a new method is covered."""

import importlib

import pytest

from plugkit import errors
from runner.rpc.namespaces import NAMESPACES
from tests.support.inproc import RpcError, call


def methods_taking_cwd() -> list[str]:
    found = []
    for module in NAMESPACES.values():
        for name, method in importlib.import_module(module).METHODS.items():
            if "cwd" in method.params_model.model_fields:
                found.append(name)
    return sorted(found)


METHODS = methods_taking_cwd()


def test_the_rule_reaches_every_method_that_names_a_session():
    assert {"task.exec", "task.status", "session.end", "gate.status", "hook.session_start"} <= set(METHODS)


@pytest.mark.parametrize("cwd", [".", "work/sub", "/tmp/a\0b"])
async def test_bad_cwd_is_refused_by_every_method_naming_the_field(make_client, cwd):
    client = await make_client()
    for method in METHODS:
        with pytest.raises(RpcError) as refused:
            more = {"port": 1} if method == "port.kill" else {}  # its one other required field
            await call(client, method, session_id="s", cwd=cwd, lang="bash", code="touch planted", **more)
        err = refused.value
        assert err.code == errors.INVALID_PARAMS, method
        assert err.args[0].startswith("Invalid params: cwd: "), (method, err.args[0])
        assert any(p["field"] == "cwd" for p in err.data), (method, err.data)


async def test_a_relative_cwd_runs_nothing_in_the_runner_home(make_client, tmp_path, monkeypatch):
    client = await make_client()
    monkeypatch.chdir(tmp_path)  # where "." would have resolved
    with pytest.raises(RpcError):
        await call(client, "task.exec", session_id="s", cwd=".", lang="bash", code="touch planted", wait_ms=2000)
    assert not (tmp_path / "planted").exists()
    assert (await call(client, "runner.info"))["tasks"] == 0
