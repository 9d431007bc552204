"""The four real agent hosts, one row each: where the npm package puts its binary, the model
API it speaks, how it is pointed at the fake model (base URL, dummy key, telemetry and
auto-update off, HOME a scratch directory), how it runs headless, and how its model
spells a shell call and a file write. `run` plays a Script through one host once.

The packages are installed by scripts/setup from tests/hosts/package.json into a cache
outside the repo (PLUGKIT_HOSTS_DIR, else ${XDG_CACHE_HOME:-~/.cache}/plugkit-hosts).
"""

import json
import os
import re
import signal
import subprocess
from dataclasses import dataclass
from pathlib import Path
from typing import Callable

from tests.hosts.model_server import ModelServer
from tests.hosts.script import Call, Script

PACKAGES = {"claude": "@anthropic-ai/claude-code", "qwen": "@qwen-code/qwen-code",
            "gemini": "@google/gemini-cli", "codex": "@openai/codex",
            "opencode": "opencode-ai", "kilo": "@kilocode/cli", "copilot": "@github/copilot"}
# Variables of a real setup that would point a host at a real model or account.
SCRUB = ("ANTHROPIC_", "CLAUDE_", "OPENAI_", "CODEX_", "GEMINI_", "GOOGLE_", "QWEN_", "DASHSCOPE_", "XDG_")
KEY = "sk-plugkit-e2e-dummy"
INSTALLED = {"claude-code": ".claude/settings.local.json", "qwen": ".qwen/settings.json", "gemini": ".gemini/settings.json",
             "codex": ".codex/config.toml"}


def cache_dir() -> Path:
    explicit = os.environ.get("PLUGKIT_HOSTS_DIR")
    if explicit:
        return Path(explicit)
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return Path(base) / "plugkit-hosts"


@dataclass(frozen=True)
class Host:
    name: str  # the binary under node_modules/.bin
    platform: str  # plugkit install --platform
    argv: Callable[[str], list[str]]  # prompt -> arguments after the binary
    env: Callable[[str], dict]  # fake model URL -> environment
    files: Callable[[str, str], dict]  # (fake model URL, work dir) -> {path under HOME: text}
    shell: Callable[[str], Call]
    write: Callable[[str, str], Call]  # (path relative to the work dir, content)

    @property
    def binary(self) -> Path:
        return cache_dir() / "node_modules" / ".bin" / self.name

    def missing(self) -> str | None:
        """Why this host cannot run here, in one line naming the fix; None when it can."""
        if not self.binary.exists():
            return (f"{PACKAGES[self.name]} is not installed: {self.binary} is missing; run scripts/setup "
                    f"(npm install of tests/hosts/package-lock.json into {cache_dir()}, which needs the npm registry)")
        return None


def installed(host: Host) -> Host:
    """The host, or the test fails naming the fix: a missing host is never a skip."""
    why = host.missing()
    if why:
        import pytest  # only tests get here: the bench rows report a missing host themselves

        pytest.fail(why)
    return host


ENFORCED = {".plugkit/config.toml": 'gates = "enforce"\n'}


def gated_project(base: Path, host: Host, plugkit: list[str], env: dict):
    """`project` under enforced gates with one open work item: (work, host_home, item id)."""
    work, host_home = project(base, host, plugkit, env, dict(ENFORCED), steps=(("prd", "add", "ship the feature"),))
    return work, host_home, json.loads((work / ".prd").read_text())[0]["id"]


def _codex_config(url: str, work: str) -> str:
    # gpt-5.5 is a model Codex knows: with it Codex offers apply_patch (unknown models get no
    # file tool). The project is trusted the way /trust would record it, so the project's
    # .codex/config.toml (where plugkit installs) is read at all.
    return (f'model = "gpt-5.5"\nmodel_provider = "fake"\ncheck_for_update_on_startup = false\n'
            f'[model_providers.fake]\nname = "fake"\nbase_url = "{url}/v1"\nenv_key = "PLUGKIT_E2E_KEY"\n'
            f'wire_api = "responses"\n[analytics]\nenabled = false\n[feedback]\nenabled = false\n'
            f'[projects."{work}"]\ntrust_level = "trusted"\n')


GEMINI_SETTINGS = ('{"security": {"auth": {"selectedType": "gemini-api-key"}}, "general": {"disableAutoUpdate": true,'
                   ' "enableAutoUpdateNotification": false}, "privacy": {"usageStatisticsEnabled": false},'
                   ' "telemetry": {"enabled": false}}')
