"""Chromium as a tagged child of the runner: find it, spawn it headless on a throwaway profile,
learn its DevTools URL from stderr, notice when it dies, and kill its whole tree.

We spawn Chromium ourselves and only *connect* pyppeteer to it: pyppeteer's own launcher
polls for the DevTools URL with blocking sleeps, installs signal handlers that fight the
runner's, and downloads a browser when it finds none. Our spawn is the same tagged spawn
tasks use (own session, PLUGKIT_* tags), so the boot reaper finds a Chromium a crashed
runner left behind, and kill_tree reaches helpers that left the group (crashpad double-forks).
"""

from __future__ import annotations

import asyncio
import collections
import os
import re
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Callable, Mapping, Optional

from runner.system import kill as kill_mod
from runner.system import tags

DEFAULT_CHROMIUM = "/usr/bin/chromium"
INSTALL_HINT = ("install it with `apt-get install -y chromium`, or set PLUGKIT_CHROMIUM to a "
                "Chromium/Chrome binary")
# The task tag every process of the browser carries. Not a number, so the sweeper (which
# kills tagged processes of tasks that are no longer live) leaves the browser alone.
BROWSER_TAG = "browser"
LAUNCH_TIMEOUT_S = 20.0
_DEVTOOLS = re.compile(rb"DevTools listening on (ws://\S+)")

# Headless, and nothing the browser would do on its own: no background fetches, updates,
# sync or first-run UI, so an idle browser never touches the network. Root needs
# --no-sandbox. --no-startup-window skips the default tab (we open pages per session),
# which saves a renderer start on every launch. Throttling of background pages is off
# because every session's page is a "background" page to a headless browser.
FLAGS = (
    "--headless",
    "--no-sandbox",
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
    "--remote-debugging-address=127.0.0.1",
    "--remote-debugging-port=0",
)


class LaunchError(Exception):
    """Chromium is missing or did not come up; the message is written for the agent."""


def find_executable(environ: Mapping[str, str] = os.environ) -> str:
    path = environ.get("PLUGKIT_CHROMIUM") or DEFAULT_CHROMIUM
    resolved = shutil.which(path) if os.sep not in path else path
    if not resolved or not os.path.isfile(resolved) or not os.access(resolved, os.X_OK):
        raise LaunchError(f"Chromium not found at {path}; {INSTALL_HINT}")
    return resolved


@dataclass(frozen=True)
class ChromiumSpec:
    runner_id: str
    home: str
    kill_grace_s: float


class _Pipes(asyncio.SubprocessProtocol):
    """Reads stderr for the DevTools line, keeps its tail for crash reports, and reports exit."""

    def __init__(self, on_exit: Callable[[], None]) -> None:
        loop = asyncio.get_running_loop()
        self.ready: asyncio.Future[str] = loop.create_future()
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
            if not self.ready.done():
                found = _DEVTOOLS.search(line)
                if found:
                    self.ready.set_result(found.group(1).decode())
                    continue
            text = line.decode("utf-8", "replace").strip()
            # Without a D-Bus (containers, servers) Chromium logs a dozen harmless dbus errors
            # at start-up; they would push the lines that explain a crash out of the tail.
            if text and ":ERROR:dbus/" not in text:
                self.tail.append(text[:300])

    def process_exited(self) -> None:
        self.exited = True
        self.exit_seen.set()
        if not self.ready.done():
            self.ready.set_exception(LaunchError("Chromium exited during start-up"))
        self._on_exit()


class ChromiumProcess:
    """One running Chromium. `stopping` marks an exit we asked for (not a crash)."""

    def __init__(self, spec: ChromiumSpec, transport: asyncio.SubprocessTransport, pipes: _Pipes,
                 profile: str, created: float) -> None:
        self.spec, self.transport, self.pipes, self.profile = spec, transport, pipes, profile
        self.pid: int = transport.get_pid()
        self.create_time = created
        self.ws_url: Optional[str] = None
        self.stopping = False

    @classmethod
    async def spawn(cls, spec: ChromiumSpec, executable: str, on_exit: Callable[["ChromiumProcess"], None]
                    ) -> "ChromiumProcess":
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
        try:
            transport, pipes = await loop.subprocess_exec(
                lambda: _Pipes(lambda: holder and on_exit(holder[0])),
                executable, *FLAGS, f"--user-data-dir={profile}",
                stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.DEVNULL,
                stderr=asyncio.subprocess.PIPE, cwd=base, env=env, start_new_session=True)
        except OSError as exc:
            shutil.rmtree(profile, ignore_errors=True)
            raise LaunchError(f"could not start Chromium ({executable}): {exc.strerror or exc}") from None
        proc = cls(spec, transport, pipes, profile, time.time())
        holder.append(proc)
        try:
            proc.ws_url = await asyncio.wait_for(asyncio.shield(pipes.ready), LAUNCH_TIMEOUT_S)
        except (LaunchError, asyncio.TimeoutError) as exc:
            why = "did not open its DevTools port" if isinstance(exc, asyncio.TimeoutError) else str(exc)
            proc.stopping = True
            await proc.stop()
            raise LaunchError(f"Chromium ({executable}) {why}: {proc.last_words()}") from None
        except BaseException:  # cancelled while starting: leave nothing running
            proc.stopping = True
            await asyncio.shield(proc.stop())
            raise
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
