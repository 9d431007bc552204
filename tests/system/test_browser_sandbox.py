"""Chromium's sandbox and life, against the real kernel and real Chromium.

- As an ordinary user the sandbox stays on (no --no-sandbox) exactly when the kernel lets that
  user make the namespaces Chromium needs; a renderer then really runs under seccomp.
  Running as root, the test creates that user.
- As root Chromium gets --no-sandbox, and `plugkit doctor` says why.
- PR_SET_PDEATHSIG: a child spawned the way Chromium is dies with its spawner, even one that
  never reads its DevTools pipe (Chromium also exits at the pipe's EOF; this is the other half).
"""

import asyncio
import json
import os
import secrets
import shutil
import signal
import subprocess
import sys
import tempfile
import time
from pathlib import Path

import psutil
import pytest

import plugkit.chromium as chromium_rule
from plugkit.chromium import find_chromium, sandbox_for
from runner.system.cdp_pipe import ChildPipes, PipeTransport
from runner.system.chromium import FLAGS, NO_SANDBOX, argv
from tests.support.load import stretched
from tests.support.runner_home import ROOT, cli_argv

SYSTEM_PYTHON = "/usr/bin/python3"  # the created user cannot run our venv's interpreter under /root


@pytest.fixture
def ordinary_user():
    """(uid, gid) of a user that is not root: ourselves, or one created for the test."""
    if os.geteuid() != 0:
        yield os.getuid(), os.getgid()
        return
    name = f"pk{secrets.token_hex(4)}"
    subprocess.run(["useradd", "--no-create-home", "--shell", "/usr/sbin/nologin", name], check=True)
    try:
        import pwd

        entry = pwd.getpwnam(name)
        yield entry.pw_uid, entry.pw_gid
    finally:
        subprocess.run(["userdel", name], check=True)


def _as_user(uid: int, gid: int, args: list[str], **kw) -> subprocess.CompletedProcess:
    return subprocess.run(args, user=uid, group=gid, extra_groups=[], capture_output=True, text=True,
                          timeout=60, cwd="/", **kw)


def _verdict_as(uid: int, gid: int, exe: str, scratch: str) -> dict:
    """plugkit's own rule (stdlib only), run by that user."""
    shutil.copy(chromium_rule.__file__, os.path.join(scratch, "chromium_rule.py"))
    code = ("import json, sys\nsys.path.insert(0, sys.argv[1])\nimport chromium_rule\n"
            "print(json.dumps(chromium_rule.sandbox_for(sys.argv[2]).as_dict()))")
    run = _as_user(uid, gid, [SYSTEM_PYTHON, "-I", "-c", code, scratch, exe])
    assert run.returncode == 0, run.stderr
    return json.loads(run.stdout)


def _observe(root: int) -> dict:
    found = {"argv": [], "seccomp": {}}
    for p in [psutil.Process(root)] + psutil.Process(root).children(recursive=True):
        try:
            cmd = p.cmdline()
            with open(f"/proc/{p.pid}/status") as fh:
                mode = next(ln.split()[1] for ln in fh if ln.startswith("Seccomp:"))
        except (psutil.Error, OSError):
            continue
        found["argv"].append(cmd)
        found["seccomp"][" ".join(cmd)] = mode
    return found


async def _chromium_as(uid: int, gid: int, command: list[str], profile: str) -> dict:
    """Start Chromium as that user on the DevTools pipe, open a page; report the tree."""
    pipes = ChildPipes.create()
    proc = subprocess.Popen(command, user=uid, group=gid, extra_groups=[], close_fds=False,
                            preexec_fn=pipes.setup_child, start_new_session=True, cwd=profile,
                            stdin=subprocess.DEVNULL, stdout=subprocess.DEVNULL, stderr=subprocess.PIPE,
                            env={"HOME": profile, "PATH": "/usr/bin:/bin", "XDG_CONFIG_HOME": profile,
                                 "XDG_CACHE_HOME": profile})
    pipes.close_child_ends()
    transport = await PipeTransport.open(pipes.parent_in, pipes.parent_out)
    try:
        await transport.send(json.dumps({"id": 1, "method": "Target.createTarget",
                                         "params": {"url": "data:text/html,<p>hi</p>"}}))
        while "id" not in (answer := json.loads(await asyncio.wait_for(transport.recv(), 60))):
            pass
        assert "result" in answer, answer
        found: dict = {}
        for _ in range(200):  # until the page's renderer exists and has finished starting up
            # A renderer freshly forked by the zygote engages seccomp during its start-up: read
            # again until every renderer is past that (without a sandbox they never will be).
            found = _observe(proc.pid)
            renderers = [mode for cmd, mode in found["seccomp"].items() if "--type=renderer" in cmd]
            if renderers and set(renderers) == {"2"}:
                break
            await asyncio.sleep(0.05)
        return found
    finally:
        await transport.close()
        os.killpg(proc.pid, signal.SIGKILL)
        if uid != os.getuid():  # the created user runs nothing else: take whatever is left of it
            for p in psutil.process_iter():
                try:
                    if p.uids().real == uid:
                        p.kill()
                except psutil.Error:
                    pass
        proc.wait()
        proc.stderr.close()


