"""Run code as a local process: temp file (or a project dir), optional compile step, tagged spawn, live output.

What lands in the temp dir and which argv each step runs comes from the row's
project builder (plugkit/languages/projects.py) as a Layout; nothing here knows a language.

Every task root starts in its own session (start_new_session): one killpg then
reaches the whole tree, and a Ctrl-C in the runner's terminal never reaches it.
Where the kernel allows, every task also gets its own cgroup v2 (runner/system/cgroups.py),
joined before the task runs any code: what leaves the group and drops its tags
(`setsid env -i ...`) still dies with the task, and its CPU time is counted.
"""

import asyncio
import fcntl
import os
import shutil
import tempfile
import time
from dataclasses import dataclass
from typing import Mapping, Optional

from plugkit import languages
from plugkit.languages import projects as lang_projects
from plugkit.languages.model import Layout
from plugkit.refusals import Invalid, Unavailable
from runner.executors import boxed, task_files
from runner.executors.base import ExecSpec, Outcome, Prepared, SessionKey, TaskIO
from runner.system import cgroups, clone_spawn, cloned_process
from runner.system import kill as kill_mod
from runner.system import tags

STREAMS = {1: "stdout", 2: "stderr"}
# How long a finished root's pipes may stay open (held by a grandchild) before we stop reading.
DRAIN_S = 0.25


@dataclass(frozen=True)
class ProcessSpec:
    runner_id: str
    home: str
    kill_grace_s: float
    tmp_root: str
    python: Optional[str] = None  # PLUGKIT_PYTHON, from the runner's config
    cgroup_set: Optional[cgroups.TaskCgroups] = None


class _Pipes(asyncio.SubprocessProtocol):
    """Feeds both output pipes into the task's output as bytes arrive (no deadlock: asyncio
    reads stdout and stderr independently, so a child filling stderr first never blocks)."""

    def __init__(self, io: TaskIO) -> None:
        self.io = io
        self.transport: Optional[asyncio.SubprocessTransport] = None
        self._narrow = {1, 2}  # pipes still at the kernel's default size
        self.exited = asyncio.get_running_loop().create_future()
        self.drained = asyncio.Event()
        self._open = {1, 2}

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self.transport = transport  # type: ignore[assignment]

    def pipe_data_received(self, fd: int, data: bytes) -> None:
        if len(data) >= 1 << 16 and fd in self._narrow and self.transport is not None:
            self._narrow.discard(fd)  # a full default pipe: this task is chatty
            _widen_pipe(self.transport, fd)
        self.io.write(STREAMS[fd], data)

    def pipe_connection_lost(self, fd: int, exc: Optional[Exception]) -> None:
        if fd in self._open:
            self._open.discard(fd)
            self.io.flush(STREAMS[fd])
            if not self._open:
                self.drained.set()

    def process_exited(self) -> None:
        if not self.exited.done():
            self.exited.set_result(None)


@dataclass(frozen=True)
class Final:
    """A task's last step: the paths removed when it ends (its code file or dir, its sandbox's
    dir) and the layout's leftover globs."""

    cleanup: tuple[str, ...]
    leftovers: tuple[str, ...]


class ProcessRun:
    """The Execution for one running step: input, kill, and (its last step) hand_over."""

    def hand_over(self):  # -> Optional[HandedProcess]: its fds made inheritable, or None
        from runner.executors.process_adopt import hand_over

        return hand_over(self)

    def __init__(self, task_id: int, spec: ProcessSpec, transport: asyncio.SubprocessTransport,
                 pipes: _Pipes, cgroup: Optional[str] = None, final: Optional[Final] = None) -> None:
        self.task_id, self.spec, self.transport, self.pipes = task_id, spec, transport, pipes
        self.cgroup = cgroup
        # The task's last step, and what goes when it ends: only such a step can be handed to
        # the runner's next image (a compile step would need the step after it run from there).
        self.final = final
        self.pid = transport.get_pid()
        # The pid-reuse guard compares against the kernel's start time with a
        # tolerance far above the microseconds since fork; asking psutil here
        # would cost a /proc read on every spawn.
        self.create_time = time.time()

    def input_open(self) -> bool:
        stdin = self.transport.get_pipe_transport(0)
        return stdin is not None and not stdin.is_closing()

    def stdin_inode(self) -> Optional[int]:
        """The pipe the task reads as stdin while we hold it open (how a reader blocked on it is found)."""
        stdin = self.transport.get_pipe_transport(0)
        raw = stdin.get_extra_info("pipe") if stdin is not None and not stdin.is_closing() else None
        try:
            return os.fstat(raw.fileno()).st_ino if raw is not None else None
        except OSError:
            return None

    def input_buffered(self) -> int:
        """Bytes written for the task that its stdin pipe has not taken yet (it was full): the
        task blocked on the pipe meanwhile is about to be fed, not waiting for input."""
        stdin = self.transport.get_pipe_transport(0)
        return stdin.get_write_buffer_size() if stdin is not None else 0

    def write(self, data: bytes) -> None:
        stdin = self.transport.get_pipe_transport(0)
        if stdin is not None and not stdin.is_closing():
            stdin.write(data)

    def close_input(self) -> None:
        stdin = self.transport.get_pipe_transport(0)
        if stdin is not None:
            stdin.close()

    async def kill(self) -> None:
        # psutil scans and sleeps: off the event loop, so other sessions keep being served.
        await asyncio.to_thread(
            kill_mod.kill_tree, pgid=self.pid, root=(self.pid, self.create_time),
            runner_id=self.spec.runner_id, task_id=str(self.task_id), grace_s=self.spec.kill_grace_s)
        if self.cgroup is not None:
            # After the TERM grace: whatever is left in the cgroup (tagged or not) is KILLed at once.
            await asyncio.to_thread(cgroups.kill_cgroup, self.cgroup)


