"""task.* and session.* through the real app, with real child processes."""

import asyncio
import os
import sys
from pathlib import Path

import psutil
import pytest

from plugkit.config import Limits
from runner.system import kill as kill_mod
from tests.support.inproc import RpcError, call
from tests.support.load import stretched
from tests.support.procs import wait_gone

FIX = Path(__file__).resolve().parent.parent / "fixtures"
PY = sys.executable


def fixture(name: str, *args: str) -> str:
    return f"exec {PY} {FIX / name} {' '.join(args)}"


@pytest.fixture
async def rpc(make_client, tmp_path):
    client = await make_client()
    work = tmp_path / "work"
    work.mkdir()

    async def do(method: str, session: str = "s1", cwd: Path = work, **params):
        return await call(client, method, session_id=session, cwd=str(cwd), **params)

    do.client, do.work = client, work
    return do


def text(output: dict, stream: str | None = None) -> str:
    return "".join(c["text"] for c in output["chunks"] if stream is None or c["stream"] == stream)


def tagged(rpc, task_id: int) -> list:
    return kill_mod.find_tagged(rpc.client.runtime.runner_id, str(task_id))


async def until_gone(rpc, task_id: int, seconds: float = 5.0) -> list:
    deadline = asyncio.get_running_loop().time() + seconds
    while (left := tagged(rpc, task_id)) and asyncio.get_running_loop().time() < deadline:
        await asyncio.sleep(0.05)
    return left


async def test_exec_runs_python_and_tags_streams(rpc):
    res = await rpc("task.exec", lang="python", wait_ms=10_000,
                    code="import sys\nprint('out é')\nprint('err', file=sys.stderr)\nsys.exit(3)")
    assert res["task"]["state"] == "failed" and res["task"]["exit_code"] == 3
    assert res["task"]["reason"] == "exit_nonzero"
    assert text(res["output"], "stdout") == "out é\n" and text(res["output"], "stderr") == "err\n"


async def test_exec_runs_in_the_session_cwd_with_tags_and_without_secrets(rpc, monkeypatch):
    monkeypatch.setenv("PLUGKIT_TOKEN", "leak-me")
    res = await rpc("task.exec", lang="bash", wait_ms=10_000, env={"EXTRA": "yes", "PLUGKIT_TASK_ID": "999"},
                    code='pwd; echo "$PLUGKIT_TASK_ID $PLUGKIT_SESSION_ID $EXTRA ${PLUGKIT_TOKEN:-none}"')
    lines = text(res["output"]).splitlines()
    assert lines[0] == os.path.realpath(rpc.work)
    assert lines[1] == f"{res['task']['task_id']} s1 yes none"


async def test_exec_returns_running_without_blocking_past_wait(rpc):
    loop = asyncio.get_running_loop()
    began = loop.time()
    res = await rpc("task.exec", lang="bash", code="echo first; sleep 30", wait_ms=300)
    assert loop.time() - began < stretched(5)  # bounded by wait_ms, not by the task's 30 s
    assert res["task"]["state"] == "running"
    await rpc("task.kill", task_id=res["task"]["task_id"])


async def test_timeout_kills_the_whole_tree(rpc):
    res = await rpc("task.exec", lang="bash", timeout_ms=500, wait_ms=10_000,
                    code=f"{PY} {FIX / 'forks_children.py'} 3 & {PY} {FIX / 'ignores_term.py'}")
    task = res["task"]
    assert task["state"] == "timed_out" and task["reason"] == "timeout"
    assert "timed out" in text(res["output"], "info")
    assert await until_gone(rpc, task["task_id"], 0.5) == []


async def test_kill_reaches_term_ignorers_double_forks_and_setsid_escapees(rpc):
    ids = []
    for name in ("ignores_term.py", "setsid_escape.py"):
        res = await rpc("task.exec", lang="bash", code=fixture(name), wait_ms=0)
        ids.append(res["task"]["task_id"])
    for task_id in ids:
        waited = await rpc("task.wait", task_id=task_id, until_regex=r"ready|child \d+", timeout_ms=10_000)
        assert waited["matched"]
        assert tagged(rpc, task_id)
        killed = await rpc("task.kill", task_id=task_id)
        assert killed["state"] == "killed" and killed["reason"] == "killed"
        assert tagged(rpc, task_id) == []


