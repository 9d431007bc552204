"""An in-place restart whose exec fails loses nothing (issue 47, item 4): the old image serves on,
its running task keeps its output, its stdin and its end, the handover file is gone and no fd
stays inheritable. The exec is the one part made to fail: the kernel's refusal of execve."""

import asyncio
import errno
import os

from runner.boot.handover import Restarter
from runner.http.keys import CONTEXT
from runner.system import handover as handover_file
from tests.support.inproc import call


async def test_a_failed_exec_leaves_the_old_image_serving_its_tasks(make_client, tmp_path, monkeypatch):
    client = await make_client()
    ctx = client.app[CONTEXT]
    ref = {"session_id": "s", "cwd": str(tmp_path)}
    task = (await call(client, "task.exec", **ref, lang="bash", code="echo before; read line; echo got $line",
                       wait_ms=0))["task"]["task_id"]
    await call(client, "task.wait", **ref, task_id=task, until_text="before", timeout_ms=20_000)
    tried = []

    def refuse(path, argv, env):
        tried.append(handover_file.Inherited.parse(env[handover_file.ENV]))
        assert os.path.exists(handover_file.path(str(tmp_path)))  # written before the exec
        raise OSError(errno.ENOMEM, "Cannot allocate memory")

    monkeypatch.setattr(os, "execve", refuse)
    lock_fd = os.open(tmp_path / "lock", os.O_CREAT | os.O_RDWR | os.O_CLOEXEC, 0o600)
    listen_fd = client._runner.server.sockets[0].fileno()
    try:
        restarter = Restarter(ctx, listen_fd, lock_fd, "test-token")
        said = await restarter.restart()
        assert said.kept == [task] and said.cut == []
        await restarter.pending
        assert tried and tried[0].lock_fd == lock_fd and tried[0].listen_fd == listen_fd
        assert not os.path.exists(handover_file.path(str(tmp_path)))
        assert not os.get_inheritable(lock_fd) and not os.get_inheritable(listen_fd)
        assert not ctx.tasks.restarting and not restarter.busy
        running = ctx.tasks.running()
        assert [t.id for t in running] == [task]
        for fd in (0, 1, 2):
            end = running[0].execution.transport.get_pipe_transport(fd)
            raw = end.get_extra_info("pipe") if end is not None else None
            assert raw is None or not os.get_inheritable(raw.fileno())
    finally:
        os.close(lock_fd)
    # The task is served as before: its input, its output, its end.
    await call(client, "task.input", **ref, task_id=task, data="hi\n", eof=True)
    await call(client, "task.wait", **ref, task_id=task, timeout_ms=20_000)
    status = await call(client, "task.status", **ref, task_id=task)
    out = await call(client, "task.output", **ref, task_id=task, cursor=0)
    assert status["state"] == "completed" and "".join(c["text"] for c in out["chunks"]) == "before\ngot hi\n"
    # And new work is taken again.
    again = await call(client, "task.exec", **ref, lang="bash", code="echo again", wait_ms=20_000)
    assert again["task"]["state"] == "completed"
    await asyncio.sleep(0)