QWEN_SETTINGS = ('{"privacy": {"usageStatisticsEnabled": false}, "telemetry": {"enabled": false},'
                 ' "general": {"disableAutoUpdate": true, "enableAutoUpdate": false}}')

HOSTS = {
    "claude": Host(
        "claude", "claude-code",
        # bypassPermissions: no prompt to answer headless; hooks still run before each tool.
        lambda prompt: ["-p", prompt, "--permission-mode", "bypassPermissions"],
        # IS_SANDBOX: Claude Code refuses bypassPermissions as root outside a declared sandbox.
        lambda url: {"ANTHROPIC_BASE_URL": url, "ANTHROPIC_API_KEY": KEY, "DISABLE_AUTOUPDATER": "1",
                     "DISABLE_TELEMETRY": "1", "DISABLE_ERROR_REPORTING": "1", "IS_SANDBOX": "1",
                     "CLAUDE_CODE_DISABLE_NONESSENTIAL_TRAFFIC": "1"},
        lambda url, work: {},
        lambda command: Call("Bash", {"command": command, "description": "run it"}),
        lambda path, content: Call("Write", {"file_path": path, "content": content}),
    ),
    "qwen": Host(
        "qwen", "qwen",
        lambda prompt: ["-p", prompt, "--yolo", "--auth-type", "openai"],
        # QWEN_CODE_NO_RELAUNCH: Qwen Code otherwise starts itself a second time (a node child with a
        # bigger heap) before its first request: a second load of its bundle, ~3 s of CPU a run.
        lambda url: {"OPENAI_BASE_URL": f"{url}/v1", "OPENAI_API_KEY": KEY, "OPENAI_MODEL": "qwen3-coder-plus",
                     "QWEN_CODE_NO_RELAUNCH": "true"},
        lambda url, work: {".qwen/settings.json": QWEN_SETTINGS},
        lambda command: Call("run_shell_command", {"command": command}),
        lambda path, content: Call("write_file", {"file_path": path, "content": content}),
    ),
    "gemini": Host(
        "gemini", "gemini",
        # A fixed model: with the default "auto" Gemini CLI first asks a classifier model.
        lambda prompt: ["-p", prompt, "--yolo", "-m", "gemini-2.5-flash"],
        lambda url: {"GOOGLE_GEMINI_BASE_URL": url, "GEMINI_API_KEY": KEY, "GEMINI_CLI_NO_RELAUNCH": "true",
                     "GEMINI_CLI_TRUST_WORKSPACE": "true"},
        lambda url, work: {".gemini/settings.json": GEMINI_SETTINGS},
        lambda command: Call("run_shell_command", {"command": command}),
        lambda path, content: Call("write_file", {"file_path": path, "content": content}),
    ),
    "codex": Host(
        "codex", "codex",
        # --dangerously-bypass-hook-trust: Codex runs a new hook only once a person trusted it
        # in /hooks; this is the flag its docs give automation that vetted the hooks itself.
        lambda prompt: ["exec", "--skip-git-repo-check", "--dangerously-bypass-approvals-and-sandbox",
                        "--dangerously-bypass-hook-trust", prompt],
        lambda url: {"PLUGKIT_E2E_KEY": KEY},
        lambda url, work: {".codex/config.toml": _codex_config(url, work)},
        lambda command: Call("exec_command", {"cmd": command}),
        lambda path, content: Call("apply_patch", {"input": "*** Begin Patch\n*** Add File: " + path + "\n"
                                                   + "".join(f"+{line}\n" for line in content.splitlines())
                                                   + "*** End Patch\n"}, freeform=True),
    ),
}


@dataclass
class Run:
    proc: subprocess.CompletedProcess
    script: Script
    unknown: list[str]

    def explain(self) -> str:
        """What to print when an assertion fails: the host's words and what the fake saw."""
        seen = "\n".join(f"  {s.api} {s.path} main={s.main} turn={s.turn} -> {s.answer!r}: {s.newest[-300:]!r}"
                         for s in self.script.seen)
        return (f"exit {self.proc.returncode}\nstdout: {self.proc.stdout[-1500:]}\nstderr: {self.proc.stderr[-3000:]}"
                f"\nrequests:\n{seen}\nunknown paths: {self.unknown}")