async def test_daemon_left_by_a_finished_task_is_swept(rpc):
    res = await rpc("task.exec", lang="bash", code=fixture("double_fork.py"), wait_ms=10_000)
    assert res["task"]["state"] == "completed"
    daemon = int(text(res["output"]).split("daemon ")[1].split()[0])
    assert await until_gone(rpc, res["task"]["task_id"], 5.0) == []
    assert wait_gone(daemon, 5.0)  # dead (a zombie not reaped yet is dead too)


async def test_background_job_of_a_finished_root_is_ended(rpc):
    res = await rpc("task.exec", lang="bash", code="sleep 60 & echo started", wait_ms=10_000)
    assert res["task"]["state"] == "completed"
    assert await until_gone(rpc, res["task"]["task_id"], 2.0) == []


async def test_output_cursors_serve_several_readers(rpc):
    res = await rpc("task.exec", lang="python", wait_ms=10_000,
                    code="for i in range(1000): print(f'line {i}')")
    task_id = res["task"]["task_id"]
    whole = "".join(f"line {i}\n" for i in range(1000))
    for _reader in range(2):
        cursor, got = 0, ""
        while True:
            out = await rpc("task.output", task_id=task_id, cursor=cursor, max_bytes=1000)
            got += text(out)
            cursor = out["cursor"]
            if not out["more"]:
                break
        assert got == whole
    # The session's own cursor was advanced by exec; nothing new is left to read.
    rest = await rpc("task.output", task_id=task_id, max_bytes=10)
    assert text(rest) == "" or whole.startswith(text(res["output"]))


async def test_kept_cursor_returns_only_what_is_new(rpc):
    res = await rpc("task.exec", lang="bash", wait_ms=0,
                    code="echo one; read x; echo two; read y; echo three")
    task_id = res["task"]["task_id"]
    await rpc("task.wait", task_id=task_id, until_text="one", timeout_ms=10_000)
    assert text(await rpc("task.output", task_id=task_id)) == "one\n"
    await rpc("task.input", task_id=task_id, data="go\n")
    await rpc("task.wait", task_id=task_id, until_text="two", timeout_ms=10_000)
    assert text(await rpc("task.output", task_id=task_id)) == "two\n"
    await rpc("task.input", task_id=task_id, data="go\n", eof=True)
    done = await rpc("task.wait", task_id=task_id, timeout_ms=10_000)
    assert done["task"]["state"] == "completed"
    assert text(await rpc("task.output", task_id=task_id)) == "three\n"


async def test_wait_returns_on_text_regex_end_or_timeout(rpc):
    res = await rpc("task.exec", lang="bash", wait_ms=0, code="sleep 0.2; echo READY 42; sleep 30")
    task_id = res["task"]["task_id"]
    hit = await rpc("task.wait", task_id=task_id, until_text="READY", timeout_ms=10_000)
    assert hit["matched"] and not hit["timed_out"] and hit["task"]["state"] == "running"
    rx = await rpc("task.wait", task_id=task_id, until_regex=r"READY \d+", timeout_ms=10_000, cursor=0)
    assert rx["matched"] and rx["match_cursor"] == len("READY 42")
    miss = await rpc("task.wait", task_id=task_id, until_text="NEVER", timeout_ms=200)
    assert miss["timed_out"] and not miss["matched"]
    with pytest.raises(RpcError) as both:
        await rpc("task.wait", task_id=task_id, until_text="a", until_regex="b")
    assert both.value.code == -32602
    with pytest.raises(RpcError) as bad:
        await rpc("task.wait", task_id=task_id, until_regex="(")
    assert bad.value.code == -32602
    await rpc("task.kill", task_id=task_id)
    ended = await rpc("task.wait", task_id=task_id, until_text="NEVER", timeout_ms=10_000)
    assert ended["task"]["state"] == "killed" and not ended["timed_out"]


async def test_stdin_reader_gets_lines_and_finishes_on_eof(rpc):
    res = await rpc("task.exec", lang="bash", code=fixture("stdin_reader.py"), wait_ms=0)
    task_id = res["task"]["task_id"]
    await rpc("task.input", task_id=task_id, data="hello\n")
    assert (await rpc("task.wait", task_id=task_id, until_text="got: hello", timeout_ms=10_000))["matched"]
    await rpc("task.input", task_id=task_id, eof=True)
    done = await rpc("task.wait", task_id=task_id, timeout_ms=10_000)
    assert done["task"]["state"] == "completed"
    with pytest.raises(RpcError) as after:
        await rpc("task.input", task_id=task_id, data="late\n")
    assert after.value.code == -32005