class ProcessExecutor:
    """Every language row of plugkit/languages.py; the fallback executor."""

    name = "process"

    def __init__(self, spec: ProcessSpec) -> None:
        self.spec = spec
        # "tags": no cgroup per task, so the sweeper holds adopted orphans to their tasks instead.
        self.isolation = "cgroup2" if spec.cgroup_set is not None else "tags"
        os.makedirs(spec.tmp_root, mode=0o700, exist_ok=True)
        # The runner's environment does not change while it runs: filter it once.
        self._base_env = tags.child_env(os.environ, None, {})
        self.inherited_dirs: list[str] = []  # earlier images' task dirs, where handed-over tasks' files are

    def task_dirs(self) -> list[str]:
        """Where this executor's tasks' files are: handed on by an in-place restart, removed at close."""
        return [self.spec.tmp_root, *self.inherited_dirs]

    def inherit_dirs(self, dirs: list[str]) -> None:
        self.inherited_dirs = [d for d in dirs if d != self.spec.tmp_root and task_files.ours(d)]

    def claims(self, lang: str) -> bool:
        return True

    async def prepare(self, p: ExecSpec) -> Prepared:
        if p.docker is not None and not os.path.exists(p.docker):
            # Its attempt ended (teardown closed the proxy and removed what it made): a task now
            # would find no engine, or, were the path reused, another attempt's.
            raise Unavailable("plugkit work: this attempt has ended: its container engine proxy (work_docker) "
                              "is closed and its containers are removed; nothing more runs for it")
        try:
            # The session cwd finds the workspace's .plugkit/lang plugins (read fresh on every exec).
            language = languages.lookup(p.lang, workspace=p.cwd, root=p.workspace)
            if any(r.min_version for r in language.runners):
                # Version probes spawn `prog --version` (once per binary): off the loop.
                plan = await asyncio.to_thread(languages.resolve, language, None, self.spec.python, p.environ)
            else:  # a PATH lookup (the caller's PATH when it sent its environment): no thread hop
                plan = languages.resolve(language, python=self.spec.python, environ=p.environ)
            # Before any task exists, so code the builder refuses (a bad cargo-dep line) starts nothing.
            layout = lang_projects.layout(plan, p.code, lang_projects.ProjectContext(self.spec.home, p.cwd))
            return Prepared(language.name, layout)
        except (languages.UnknownLanguage, languages.PluginError, languages.ProjectError) as exc:
            raise Invalid(str(exc)) from None
        except languages.LanguageError as exc:
            raise Unavailable(str(exc)) from None

    async def run(self, io: TaskIO, prepared: Prepared, spec: ExecSpec) -> Outcome:
        layout: Layout = prepared.payload
        # work_docker: the runner names the proxy (a worker's exec: tasks, its work_setup), never the wire
        box = boxed.Box(boxed.private_dir(self.spec.tmp_root, io.id), spec.offline, spec.docker) if spec.sandbox else None
        try:
            rc, compiled = await self.run_steps(io, layout, spec.stdin, spec.env, spec.environ, box)
        finally:
            if box is not None:
                shutil.rmtree(box.dir, ignore_errors=True)
        return outcome_of(io.id, rc, compiled, layout.compile_hint)

    async def adopt(self, io: TaskIO, handed) -> Outcome:
        """A task the runner's previous image handed over (a HandedProcess): run on to its end."""
        from runner.executors.process_adopt import run_adopted

        return outcome_of(io.id, await run_adopted(self, io, handed), True)

    async def end_session(self, key: SessionKey) -> None:
        return None  # a process task holds nothing beyond its tree, which the manager kills

    async def close(self) -> None:
        for folder in self.task_dirs():
            shutil.rmtree(folder, ignore_errors=True)
        if self.spec.cgroup_set is not None:
            await asyncio.to_thread(self.spec.cgroup_set.close)

    def snapshot(self) -> dict:
        cg = self.spec.cgroup_set
        return {"tmp_root": self.spec.tmp_root, "isolation": cg.mode.detail if cg else "tags",
                "spawn": clone_spawn.HELPER.detail if cg else "plain spawn (no cgroup to join)"}

    async def run_steps(self, io: TaskIO, layout: Layout, stdin: Optional[str],
                        env: Optional[Mapping[str, str]],
                        environ: Optional[Mapping[str, str]] = None,
                        box: Optional[boxed.Box] = None) -> tuple[int, bool]:
        """Compile (if the layout has a step) and run; returns (returncode, compiled_ok).
        Both steps are tagged with the task id, so a kill or timeout reaches whichever
        runs. The temp file or dir, and the layout's leftovers, go on every exit path.
        `box`: run both in the sandbox (runner/executors/boxed.py), their files in that dir."""
        tmp_root = box.dir if box is not None else self.spec.tmp_root
        workdir = file = None
        cgroup = self._make_cgroup(io)
        try:
            if layout.in_dir:
                workdir = tempfile.mkdtemp(prefix=f"task_{io.id}-", dir=tmp_root)
                file = task_files.write_tree(workdir, layout, f"task_{io.id}{layout.suffix}")
            else:
                file = task_files.write_code(tmp_root, f"task_{io.id}", layout.suffix, layout.source.encode())
            out_dir = workdir or tmp_root
            names = dict(layout.values, file=file, out=os.path.join(out_dir, f"task_{io.id}.out"), dir=out_dir)
            child_env = self.child_env(io, env, layout.env, environ)
            step = (lambda argv: argv) if box is None else (
                lambda argv: box.wrap(argv, io.session.root, io.cwd, self.spec.home, child_env))
            if layout.compile:
                code_rc = await self._step(io, step(languages.render(layout.compile, **names)), child_env, None, cgroup)
                if code_rc != 0:
                    if code_rc > 0 and layout.compile_hint:  # not for a kill: the hint would mislead
                        io.write_text("info", f"[plugkit] {layout.compile_hint}\n")
                    return code_rc, False
            final = Final(tuple(p for p in (workdir or file, box.dir if box is not None else None) if p),
                          tuple(layout.leftovers))
            return await self._step(io, step(languages.render(layout.run, **names)), child_env, stdin, cgroup,
                                    final), True
        finally:
            if cgroup is not None:
                await self.end_cgroup(io, cgroup)
            if workdir:
                shutil.rmtree(workdir, ignore_errors=True)
            elif file:
                os.unlink(file)
            task_files.remove_leftovers(layout.leftovers)

    async def run_argv(self, io: TaskIO, argv: list[str], stdin: Optional[str],
                       env: Optional[Mapping[str, str]], extra_env: Optional[Mapping[str, str]] = None,
                       environ: Optional[Mapping[str, str]] = None) -> int:
        """One argv as the whole task (no code file, no compile): its own cgroup, the tags,
        live output, kill; returns its return code. `env` is the caller's (filtered like any
        task's); `extra_env` is the executor's own, set after the tags, so it may carry what
        child_env scrubs from callers (see executors/worker.py for the one that does)."""
        cgroup = self._make_cgroup(io)
        try:
            child_env = self.child_env(io, env, environ=environ)  # environ: start from it, not the runner's
            child_env.update(extra_env or {})
            return await self._step(io, argv, child_env, stdin, cgroup)
        finally:
            if cgroup is not None:
                await self.end_cgroup(io, cgroup)

    def child_env(self, io: TaskIO, env: Optional[Mapping[str, str]], layout_env: tuple = (),
                  environ: Optional[Mapping[str, str]] = None) -> dict[str, str]:
        """The caller's environment (else the runner's), filtered; a row's own variables; the
        caller's extra `env`; then the tags. Filtered: plugkit's secrets (the token, its home)
        and identity tags never pass from either, whatever the caller sent."""
        # PWD too: the caller's names where it was, the task runs in its own cwd.
        base = {**tags.child_env(environ, None, {}), "PWD": io.cwd} if environ is not None else self._base_env
        base = {**base, **dict(layout_env)} if layout_env else base
        return tags.child_env(base, env, {
            tags.RUNNER_ID: self.spec.runner_id, tags.TASK_ID: str(io.id),
            tags.SESSION_ID: io.session.session_id, tags.HOME: tags.home_id(self.spec.home)})

    def _make_cgroup(self, io: TaskIO) -> Optional[str]:
        cg = self.spec.cgroup_set
        if cg is None:
            return None
        try:
            path = cg.create(io.id)
        except OSError:
            return None  # the tags and the sweeper still reach it
        io.measured_by(lambda: cg.usage(path))
        return path

    async def end_cgroup(self, io: TaskIO, path: str) -> None:
        """Whatever the task left in its cgroup dies, its usage is kept, the cgroup goes: on the
        loop when empty (a thread hop cost more, issue 31), else waiting for the killed in a thread."""
        cg: cgroups.TaskCgroups = self.spec.cgroup_set  # type: ignore[assignment]  # set: it made the cgroup
        final = cg.end_now(path) or await asyncio.to_thread(cg.end, path)
        io.measured_by(lambda: final)

    async def _step(self, io: TaskIO, argv: list[str], env: dict[str, str], stdin: Optional[str],
                    cgroup: Optional[str] = None, final: Optional[Final] = None) -> int:
        transport, pipes = await cloned_process.spawn_task(lambda: _Pipes(io), argv, env, io.cwd, cgroup,
                                                           self.spec.home)
        run = ProcessRun(io.id, self.spec, transport, pipes, cgroup, final)
        try:
            io.started(run)
            if stdin is not None:
                run.write(stdin.encode())
                run.close_input()
            await pipes.exited
            # Output written just before exit may still be in the pipes; a grandchild
            # holding them open must not keep the task "running" forever.
            try:
                async with asyncio.timeout(DRAIN_S):
                    await pipes.drained.wait()
            except TimeoutError:
                pass
            _end_group(run.pid)
            return transport.get_returncode()  # type: ignore[return-value]
        finally:
            transport.close()


