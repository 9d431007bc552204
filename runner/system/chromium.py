"""Chromium as a tagged child of the runner: spawn it headless on a throwaway profile with
DevTools on a pipe (no port), notice when it dies, and kill its whole tree.

We spawn Chromium ourselves and only *connect* pyppeteer to it: pyppeteer's own launcher
polls for the DevTools URL with blocking sleeps, installs signal handlers that fight the
runner's, and downloads a browser when it finds none. Our spawn is the same tagged spawn
tasks use (own session, PLUGKIT_* tags), so the boot reaper finds a Chromium a crashed
runner left behind, and kill_tree reaches helpers that left the group (crashpad double-forks).
The spawn also sets PR_SET_PDEATHSIG (see cdp_pipe.ChildPipes.setup_child), so a runner killed
with SIGKILL takes its Chromium along at once; the boot reaper stays the fallback.
"""

from __future__ import annotations

import asyncio
import collections
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Mapping

from plugkit.chromium import ChromiumNotFound, Sandbox, find_chromium
from runner.system import kill as kill_mod
from runner.system import tags
from runner.system.cdp_pipe import ChildPipes, PipeTransport

# The task tag every process of the browser carries. Not a number, so the sweeper (which
# kills tagged processes of tasks that are no longer live) leaves the browser alone.
BROWSER_TAG = "browser"
LAUNCH_TIMEOUT_S = 20.0
NO_SANDBOX = "--no-sandbox"

# Headless, and nothing the browser would do on its own: no background fetches, updates,
# sync or first-run UI, so an idle browser never touches the network. --no-startup-window
# skips the default tab (we open pages per session), which saves a renderer start on every
# launch. Throttling of background pages is off because every session's page is a
# "background" page to a headless browser. DevTools speaks over fds 3/4 only
# (--remote-debugging-pipe): no port that another local user could connect to.
# --no-sandbox is added only when the sandbox cannot work (plugkit.chromium.sandbox_for).
FLAGS = (
    "--headless",
    "--disable-gpu",
    "--no-first-run",
    "--no-default-browser-check",
    "--no-startup-window",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
    "--disable-quic",
    "--disable-default-apps",
    "--disable-extensions",
    "--disable-breakpad",
    "--disable-crash-reporter",
    "--disable-renderer-backgrounding",
    "--disable-background-timer-throttling",
    "--disable-backgrounding-occluded-windows",
    "--mute-audio",
    "--password-store=basic",
    "--remote-debugging-pipe",
)


class LaunchError(Exception):
    """Chromium is missing or did not come up; the message is written for the agent."""


def find_executable(environ: Mapping[str, str] = os.environ) -> str:
    try:
        return find_chromium(environ)
    except ChromiumNotFound as exc:
        raise LaunchError(str(exc)) from None


def argv(executable: str, profile: str, sandbox: Sandbox) -> list[str]:
    return [executable, *FLAGS, *(() if sandbox.on else (NO_SANDBOX,)), f"--user-data-dir={profile}"]


@dataclass(frozen=True)
class ChromiumSpec:
    runner_id: str
    home: str
    kill_grace_s: float


class _Stderr(asyncio.SubprocessProtocol):
    """Keeps the tail of Chromium's stderr for crash reports, and reports its exit."""

    def __init__(self, on_exit: Callable[[], None]) -> None:
        self.tail: collections.deque[str] = collections.deque(maxlen=12)
        self._partial = b""
        self._on_exit = on_exit
        self.exited = False
        self.exit_seen = asyncio.Event()

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        self._partial += data
        *lines, self._partial = self._partial.split(b"\n")
        # Chromium writes a few lines at start-up and then only on trouble; never a flood,
        # but cap the unterminated remainder so a line without newline cannot grow forever.
        self._partial = self._partial[-4096:]
        for line in lines:
            text = line.decode("utf-8", "replace").strip()
            # Without a D-Bus (containers, servers) Chromium logs a dozen harmless dbus errors
            # at start-up; they would push the lines that explain a crash out of the tail.
            if text and ":ERROR:dbus/" not in text:
                self.tail.append(text[:300])

    def process_exited(self) -> None:
        self.exited = True
        self.exit_seen.set()
        self._on_exit()