def project(base: Path, host: Host, plugkit: list[str] | None, env: dict, files: dict | None = None,
            steps: tuple = ()):
    """A scratch git repo under `base` holding `files`, with plugkit installed for the host
    (`plugkit` is the command to run; None leaves the host bare) and each of `steps` run
    through it (`prd add ...`: the runner writes .prd itself, as it keeps it), all committed
    so the gates see a clean tree; and the host's scratch HOME. Returns (work, host_home)."""
    work, host_home = base / "work", base / "host-home"
    work.mkdir()
    host_home.mkdir()

    def git(*args: str) -> None:
        subprocess.run(["git", *args], cwd=work, check=True, capture_output=True)

    git("init", "-q", "-b", "main")
    git("config", "user.email", "e2e@example.invalid")
    git("config", "user.name", "e2e tester")
    for rel, text in (files or {}).items():
        (work / rel).parent.mkdir(parents=True, exist_ok=True)
        (work / rel).write_text(text)
    for args in ((("install", "--platform", host.platform),) + tuple(steps)) if plugkit is not None else ():
        done = subprocess.run([*plugkit, *args], cwd=work, env=env, capture_output=True, text=True, timeout=60)
        if done.returncode != 0:
            raise AssertionError(f"plugkit {' '.join(args)} failed: {done.stderr}")
    if plugkit is not None:
        seed_plugin_deps(work, host_home, host.platform)
    git("add", "-A")
    git("commit", "-q", "--allow-empty", "-m", "start")
    return work, host_home


# Hosts that install their plugin SDK into the dir holding plugkit's plugin at every start and
# wait for it, and into its config dir in HOME (~10-30 s a test, each in a fresh project and
# HOME): platform -> (the project's dir, HOME's). (Kilo's own install fails offline within a
# second; it is not worth a seed.)
PLUGIN_DEPS = {"opencode": (".opencode", ".config/opencode")}
DEPS = ("node_modules", "package.json", "package-lock.json")


def seed_plugin_deps(work: Path, home: Path, platform: str) -> None:
    """What the host installs there, made once by the host itself (a scratch project, killed
    once its install is done) and hard-linked into each project; git never sees it
    (.git/info/exclude). Without a seed the host installs as it always does."""
    import filelock

    if platform not in PLUGIN_DEPS:
        return
    dirname, config = PLUGIN_DEPS[platform]
    binary = cache_dir() / "node_modules" / ".bin" / platform
    if not binary.exists():
        return
    try:  # a new version of the host makes a new seed
        version = json.loads((cache_dir() / "node_modules" / PACKAGES[platform] / "package.json").read_text())["version"]
    except (OSError, ValueError, KeyError):
        return
    template = cache_dir() / "plugin-deps" / f"{platform}-{version}"
    with filelock.FileLock(f"{template}.lock"):
        if not template.exists():
            _harvest(binary, dirname, config, template)
    for dest, seed in ((work / dirname, template / "project"), (home / config, template / "home")):
        if not (seed / "node_modules").is_dir():
            continue
        dest.mkdir(parents=True, exist_ok=True)
        if subprocess.run(["cp", "-al", str(seed / "node_modules"), str(dest)], capture_output=True).returncode:
            subprocess.run(["cp", "-a", str(seed / "node_modules"), str(dest)], check=True)
        for name in DEPS[1:]:
            if (seed / name).exists():
                (dest / name).write_bytes((seed / name).read_bytes())
    with open(work / ".git" / "info" / "exclude", "a") as fh:
        fh.write("".join(f"/{dirname}/{name}\n" for name in DEPS))


def record_hooks(work: Path, host: Host, plugkit: str, log_dir: Path) -> None:
    """Rewrite the installed hook commands to pass through a recorder that keeps each
    stdin the host sent (one file per call) before handing it to plugkit unchanged."""
    log_dir.mkdir(parents=True, exist_ok=True)
    recorder = log_dir.parent / "record-hook"
    recorder.write_text(f'#!/bin/sh\nf=$(mktemp "{log_dir}/hook.XXXXXX")\ncat > "$f"\nexec "$@" < "$f"\n')
    recorder.chmod(0o755)
    config = work / INSTALLED[host.platform]
    text = config.read_text()
    # JSON and TOML both carry the command as a quoted string: what install writes
    # (`<python> -S <...>/client/hook_entry.py hook ...`) or, before it, plugkit's path.
    ours = re.compile(r'"((?:' + re.escape(plugkit) + r'|[^"\s]+ -S [^"\s]+/client/hook_entry\.py) hook )')
    wrapped = ours.sub(lambda m: f'"{recorder} {m.group(1)}', text)
    assert wrapped != text, f"no plugkit hook command found in {config}"
    config.write_text(wrapped)


def recorded_hooks(log_dir: Path) -> list[dict]:
    """The hook stdins recorded, oldest first."""
    files = sorted(log_dir.glob("hook.*"), key=lambda f: f.stat().st_mtime_ns)
    return [json.loads(f.read_text()) for f in files if f.read_text().strip()]