async def test_stdin_param_is_written_then_closed(rpc):
    res = await rpc("task.exec", lang="python", stdin="a\nb\n", wait_ms=10_000,
                    code="import sys\nprint(sys.stdin.read().split())")
    assert text(res["output"]) == "['a', 'b']\n"


async def test_stderr_first_writer_does_not_deadlock(rpc):
    res = await rpc("task.exec", lang="bash", code=fixture("stderr_first.py"), wait_ms=20_000)
    assert res["task"]["state"] == "completed"
    out = await rpc("task.output", task_id=res["task"]["task_id"], cursor=0, max_bytes=4 << 20)
    assert text(out, "stdout").strip() == "done" and len(text(out, "stderr")) >= 1 << 20


async def test_child_that_closes_stdout_keeps_running_until_killed(rpc):
    res = await rpc("task.exec", lang="bash", code=fixture("closes_stdout.py"), wait_ms=0)
    task_id = res["task"]["task_id"]
    assert (await rpc("task.wait", task_id=task_id, until_text="bye", timeout_ms=10_000))["matched"]
    await asyncio.sleep(0.3)
    assert (await rpc("task.status", task_id=task_id))["state"] == "running"
    assert (await rpc("task.kill", task_id=task_id))["state"] == "killed"


async def test_huge_output_keeps_memory_bounded_and_counts_drops(rpc):
    rss_before = psutil.Process().memory_info().rss
    res = await rpc("task.exec", lang="bash", code=fixture("spew.py", "200"), wait_ms=60_000)
    task = res["task"]
    assert task["state"] == "completed"
    assert task["bytes_out"] >= 200 << 20 and task["dropped"] >= task["bytes_out"] - (8 << 20)
    growth = psutil.Process().memory_info().rss - rss_before
    assert growth < 96 << 20, f"RSS grew by {growth >> 20} MiB"
    out = await rpc("task.output", task_id=task["task_id"], cursor=0, max_bytes=100)
    assert out["dropped"] > 0


async def test_invalid_utf8_output_is_replaced_not_fatal(rpc):
    res = await rpc("task.exec", lang="python", wait_ms=10_000,
                    code="import sys\nsys.stdout.buffer.write(b'ok \\xff\\xfe end\\n')")
    assert text(res["output"]) == "ok \ufffd\ufffd end\n"


async def test_session_end_kills_and_forgets(rpc):
    running = [(await rpc("task.exec", lang="bash", code="sleep 30", wait_ms=0))["task"]["task_id"]
               for _ in range(3)]
    ended = await rpc("session.end")
    assert sorted(ended["killed"]) == sorted(running)
    assert (await rpc("task.list"))["tasks"] == []
    for task_id in running:
        assert tagged(rpc, task_id) == []
        with pytest.raises(RpcError):
            await rpc("task.status", task_id=task_id)


async def test_list_shows_only_the_callers_tasks(rpc, tmp_path):
    mine = (await rpc("task.exec", lang="bash", code="true", wait_ms=5000))["task"]["task_id"]
    other = (await rpc("task.exec", session="s2", lang="bash", code="true", wait_ms=5000))["task"]["task_id"]
    assert [t["task_id"] for t in (await rpc("task.list"))["tasks"]] == [mine]
    assert [t["task_id"] for t in (await rpc("task.list", session="s2"))["tasks"]] == [other]
    other_dir = tmp_path / "elsewhere"
    other_dir.mkdir()
    assert (await rpc("task.list", cwd=other_dir))["tasks"] == []


ISOLATION_METHODS = {
    "task.status": {}, "task.output": {}, "task.wait": {"timeout_ms": 10},
    "task.input": {"data": "x\n"}, "task.kill": {},
}


