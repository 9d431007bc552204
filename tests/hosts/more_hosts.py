"""The hosts of issue 21 that npm has (OpenCode, Kilo, Copilot CLI), as rows like hosts.HOSTS.

Copilot CLI runs offline with a BYOK provider (COPILOT_OFFLINE, COPILOT_PROVIDER_BASE_URL:
no GitHub login, telemetry or update check); COPILOT_ALLOW_ALL=true trusts the work
directory, which is what loads its .github/hooks.

OpenCode and Kilo take an OpenAI-compatible provider from their config file (the base URL
of the fake model, a dummy key), with model fetching, auto-update and sharing off. Both
resolve the project from $PWD, not from the process's cwd: the driver sets PWD.
"""

import dataclasses
import json

from tests.hosts.hosts import KEY, Host, cache_dir
from tests.hosts.script import Call


def _provider_config(url: str, model: str = "fake-model") -> str:
    return json.dumps({
        "autoupdate": False, "share": "disabled", "model": f"fake/{model}",
        "provider": {"fake": {"npm": "@ai-sdk/openai-compatible", "name": "fake",
                              "options": {"baseURL": f"{url}/v1", "apiKey": KEY},
                              "models": {model: {"name": model, "tool_call": True}}}}})


def _quiet(prefix: str) -> dict:
    # Each start installs @opencode-ai/plugin into every config dir (the project's .opencode,
    # where plugkit's plugin is) and waits for it: ~30 s a test from the registry with each
    # test's fresh HOME. One npm cache beside the hosts, preferred offline, makes it local.
    return {f"{prefix}_DISABLE_MODELS_FETCH": "1", f"{prefix}_DISABLE_AUTOUPDATE": "1",
            f"{prefix}_DISABLE_SHARE": "1", f"{prefix}_DISABLE_LSP_DOWNLOAD": "1",
            "npm_config_cache": str(cache_dir() / "npm-cache"), "npm_config_prefer_offline": "true"}


MORE_HOSTS = {
    "copilot": Host(
        "copilot", "copilot",
        lambda prompt: ["-p", prompt, "--allow-all-tools", "--no-auto-update"],
        lambda url: {"COPILOT_OFFLINE": "true", "COPILOT_PROVIDER_BASE_URL": f"{url}/v1",
                     "COPILOT_PROVIDER_API_KEY": KEY, "COPILOT_MODEL": "gpt-4.1", "COPILOT_ALLOW_ALL": "true", "COPILOT_AUTO_UPDATE": "false"},
        lambda url, work: {},
        lambda command: Call("bash", {"command": command, "description": "run it"}),
        lambda path, content: Call("create", {"path": path, "file_text": content}),
    ),
    "opencode": Host(
        "opencode", "opencode",
        lambda prompt: ["run", prompt],
        lambda url: _quiet("OPENCODE"),
        lambda url, work: {".config/opencode/opencode.json": _provider_config(url)},
        lambda command: Call("bash", {"command": command, "description": "run it"}),
        lambda path, content: Call("write", {"filePath": path, "content": content}),
    ),
    "kilo": Host(
        "kilo", "kilo",
        lambda prompt: ["run", prompt],
        # Kilo's PostHog telemetry and session ingest fail offline; its exit then waits out a 2 s
        # PostHog shutdown timeout after retried flushes (~3 s a test). The level is read once at start.
        # Its file watcher copies the project for its editor views once connected, and its codebase
        # index starts beside it: ~5-10 s of CPU a run on a loaded machine, neither of them in the
        # path of a tool call or of plugkit's plugin.
        lambda url: {**_quiet("KILO"), "KILO_TELEMETRY_LEVEL": "off", "KILO_DISABLE_SESSION_INGEST": "1",
                     "KILO_EXPERIMENTAL_DISABLE_FILEWATCHER": "1", "KILO_DISABLE_CODEBASE_INDEXING": "1"},
        lambda url, work: {".config/kilo/kilo.json": _provider_config(url)},
        lambda command: Call("bash", {"command": command, "description": "run it"}),
        lambda path, content: Call("write", {"filePath": path, "content": content}),
    ),
}


def with_model(host: Host, model: str) -> Host:
    """OpenCode or Kilo with the fake provider's model named `model`: their tool set depends on
    it (a `gpt-` model, not gpt-4 or oss, gets apply_patch in place of edit and write)."""
    path = f".config/{host.name}/{host.name}.json"
    return dataclasses.replace(host, files=lambda url, work: {path: _provider_config(url, model)})
