"""Each row of plugkit/work/workers.py started the way `plugkit work` starts it, with the real
host: a scratch repo, a worktree on plugkit/<item>, `plugkit install` with the row's
install_args in it, then the row's command_line run as a lang "worker" task of a real
runner (composed in-process and serving the test's home on its port, so the worker's
hooks reach it as they would reach the daemon), against the scripted fake model.

The fake model, routed on the prompt's first line (`work item <id>: ...`), writes a file
with the host's write tool, commits it with its shell tool, and says done. Nothing the
row leaves out (auth type, model, provider) is given on the command line: the host's HOME
holds it, as a person's own config would, including what makes it hardest for the row
(Gemini's folder trust on; Codex trusting the main repo, whose committed .codex/ holds
plugkit's hooks too: each hook must still run once).
A host whose package is missing fails, naming the fix.
"""

import asyncio
import dataclasses
import json
import os
import subprocess
import time
from pathlib import Path

import pytest

from plugkit import paths
from plugkit.lifecycle.prd import Item
from plugkit.work import prompt, workers
from runner.boot import config as boot_config
from runner.boot.compose import compose
from runner.executors.base import ExecSpec
from runner.http import conn_guard
from runner.http.keys import CONTEXT
from runner.system import socket_owner, worker_objects, worker_refs
from tests.hosts.hosts import HOSTS, Host, cache_dir, host_env, installed, project
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Hang, Say, Script, Scripts
from tests.support.runner_home import bound_socket, cli_argv
from tests.support.load import stretched

pytestmark = pytest.mark.e2e
ROWS = {"claude-code": "claude", "codex": "codex", "qwen": "qwen", "gemini": "gemini"}
CONTEXT_LINE = "plugkit: to run code"
TOKEN = "worker-rows-test-token-0123456789"


def user_config(name: str, url: str, repo: Path) -> dict:
    """What a person's own HOME would hold for this host: the model provider, auth, model.
    Codex's trusts the main repo, whose committed .codex/config.toml holds plugkit's hooks
    too: the worst case for running each hook twice."""
    if name == "codex":
        return {".codex/config.toml": (
            f'model = "gpt-5.5"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{url}/v1"\nenv_key = "PLUGKIT_E2E_KEY"\n'
            f'wire_api = "responses"\n[analytics]\nenabled = false\n[feedback]\nenabled = false\n'
            f'[projects.{json.dumps(str(repo))}]\ntrust_level = "trusted"\n')}
    if name == "qwen":
        return {".qwen/settings.json": json.dumps({
            "security": {"auth": {"selectedType": "openai"}}, "privacy": {"usageStatisticsEnabled": False},
            "telemetry": {"enabled": False}, "general": {"disableAutoUpdate": True, "enableAutoUpdate": False}})}
    if name == "gemini":
        return {".gemini/settings.json": json.dumps({
            # Folder trust on, and this worktree never trusted: the row's --skip-trust must do it.
            "security": {"auth": {"selectedType": "gemini-api-key"}, "folderTrust": {"enabled": True}},
            "model": {"name": "gemini-2.5-flash"},
            "general": {"disableAutoUpdate": True, "enableAutoUpdateNotification": False},
            "privacy": {"usageStatisticsEnabled": False}, "telemetry": {"enabled": False}})}
    return {}


@pytest.fixture
async def runner(home):
    """A real runner (the composition root's app) serving the home fixture's home and port,
    with the discovery files a client reads: the worker's hooks find it like the daemon."""
    config = dataclasses.replace(boot_config.load(), home=str(home.path), port=home.port)
    paths.ensure_home(config.home)
    # A runner id of its own: tasks are tagged with it, and the sweep of a runner sharing it (this
    # file split over two test processes) would take them for its own escapees.
    app = compose(config, TOKEN, f"workerrows-{os.getpid()}")
    app_runner = await conn_guard.serve(app, bound_socket(home.port), conn_guard.make_guard(socket_owner.owner_uid))
    ctx = app[CONTEXT]
    # Which sessions this runner's SessionStart registered (a host ends its session before it
    # exits, so the registry alone forgets them): the real method still runs.
    # (Kept on the task manager: the runner's Context is frozen after composition.)
    ctx.tasks.hook_sessions = []
    register = ctx.tasks.open_session
    ctx.tasks.open_session = lambda sid, cwd: (ctx.tasks.hook_sessions.append((sid, os.path.realpath(cwd))),
                                               register(sid, cwd))[1]
    paths.write_private(paths.token_file(config.home), TOKEN)
    paths.write_private(paths.port_file(config.home), json.dumps({"port": home.port, "pid": ctx.runtime.pid}))
    try:
        yield ctx
    finally:
        for path in (paths.port_file(config.home), paths.token_file(config.home)):
            os.unlink(path)
        await app_runner.cleanup()