async def test_an_ordinary_user_keeps_the_sandbox_when_the_kernel_allows_it(ordinary_user):
    uid, gid = ordinary_user
    exe = find_chromium()
    scratch = tempfile.mkdtemp(prefix="pk-sandbox-")
    try:
        os.chmod(scratch, 0o755)
        verdict = _verdict_as(uid, gid, exe, scratch)
        # An oracle independent of plugkit: util-linux's unshare, as that user.
        kernel_allows = _as_user(uid, gid, ["unshare", "--user", "--pid", "--net", "--fork",
                                            "--map-root-user", "true"]).returncode == 0
        assert verdict["on"] is (kernel_allows or chromium_rule.setuid_helper(exe) is not None), verdict
        profile = os.path.join(scratch, "profile")
        os.mkdir(profile, 0o700)
        os.chown(profile, uid, gid)
        command = argv(exe, profile, chromium_rule.Sandbox(verdict["on"], verdict["why"]))
        assert (NO_SANDBOX in command) is (not verdict["on"])
        tree = await _chromium_as(uid, gid, command, profile)
        if verdict["on"]:
            assert not any(NO_SANDBOX in a for a in tree["argv"])
            renderers = [mode for cmd, mode in tree["seccomp"].items() if "--type=renderer" in cmd]
            assert renderers and set(renderers) == {"2"}, tree["seccomp"]  # seccomp-bpf on: pages are sandboxed
        else:
            assert "kernel refuses" in verdict["why"]
    finally:
        shutil.rmtree(scratch, ignore_errors=True)


def test_root_runs_chromium_without_sandbox_and_doctor_says_why(tmp_path):
    if os.geteuid() != 0:
        pytest.skip("only root can show the root case; the ordinary-user case ran as this user")
    exe = find_chromium()
    verdict = sandbox_for(exe)
    assert not verdict.on and "running as root" in verdict.why
    assert argv(exe, str(tmp_path), verdict)[1:-1] == [*FLAGS, NO_SANDBOX]
    doctor = subprocess.run(cli_argv() + ["doctor", "--json"], capture_output=True, text=True, timeout=120,
                            env=dict(os.environ, PLUGKIT_HOME=str(tmp_path / "home")))
    row = next(r for r in json.loads(doctor.stdout) if r["check"] == "chromium sandbox")
    assert row["level"] == "warn" and row["detail"].startswith("off: running as root"), row


_SPAWNER = """
import subprocess, sys, time
sys.path.insert(0, sys.argv[1])
from runner.system.cdp_pipe import ChildPipes
pipes = ChildPipes.create()
tie = sys.argv[2] == "tied"
child = subprocess.Popen(["sleep", "300"], close_fds=False, start_new_session=True,
                         preexec_fn=pipes.setup_child if tie else None)
print(child.pid, flush=True)
time.sleep(300)
"""


def _alive(pid: int) -> bool:
    try:
        return psutil.Process(pid).status() != psutil.STATUS_ZOMBIE
    except psutil.NoSuchProcess:
        return False


@pytest.mark.parametrize("how", ["tied", "untied"])
def test_a_child_spawned_like_chromium_dies_with_its_spawner(how):
    spawner = subprocess.Popen([sys.executable, "-c", _SPAWNER, str(ROOT), how], stdout=subprocess.PIPE, text=True)
    child = int(spawner.stdout.readline())
    try:
        spawner.kill()
        spawner.wait()
        deadline = time.monotonic() + stretched(2.0)  # the control waits as long: still alive after it
        while _alive(child) and time.monotonic() < deadline:
            time.sleep(0.02)
        # Tied: SIGKILL from the kernel. Untied (the control): the orphan lives on.
        assert _alive(child) is (how == "untied")
    finally:
        if _alive(child):
            os.kill(child, signal.SIGKILL)
        spawner.stdout.close()


def test_setuid_helper_is_only_a_root_owned_setuid_file(tmp_path, monkeypatch):
    helper = Path(tmp_path, "chrome-sandbox")
    helper.write_text("#!/bin/sh\n")
    helper.chmod(0o755)
    monkeypatch.setenv("CHROME_DEVEL_SANDBOX", str(helper))
    assert chromium_rule.setuid_helper("/nonexistent/chromium") is None  # not setuid
    if os.geteuid() == 0:
        helper.chmod(0o4755)
        assert chromium_rule.setuid_helper("/nonexistent/chromium") == str(helper)