def outcome_of(task_id: int, rc: int, compiled: bool, compile_hint: Optional[str] = None) -> Outcome:
    """A process's return code as an Outcome (negative codes are signals, as asyncio reports them)."""
    sig = -rc if rc < 0 else None
    code = rc if rc >= 0 else None
    if not compiled:
        message = f"task_{task_id} failed to compile; the compiler's output is in stderr"
        return Outcome("failed", "compile_error", exit_code=code, signal=sig,
                       message=f"{message}. {compile_hint}" if compile_hint else message)
    if rc == 0:
        return Outcome("completed", "exit_zero", exit_code=0)
    if sig:
        return Outcome("failed", "signal", signal=sig, message=f"task_{task_id} was ended by signal {sig}")
    return Outcome("failed", "exit_nonzero", exit_code=rc, message=f"task_{task_id} exited with code {rc}")


def make(ctx) -> ProcessExecutor:
    return ProcessExecutor(ProcessSpec(runner_id=ctx.runner_id, home=ctx.home,
                                       kill_grace_s=ctx.limits.kill_grace_s,
                                       tmp_root=task_files.task_dir(), python=ctx.python,
                                       cgroup_set=_task_cgroups(ctx.home, ctx.runner_id) if ctx.cgroups else None))


def _task_cgroups(home: str, runner_id: str) -> Optional[cgroups.TaskCgroups]:
    mode = cgroups.detect_cached()
    if mode.root is None:
        return None
    try:
        return cgroups.TaskCgroups(mode, home, runner_id)
    except OSError:
        return None


F_SETPIPE_SZ = 1031  # Linux fcntl: resize a pipe's kernel buffer
PIPE_BYTES = 1 << 20


def _widen_pipe(transport: asyncio.SubprocessTransport, fd: int) -> None:
    """A 64 KiB pipe costs the event loop a wake-up per 64 KiB of output; at 1 MiB a chatty
    task costs a sixteenth of that (100 MB streams about twice as fast). Only for a task
    that fills its pipe: the resize is not free, and most tasks print little."""
    pipe = transport.get_pipe_transport(fd)
    raw = pipe.get_extra_info("pipe") if pipe is not None else None
    if raw is not None:
        try:
            fcntl.fcntl(raw.fileno(), F_SETPIPE_SZ, PIPE_BYTES)
        except OSError:  # over /proc/sys/fs/pipe-max-size for an unprivileged user, or not Linux
            pass


def _end_group(pgid: int) -> None:
    """The root is gone; whatever it left in its group goes too (no leaked background jobs).
    Escapees that left the group are caught by the manager's periodic tagged sweep."""
    try:
        os.killpg(pgid, 9)
    except (ProcessLookupError, PermissionError):
        pass