async def test_isolation_matrix_gives_one_not_found_and_changes_nothing(rpc, tmp_path):
    res = await rpc("task.exec", lang="bash", code="echo hi; sleep 30", wait_ms=0)
    task_id = res["task"]["task_id"]
    await rpc("task.wait", task_id=task_id, until_text="hi", timeout_ms=10_000)
    callers = [dict(session="intruder"), dict(session=""), dict(cwd=tmp_path)]
    messages = set()
    for method, extra in ISOLATION_METHODS.items():
        for who in callers:
            with pytest.raises(RpcError) as err:
                await rpc(method, task_id=task_id, **who, **extra)
            assert err.value.code == -32001, (method, who)
            messages.add(str(err.value))
        with pytest.raises(RpcError) as unknown:
            await rpc(method, task_id=task_id + 1000, **extra)
        assert unknown.value.code == -32001
        messages.add(str(unknown.value).replace(str(task_id + 1000), str(task_id)))
    assert len(messages) == 1  # no oracle: every miss reads the same
    status = await rpc("task.status", task_id=task_id)
    assert status["state"] == "running"
    assert text(await rpc("task.output", task_id=task_id)) == "hi\n"  # nobody consumed it
    await rpc("task.kill", task_id=task_id)


async def test_limits_refuse_and_start_nothing(make_client, tmp_path):
    client = await make_client(limits=Limits(tasks_per_session=2, running_tasks=3))
    args = dict(cwd=str(tmp_path), lang="bash", code="sleep 30", wait_ms=0)
    a = await call(client, "task.exec", session_id="a", **args)
    await call(client, "task.exec", session_id="a", **args)
    with pytest.raises(RpcError) as per_session:
        await call(client, "task.exec", session_id="a", **args)
    assert per_session.value.code == -32003 and "exec:close" in str(per_session.value)
    await call(client, "task.exec", session_id="b", **args)
    with pytest.raises(RpcError) as per_runner:
        await call(client, "task.exec", session_id="c", **args)
    assert per_runner.value.code == -32003
    assert len((await call(client, "task.list", session_id="a", cwd=str(tmp_path)))["tasks"]) == 2
    assert (await call(client, "task.list", session_id="c", cwd=str(tmp_path)))["tasks"] == []
    for session in ("a", "b"):
        await call(client, "session.end", session_id=session, cwd=str(tmp_path))
    assert a["task"]["task_id"] > 0


@pytest.mark.parametrize("params, code, words", [
    (dict(lang="cobol", code="x"), -32602, "bash"),
    (dict(lang="bash", code="   \n"), -32602, "empty"),
    (dict(lang="bash", code="true", timeout_ms=-1), -32602, "timeout_ms"),
    (dict(lang="bash", code="true", timeout_ms=10 ** 12), -32602, "timeout_ms"),
    (dict(lang="bash", code="x" * (600 << 10)), -32602, "code"),
    (dict(lang="bash", code="true", wait_ms=-5), -32602, "wait_ms"),
    (dict(lang="bash", code="true", unknown_field=1), -32602, "unknown_field"),
])
async def test_bad_exec_input_is_a_clear_error(rpc, params, code, words):
    with pytest.raises(RpcError) as err:
        await rpc("task.exec", **params)
    assert err.value.code == code
    assert words in (str(err.value) + str(err.value.data))
    assert (await rpc("task.list"))["tasks"] == []


async def test_nonexistent_cwd_is_an_error_not_a_fallback(rpc, tmp_path):
    with pytest.raises(RpcError) as err:
        await rpc("task.exec", cwd=tmp_path / "missing", lang="bash", code="pwd")
    assert err.value.code == -32602 and "does not exist" in str(err.value)
    afile = tmp_path / "file"
    afile.write_text("")
    with pytest.raises(RpcError):
        await rpc("task.exec", cwd=afile, lang="bash", code="pwd")


async def test_missing_interpreter_names_the_program(rpc, monkeypatch, tmp_path):
    empty = tmp_path / "bin"
    empty.mkdir()
    monkeypatch.setenv("PATH", str(empty))
    with pytest.raises(RpcError) as err:
        await rpc("task.exec", lang="node", code="1")
    assert err.value.code == -32006 and "node" in str(err.value)


async def test_runner_keeps_serving_while_tasks_misbehave(rpc):
    hog = (await rpc("task.exec", lang="bash", code=fixture("spew.py", "100"), wait_ms=0))["task"]["task_id"]
    for _ in range(5):
        info = await call(rpc.client, "runner.info")
        assert info["running_tasks"] >= 0
    await rpc("task.wait", task_id=hog, timeout_ms=60_000)