def git(cwd: Path, *args: str) -> str:
    return subprocess.run(["git", *args], cwd=cwd, check=True, capture_output=True, text=True).stdout


def host_of(name: str) -> Host:
    return installed(HOSTS[ROWS[name]])


@dataclasses.dataclass
class Worker:
    item: str
    worktree: Path
    host_home: Path
    prompt: str

    @property
    def first_line(self) -> str:
        return self.prompt.splitlines()[0]


async def make_worker(base: Path, repo: Path, name: str, item: str, home) -> Worker:
    """What the engine does before a worker starts: worktree on plugkit/<item>, hooks installed."""
    worktree = base / f"wt-{item}"
    host_home = base / f"host-home-{item}"
    host_home.mkdir()
    # Blocking calls off the loop: the runner serves on this loop (install may talk to it).
    await asyncio.to_thread(git, repo, "worktree", "add", "-q", "-b", f"plugkit/{item}", str(worktree))
    # Its own object dir, shown at .git/objects in the sandbox (the real store is read-only there).
    await asyncio.to_thread(worker_objects.prepare, str(worktree), str(repo / ".git"))
    # And its own refs dir, holding its branch (shown over refs/heads/plugkit/, which it cannot write).
    await asyncio.to_thread(worker_refs.prepare, str(worktree), str(repo / ".git"), f"plugkit/{item}")
    args = workers.install_args(workers.row(name))
    done = await asyncio.to_thread(subprocess.run, [*cli_argv(), *args], cwd=worktree, env=home.env,
                                   capture_output=True, text=True, timeout=60)
    assert done.returncode == 0, done.stderr
    assert (worktree / workers.row(name).hooks_file).exists()
    text = prompt.build(Item(id=item, subject=f"add {item}.txt"), None, f"plugkit/{item}", str(worktree))
    return Worker(item, worktree, host_home, text)


def turns(host: Host, w: Worker) -> list:
    return [host.write(str(w.worktree / f"{w.item}.txt"), f"{w.item} was here\n"),
            host.shell(f"git add -A && git commit -qm {w.item}"), Say(f"{w.item} is done.")]


async def start(ctx, name: str, host: Host, w: Worker, url: str, timeout_s: float = 110):
    """The row's command line as a worker task, in the caller's (the host's) environment."""
    for rel, text in user_config(ROWS[name], url, w.worktree.parent / "work").items():
        (w.host_home / rel).parent.mkdir(parents=True, exist_ok=True)
        (w.host_home / rel).write_text(text)
    env = host_env(w.host_home, host.env(url))
    env["PATH"] = f"{cache_dir() / 'node_modules' / '.bin'}:{env['PATH']}"
    env.pop("PLUGKIT_HOME", None)  # the executor itself must point the hooks at this runner
    env.pop("GEMINI_CLI_TRUST_WORKSPACE", None)  # trust comes from the row, not the test's env
    env = workers.environment(workers.row(name), env)  # as the engine builds it
    argv, stdin = workers.command_line(workers.row(name), w.prompt, str(w.worktree), None)
    return await ctx.tasks.exec(ExecSpec(session_id=f"worker-{w.item}", cwd=str(w.worktree), lang="worker",
                                         code=json.dumps(argv), stdin=stdin, env=env, timeout_s=timeout_s))


def explain(task, script: Script | Scripts, server: ModelServer) -> str:
    out = task.buffer.text(task.buffer.start, task.buffer.end)
    scripts = script.scripts if isinstance(script, Scripts) else [script]
    seen = "\n".join(f"  [{s.prompt[:20]}] {x.api} {x.path} main={x.main} turn={x.turn} -> {x.answer!r}: "
                     f"{x.newest[-200:]!r}" for s in scripts for x in s.seen)
    return (f"task {task.state}/{task.reason} exit {task.exit_code}\noutput: {out[-3000:]}\nrequests:\n{seen}"
            f"\nunknown paths: {server.unknown}")