class ChromiumProcess:
    """One running Chromium. `stopping` marks an exit we asked for (not a crash)."""

    def __init__(self, spec: ChromiumSpec, transport: asyncio.SubprocessTransport, pipes: _Stderr,
                 profile: str, created: float, cdp: PipeTransport, sandbox: Sandbox) -> None:
        self.spec, self.transport, self.pipes, self.profile = spec, transport, pipes, profile
        self.pid: int = transport.get_pid()
        self.create_time = created
        self.cdp = cdp          # DevTools: ours alone, closed with the process
        self.sandbox = sandbox  # what it was started with
        self.stopping = False

    @classmethod
    async def spawn(cls, spec: ChromiumSpec, executable: str, sandbox: Sandbox,
                    on_exit: Callable[["ChromiumProcess"], None]) -> "ChromiumProcess":
        """Started, not yet answering: the first DevTools call tells that it came up."""
        base = os.path.join(spec.home, "browser")
        os.makedirs(base, mode=0o700, exist_ok=True)
        # A fresh profile per launch: no SingletonLock left by a killed browser can refuse the
        # start, and nothing one browser stored survives into the next. mkdtemp makes it 0700.
        profile = tempfile.mkdtemp(prefix="profile-", dir=base)
        xdg = os.path.join(profile, "xdg")
        env = tags.child_env(os.environ, {
            # Chromium keeps crash reports and caches under XDG dirs, not the profile: keep
            # them in the throwaway profile instead of the user's ~/.config.
            "XDG_CONFIG_HOME": os.path.join(xdg, "config"), "XDG_CACHE_HOME": os.path.join(xdg, "cache"),
        }, {tags.RUNNER_ID: spec.runner_id, tags.HOME: tags.home_id(spec.home), tags.TASK_ID: BROWSER_TAG})
        holder: list[ChromiumProcess] = []
        loop = asyncio.get_running_loop()
        fds = ChildPipes.create()
        try:
            # The fork happens on this (the loop's) thread: PR_SET_PDEATHSIG follows the thread.
            transport, pipes = await loop.subprocess_exec(
                lambda: _Stderr(lambda: holder and on_exit(holder[0])),
                *argv(executable, profile, sandbox),
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, cwd=base, env=env, start_new_session=True,
                close_fds=False, preexec_fn=fds.setup_child)  # setup_child closes what close_fds would
        except OSError as exc:
            fds.close_all()
            shutil.rmtree(profile, ignore_errors=True)
            raise LaunchError(f"could not start Chromium ({executable}): {exc.strerror or exc}") from None
        fds.close_child_ends()  # Chromium holds its copies; its exit is then EOF on ours
        created = time.time()
        try:
            cdp = await PipeTransport.open(fds.parent_in, fds.parent_out)
        except BaseException:
            fds.close_all()
            transport.kill()
            transport.close()
            shutil.rmtree(profile, ignore_errors=True)
            raise
        proc = cls(spec, transport, pipes, profile, created, cdp, sandbox)
        holder.append(proc)
        return proc

    def alive(self) -> bool:
        if self.pipes.exited or self.transport.get_returncode() is not None:
            return False
        # Between the kernel's exit and asyncio's waitpid the process is a zombie: count it dead
        # so a task arriving right after a crash relaunches instead of talking to a corpse.
        try:
            with open(f"/proc/{self.pid}/stat", "rb") as fh:
                stat = fh.read()
        except OSError:
            return False
        return stat[stat.rfind(b")") + 2:][:1] not in (b"Z", b"X")

    async def settle_exit(self, timeout: float = 1.0) -> None:
        """A dead Chromium whose exit asyncio has not collected yet: give the child watcher a
        moment, so the exit status (signal 9, code 1, ...) can be reported."""
        try:
            await asyncio.wait_for(self.pipes.exit_seen.wait(), timeout)
        except asyncio.TimeoutError:
            pass

    def exit_text(self) -> str:
        rc = self.transport.get_returncode()
        if rc is None:
            return "stopped answering"
        return f"was killed by signal {-rc}" if rc < 0 else f"exited with code {rc}"

    def last_words(self) -> str:
        return " | ".join(self.pipes.tail) or "no output"

    async def stop(self, exit_wait_s: float = 0.0) -> None:
        """Wait up to exit_wait_s for an exit already asked for (Browser.close), then kill the
        tree: every process tagged as this runner's browser, plus group and root while the root
        lives. Off the loop: kill_tree scans /proc and sleeps through the grace.

        Once the root has exited, its group is left out: helpers it did not reap stay in the
        group as zombies until a reaper gets to them, and kill_tree would wait out the whole
        grace for a group that cannot die sooner. The tags reach every live helper anyway."""
        self.stopping = True
        if exit_wait_s and not self.pipes.exited:
            await self.settle_exit(exit_wait_s)
        root = None if self.pipes.exited else (self.pid, self.create_time)
        await asyncio.to_thread(
            kill_mod.kill_tree, pgid=None if root is None else self.pid, root=root,
            runner_id=self.spec.runner_id, task_id=BROWSER_TAG, grace_s=self.spec.kill_grace_s)
        await self.cdp.close()
        self.transport.close()
        await asyncio.to_thread(shutil.rmtree, self.profile, True)


def remove_stale_profiles(home: str) -> None:
    """Profiles of browsers a previous runner (same home) never got to clean up."""
    base = os.path.join(home, "browser")
    try:
        names = os.listdir(base)
    except OSError:
        return
    for name in names:
        if name.startswith("profile-"):
            shutil.rmtree(os.path.join(base, name), ignore_errors=True)
