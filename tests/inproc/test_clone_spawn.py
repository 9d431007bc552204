"""Tasks are cloned straight into their cgroup (clone3 + CLONE_INTO_CGROUP, issue 31.1): in it from
their first act, contained as before (a setsid escapee dies with its task), exit codes and
signals exact; where the helper cannot be had, the shell shim still puts them there."""

import asyncio
import errno
import os
import signal
import subprocess
from pathlib import Path

import pytest

from runner.system import cgroups, clone_spawn, cloned_process
from tests.support.escapees import gone, kill_all, unique_seconds
from tests.support.inproc import call

FIRST_ACT = "import sys; sys.stdout.write(open('/proc/self/cgroup').read())"


@pytest.fixture
async def rpc(make_client, tmp_path):
    client = await make_client()
    work = tmp_path / "work"
    work.mkdir()

    async def do(method: str, **params):
        return await call(client, method, session_id="s1", cwd=str(work), **params)

    do.client, do.work = client, work
    return do


def stdout(res: dict) -> str:
    return "".join(c["text"] for c in res["output"]["chunks"] if c["stream"] == "stdout")


def task_cgroup(rpc, task_id: int) -> str:
    """The task's cgroup as /proc/<pid>/cgroup names it (relative to the v2 mount)."""
    runtime = rpc.client.runtime
    return f"/plugkit/{cgroups.home_key(str(rpc.work.parent))}/{runtime.runner_id}/task_{task_id}"


@pytest.fixture
def helper_absent(monkeypatch, tmp_path):
    """A runner whose helper cannot be built (no source): the Python path is all it has."""
    monkeypatch.setattr(clone_spawn, "SOURCE", str(tmp_path / "missing.c"))
    monkeypatch.setattr(clone_spawn, "HELPER", clone_spawn.Helper())


async def test_the_task_root_is_in_its_cgroup_from_its_first_act(rpc):
    res = await rpc("task.exec", lang="python", code=FIRST_ACT, wait_ms=10_000)
    assert res["task"]["state"] == "completed", res
    assert stdout(res).strip().endswith(task_cgroup(rpc, res["task"]["task_id"])), stdout(res)
    assert clone_spawn.HELPER.active and clone_spawn.HELPER.detail.startswith("clone3"), clone_spawn.HELPER.detail
    snapshot = await call(rpc.client, "debug.snapshot")
    assert snapshot["snapshot"]["executors"]["process"]["spawn"].startswith("clone3")


@pytest.mark.parametrize("code,state,exit_code,sig", [
    ("exit 7", "failed", 7, None),
    ("true", "completed", 0, None),
    ("kill -TERM $$", "failed", None, signal.SIGTERM),
    ("kill -KILL $$", "failed", None, signal.SIGKILL),
])
async def test_exit_codes_and_signals_are_exact(rpc, code, state, exit_code, sig):
    task = (await rpc("task.exec", lang="bash", code=code, wait_ms=10_000))["task"]
    assert (task["state"], task.get("exit_code"), task.get("signal")) == (state, exit_code, sig), task


async def test_stdin_cwd_and_env_reach_the_cloned_task(rpc):
    code = "import os, sys; print(sys.stdin.read(), os.getcwd(), os.environ.get('PLUGKIT_TASK_ID'), os.getpgid(0) == os.getpid())"
    res = await rpc("task.exec", lang="python", code=code, stdin="hello", wait_ms=10_000)
    assert stdout(res).split() == ["hello", str(rpc.work), str(res["task"]["task_id"]), "True"]


async def test_a_setsid_escapee_dies_with_its_cloned_task(rpc):
    seconds = unique_seconds()
    try:
        done = await rpc("task.exec", lang="bash", wait_ms=10_000,
                         code=f"setsid env -i sleep {seconds} & sleep 0.3")
        assert done["task"]["state"] == "completed", done
        assert clone_spawn.HELPER.active
        assert await asyncio.to_thread(gone, seconds)
    finally:
        kill_all(seconds)


async def test_without_the_helper_the_shim_still_joins_the_cgroup(helper_absent, rpc):
    res = await rpc("task.exec", lang="python", code=FIRST_ACT, wait_ms=10_000)
    assert stdout(res).strip().endswith(task_cgroup(rpc, res["task"]["task_id"])), stdout(res)
    assert not clone_spawn.HELPER.active and clone_spawn.HELPER.detail.startswith("shell shim"), \
        clone_spawn.HELPER.detail
    snapshot = await call(rpc.client, "debug.snapshot")
    assert snapshot["snapshot"]["executors"]["process"]["spawn"].startswith("shell shim")


@pytest.fixture
def scratch_cgroup():
    mode = cgroups.detect_cached()
    assert mode.root is not None, mode.detail
    cg = cgroups.TaskCgroups(mode, "/nonexistent-home-for-clone-test", f"{os.getpid()}-clonetest")
    yield cg.create(1)
    cg.close()


