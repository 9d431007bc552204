"""The runner's configured limits hold at run time: the bounds of task.* and gate.* params
come from the RunnerConfig the app was composed with, not from the environment the
protocol module happened to be imported under."""

import pytest

from plugkit.config import Limits
from tests.support.inproc import RpcError, call


async def test_code_over_the_configured_limit_is_refused_naming_the_field(make_client, tmp_path):
    client = await make_client(limits=Limits(max_code_bytes=16))
    ids = {"session_id": "s", "cwd": str(tmp_path), "lang": "bash"}
    with pytest.raises(RpcError) as refused:
        await call(client, "task.exec", **ids, code="echo " + "x" * 20)
    assert refused.value.code == -32602
    assert refused.value.data == [{"field": "code", "problem": "String should have at most 16 characters"}]
    with pytest.raises(RpcError) as refused:
        await call(client, "task.exec", **ids, code="true", stdin="y" * 17)
    assert refused.value.data[0]["field"] == "stdin"
    res = await call(client, "task.exec", **ids, code="echo ok", wait_ms=30_000)
    assert res["task"]["state"] == "completed"


async def test_waits_and_timeouts_over_the_configured_limits_are_refused(make_client, tmp_path):
    client = await make_client(limits=Limits(max_wait_ms=1000, max_timeout_ms=5000))
    ids = {"session_id": "s", "cwd": str(tmp_path)}
    for method, params, field in (
            ("task.exec", {"lang": "bash", "code": "true", "wait_ms": 1001}, "wait_ms"),
            ("task.exec", {"lang": "bash", "code": "true", "timeout_ms": 5001}, "timeout_ms"),
            ("task.wait", {"task_id": 1, "timeout_ms": 1001}, "timeout_ms"),
            ("gate.verify", {"wait_ms": 1001}, "wait_ms")):
        with pytest.raises(RpcError) as refused:
            await call(client, method, **ids, **params)
        assert refused.value.code == -32602 and refused.value.data[0]["field"] == field, method


async def test_a_limit_raised_by_config_lets_larger_code_through(make_client, tmp_path):
    big = "true #" + "x" * (Limits().max_code_bytes + 10)
    client = await make_client(limits=Limits(max_code_bytes=2 * Limits().max_code_bytes, max_body_bytes=4 << 20))
    res = await call(client, "task.exec", session_id="s", cwd=str(tmp_path), lang="bash", code=big, wait_ms=30_000)
    assert res["task"]["state"] == "completed"


async def test_exec_python_runs_the_interpreter_the_config_names(make_client, tmp_path):
    fake = tmp_path / "python-custom"
    fake.write_text("#!/bin/sh\necho \"custom interpreter ran $4\"\n")  # argv: -u -c LAUNCHER FILE
    fake.chmod(0o755)
    client = await make_client(python=str(fake))
    res = await call(client, "task.exec", session_id="s", cwd=str(tmp_path), lang="python", code="print(1)",
                     wait_ms=30_000)
    out = "".join(c["text"] for c in res["output"]["chunks"] if c["stream"] == "stdout")
    assert out.startswith("custom interpreter ran ") and out.strip().endswith(".py")
