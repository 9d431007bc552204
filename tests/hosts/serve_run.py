"""OpenCode and Kilo driven as their own server (`serve`) with `run --attach` as the client, the
plugin's answers counted. They hold the Stop gate in the plugin's session.idle event, and a plain
`run` exits on that same idle, before a continuation could be sent: served, the server goes on
after the client's exit and the turned-back stop reaches the model."""

import json
import socket
import subprocess
import time
from pathlib import Path

from tests.hosts.hosts import Host, Run, host_env
from tests.hosts.model_server import ModelServer
from tests.hosts.script import Script

SERVED = ("opencode", "kilo")


def wait_for(condition, what: str, limit_s: float = 600.0) -> None:
    """Until condition() holds; a host that never gets there fails naming what it waited for (the
    limit only ends a hung host: a Kilo start took 80-300 s to its first model request under load)."""
    deadline = time.monotonic() + limit_s
    while not condition():
        if time.monotonic() > deadline:
            raise AssertionError(f"waited {limit_s:g}s for {what}")
        time.sleep(0.2)


class HookCounter:
    """A wrapper in front of the plugkit command the project's relay plugin calls: each call's
    command line is appended to a file once it returned."""

    def __init__(self, host: Host, work: Path, base: Path) -> None:
        self.answered = base / "answered"
        wrapper = base / "count-hooks"
        wrapper.write_text(f'#!/bin/sh\n"$@"\nrc=$?\necho "$*" >> "{self.answered}"\nexit $rc\n')
        wrapper.chmod(0o755)
        plugin = work / f".{host.name}" / "plugins" / "plugkit.js"
        relay = plugin.read_text()
        assert "const PLUGKIT = [" in relay, f"no PLUGKIT command list in {plugin}"
        plugin.write_text(relay.replace("const PLUGKIT = [", f"const PLUGKIT = [{json.dumps(str(wrapper))}, ", 1))

    def stops(self) -> int:
        """The Stop hooks the plugin called (the word after `hook`)."""
        lines = self.answered.read_text().splitlines() if self.answered.exists() else []
        return sum(" hook Stop " in f"{line} " for line in lines)


def served_run(host: Host, script: Script, work: Path, home: Path, log: Path, counter: HookCounter,
               env: dict | None = None) -> Run:
    """The host served, one `run --attach` playing `script`; returns once the client has exited
    and the plugin answered two Stops (the one turned back and the one let through)."""
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with ModelServer(script) as server:
        for rel, text in host.files(server.url, str(work)).items():
            (home / rel).parent.mkdir(parents=True, exist_ok=True)
            (home / rel).write_text(text)
        full = host_env(home, {**host.env(server.url), **(env or {})})
        with open(log, "w") as out:
            serve = subprocess.Popen([str(host.binary), "serve", "--port", str(port), "--hostname", "127.0.0.1"],
                                     cwd=work, env=full, stdout=out, stderr=subprocess.STDOUT, stdin=subprocess.DEVNULL)
        try:
            wait_for(lambda: "listening" in log.read_text(), f"{host.name} serve to listen")
            argv = [str(host.binary), "run", "--attach", f"http://127.0.0.1:{port}", script.prompt]
            done = subprocess.run(argv, cwd=work, env=full, capture_output=True, text=True, timeout=600,
                                  stdin=subprocess.DEVNULL)
            result = Run(subprocess.CompletedProcess(argv, done.returncode, done.stdout,
                                                     done.stderr + f"\nserve: {log.read_text()[-1500:]}"),
                         script, list(server.unknown))
            if done.returncode == 0:
                wait_for(lambda: counter.stops() >= 2, f"two Stop answers from the plugin; {result.explain()}")
            return result
        finally:
            serve.terminate()
            serve.wait(30)