class _Sink(asyncio.SubprocessProtocol):
    def __init__(self):
        self.out = bytearray()
        self.exited = asyncio.get_running_loop().create_future()

    def pipe_data_received(self, fd, data):
        self.out += data

    def process_exited(self):
        self.exited.set_result(None)


async def test_a_failed_exec_or_chdir_is_an_oserror_and_leaves_no_child(scratch_cgroup, tmp_path):
    assert await clone_spawn.HELPER.ready(None)
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(OSError) as missing:
        await cloned_process.spawn(_Sink, "/nonexistent/prog", ["/nonexistent/prog"], {}, None, scratch_cgroup)
    assert missing.value.errno == errno.ENOENT and missing.value.stage == "exec"
    with pytest.raises(OSError) as no_dir:
        await cloned_process.spawn(_Sink, "/bin/true", ["true"], {}, str(tmp_path / "gone"), scratch_cgroup)
    assert no_dir.value.errno == errno.ENOENT and no_dir.value.stage == "chdir"
    assert cgroups.members(scratch_cgroup) == []
    # The pipes were watched before the clone: the failure closes them all the same.
    assert len(os.listdir("/proc/self/fd")) == fds
    with pytest.raises(ChildProcessError):
        os.waitpid(-1, os.WNOHANG)  # both children were reaped by the helper itself


async def test_cloned_child_reads_its_cgroup_before_anything_else(scratch_cgroup):
    assert await clone_spawn.HELPER.ready(None)
    proc, sink = await cloned_process.spawn(_Sink, "/bin/cat", ["cat", "/proc/self/cgroup"], {}, None, scratch_cgroup)
    await sink.exited
    await asyncio.sleep(0.05)
    proc.close()
    assert proc.get_returncode() == 0
    mount = cgroups._v2_mount()
    v2 = [line for line in sink.out.decode().splitlines() if line.startswith("0::")]
    assert v2 == ["0::" + scratch_cgroup[len(mount):]]


@pytest.mark.parametrize("env", [{"A": "x\0y"}, {"A=B": "x"}])
async def test_an_environment_c_would_misread_is_refused_as_subprocess_does(scratch_cgroup, env):
    assert await clone_spawn.HELPER.ready(None)
    fds = len(os.listdir("/proc/self/fd"))
    with pytest.raises(ValueError):
        await cloned_process.spawn(_Sink, "/bin/true", ["true"], env, None, scratch_cgroup)
    assert len(os.listdir("/proc/self/fd")) == fds  # no pipe end left open


@pytest.mark.parametrize("argv, env", [(["true"], {"A\0": "x"}), (["true", "a\0b"], {})])
async def test_a_null_byte_anywhere_in_argv_or_env_is_refused(scratch_cgroup, argv, env):
    assert await clone_spawn.HELPER.ready(None)
    with pytest.raises(ValueError):
        await cloned_process.spawn(_Sink, "/bin/true", argv, env, None, scratch_cgroup)


async def test_argv_and_env_reach_the_child_byte_for_byte_as_subprocess_passes_them(scratch_cgroup):
    assert await clone_spawn.HELPER.ready(None)
    odd = os.fsdecode(b"caf\xc3\xa9 \xff")  # UTF-8 and a byte that is not: surrogate-escaped, as os.environ has it
    env = {"ODD": odd, "EMPTY": "", "EQ": "a=b"}
    argv = ["/bin/sh", "-c", 'printf "%s|%s|%s|%s|%s" "$0" "$1" "$ODD" "$EMPTY" "$EQ"', odd, ""]
    proc, sink = await cloned_process.spawn(_Sink, "/bin/sh", argv, env, None, scratch_cgroup)
    await sink.exited
    await asyncio.sleep(0.05)
    proc.close()
    want = subprocess.run(argv, env=env, capture_output=True).stdout
    assert bytes(sink.out) == want == b"caf\xc3\xa9 \xff||caf\xc3\xa9 \xff||a=b"


async def test_the_child_gets_the_callers_cpus_and_the_caller_keeps_them(scratch_cgroup):
    # After a quiet spell the helper pins the caller to its CPU for the clone (the child starts
    # there); neither may stay pinned.
    assert await clone_spawn.HELPER.ready(None)
    cloned_process._last_spawn[0] = 0.0  # a quiet spell: this spawn starts its child on our CPU
    before = os.sched_getaffinity(0)
    proc, sink = await cloned_process.spawn(_Sink, "/bin/cat", ["cat", "/proc/self/status"], {}, None, scratch_cgroup)
    await sink.exited
    await asyncio.sleep(0.05)
    proc.close()
    assert os.sched_getaffinity(0) == before
    mine = [line for line in Path("/proc/self/status").read_text().splitlines() if line.startswith("Cpus_allowed_list")]
    assert [line for line in sink.out.decode().splitlines() if line.startswith("Cpus_allowed_list")] == mine