def check_committed(ctx, repo: Path, w: Worker, script: Script, why: str) -> None:
    # What the engine does once a worker ends: its objects, checked, into the real store.
    worker_objects.take(str(w.worktree), str(repo / ".git"))
    found = worker_refs.read(str(w.worktree), f"plugkit/{w.item}")  # and its branch's tip, a hash only
    assert found.tip and not (found.links or found.strays), (found, why)
    git(repo, "update-ref", "--no-deref", f"refs/heads/plugkit/{w.item}", found.tip)
    assert f"{w.item} was here" in git(repo, "show", f"plugkit/{w.item}:{w.item}.txt"), why
    assert git(repo, "log", "-1", "--format=%s", f"plugkit/{w.item}").strip() == w.item, why
    first = script.main[0] if script.main else None
    # The prompt's first line arrived (the script only counts requests carrying it) and the
    # hooks' SessionStart context reached the model.
    assert first is not None and w.first_line in first.everything, why
    assert any(CONTEXT_LINE in s.everything for s in script.main), why
    # ... from THIS runner: its SessionStart registered the host's own session in the worktree.
    hooked = [sid for sid, cwd in ctx.tasks.hook_sessions if cwd == os.path.realpath(w.worktree)]
    assert hooked and f"worker-{w.item}" not in hooked, why
    # Once each: the workspace's committed hooks and the worktree's install never both run.
    assert len(hooked) == len(set(hooked)), (hooked, why)


@pytest.mark.parametrize("name", list(ROWS))
async def test_each_row_starts_its_host_as_a_worker_that_commits_on_its_branch(tmp_path, home, runner, name):
    host = host_of(name)
    # The workspace has plugkit's hooks for this host committed, as a team using plugkit has.
    repo, _ = await asyncio.to_thread(project, tmp_path, host, cli_argv(), home.env)
    w = await make_worker(tmp_path, repo, name, "w1", home)
    script = Script(turns(host, w), prompt=w.first_line)
    with ModelServer(script) as server:
        task = await start(runner, name, host, w, server.url)
        await runner.tasks.wait_done(task, 115)
        why = explain(task, script, server)
    assert (task.state, task.exit_code) == ("completed", 0), why
    check_committed(runner, repo, w, script, why)
    assert git(repo, "rev-parse", "--abbrev-ref", "HEAD").strip() == "main", why  # the repo was not switched


async def test_parallel_workers_share_one_fake_model_and_a_hung_one_is_ended(tmp_path, home, runner):
    """Three claude-code workers at once against one model: two commit; the third's model never
    answers (Hang), so it is still running when they are done, until the runner ends it."""
    name = "claude-code"
    host = host_of(name)
    # The workspace has plugkit's hooks for this host committed, as a team using plugkit has.
    repo, _ = await asyncio.to_thread(project, tmp_path, host, cli_argv(), home.env)
    ws = [await make_worker(tmp_path, repo, name, item, home) for item in ("w1", "w2", "w3")]
    scripts = Scripts([Script(turns(host, w), prompt=w.first_line) for w in ws[:2]]
                      + [Script([Hang("w3 stalls")], prompt=ws[2].first_line)])
    with ModelServer(scripts) as server:
        tasks = [await start(runner, name, host, w, server.url) for w in ws]
        await asyncio.gather(*(runner.tasks.wait_done(t, 115) for t in tasks[:2]))
        hung = tasks[2]
        # Beside CPU hogs the third host may still be starting when the other two are done: wait for its
        # first request to reach the model (where it hangs) rather than assume it came first.
        until = time.monotonic() + stretched(60)
        while not (hung.finished or scripts[ws[2].first_line].main) and time.monotonic() < until:
            await asyncio.sleep(0.1)
        why = "\n\n".join(explain(t, scripts, server) for t in tasks)
        assert not hung.finished and scripts[ws[2].first_line].main, why
        await runner.tasks.end(hung, "timed_out", "stalled")
        await runner.tasks.wait_done(hung, 30)
    for t, w in zip(tasks[:2], ws[:2]):
        assert (t.state, t.exit_code) == ("completed", 0), why
        check_committed(runner, repo, w, scripts[w.first_line], why)
    assert (hung.state, hung.reason) == ("timed_out", "stalled"), why
    assert git(repo, "rev-parse", "plugkit/w3") == git(repo, "rev-parse", "main"), why  # nothing committed