def host_env(home: Path, extra: dict) -> dict:
    env = {k: v for k, v in os.environ.items() if not k.startswith(SCRUB)}
    shim = home / "shim"
    env.update(HOME=str(home), XDG_CONFIG_HOME=str(home / ".config"), XDG_CACHE_HOME=str(home / ".cache"),
               XDG_STATE_HOME=str(home / ".local/state"), XDG_DATA_HOME=str(home / ".local/share"),
               PATH=f"{shim}:{env.get('PATH', '/usr/bin:/bin')}", NO_COLOR="1", CI="1", TERM="dumb")
    env.update(extra)
    return env


def shell_spy(home: Path, marker: Path, names: tuple[str, ...]) -> None:
    """Programs named like the exec: verbs (`exec:python` is a legal file name), first on
    PATH, each appending its name to `marker`: if a host's shell ever runs an intercepted
    line, the marker says so. Login shells (Codex runs `bash -lc`) reset PATH from
    /etc/profile, so the shim is put back from ~/.profile and ~/.bashrc too."""
    shim = home / "shim"
    shim.mkdir(parents=True, exist_ok=True)
    for name in names:
        path = shim / name
        path.write_text(f"#!/bin/sh\necho \"$0 $*\" >> '{marker}'\n")
        path.chmod(0o755)
    line = f'export PATH="{shim}:$PATH"\n'
    for rc in (".profile", ".bash_profile", ".bashrc"):
        (home / rc).write_text(line)


def run(host: Host, script: Script, work: Path, home: Path, env: dict | None = None, timeout: float = 600) -> Run:
    """The host once, headless in `work`, against a fresh fake model playing `script`. `timeout` only
    ends a hung host: beside CPU hogs on a shared 2-core machine (load ~16) a Qwen Code run took over
    100 s and a Kilo start (~20 s of CPU to its first model request) over 300 s. A host past it is
    ended with its children: Kilo's `kilo` is a Node launcher running the real binary as its child,
    which outlived the launcher's kill and then failed the next test's leak check."""
    with ModelServer(script) as server:
        for rel, text in host.files(server.url, str(work)).items():
            path = home / rel
            path.parent.mkdir(parents=True, exist_ok=True)
            path.write_text(text)
        argv = [str(host.binary), *host.argv(script.prompt)]
        proc = subprocess.Popen(argv, cwd=work, stdin=subprocess.DEVNULL, stdout=subprocess.PIPE, stderr=subprocess.PIPE,
                                env=host_env(home, {**host.env(server.url), **(env or {})}), text=True,
                                start_new_session=True)
        try:
            out, err = proc.communicate(timeout=timeout)
        except subprocess.TimeoutExpired:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.communicate()
            raise
        return Run(subprocess.CompletedProcess(argv, proc.returncode, out, err), script, list(server.unknown))


def _harvest(binary: Path, dirname: str, config: str, template: Path) -> None:
    """Run the host once in a scratch project with a plugin dir until its installs land there
    and in HOME's config dir, then keep what it installed as the seeds. An empty template dir
    records that none came, so no later test waits for it again."""
    import shutil
    import tempfile
    import time

    template.mkdir(parents=True)
    with tempfile.TemporaryDirectory() as scratch:
        work, home = Path(scratch) / "work", Path(scratch) / "home"
        (work / dirname / "plugins").mkdir(parents=True)
        (work / dirname / "plugins" / "noop.js").write_text("export const Noop = async () => ({})\n")
        home.mkdir()
        subprocess.run(["git", "init", "-q"], cwd=work, check=True)
        env = {**os.environ, "HOME": str(home), "PWD": str(work), "npm_config_cache": str(cache_dir() / "npm-cache")}
        proc = subprocess.Popen([str(binary), "run", "hi"], cwd=work, env=env, stdout=subprocess.DEVNULL,
                                stderr=subprocess.DEVNULL, start_new_session=True)
        places = {"project": work / dirname, "home": home / config}
        try:
            deadline = time.monotonic() + 120
            while time.monotonic() < deadline and proc.poll() is None and \
                    not all((d / "package-lock.json").exists() for d in places.values()):
                time.sleep(0.2)
            time.sleep(0.5)  # the lock is written last
        finally:
            try:
                os.killpg(proc.pid, 9)
            except ProcessLookupError:
                pass
            proc.wait()
        for name, d in places.items():
            if (d / "package-lock.json").exists() and (d / "node_modules").is_dir():
                (template / name).mkdir()
                for dep in DEPS:
                    shutil.move(str(d / dep), str(template / name / dep))
