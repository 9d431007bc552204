"""Every lifecycle event `plugkit install` registers for a host is an event the installed host
knows (issue 30.3: Codex 0.169 had SessionEnd, and plugkit did not register it; the reverse, a
registered event the host never fires, would be a hook that silently never runs). Read from
the installed bundles: the JS hosts name each event as a string literal; Codex has one source
file per event, `hooks/src/events/<event>.rs`, named in its binary. Copilot CLI's JS is not
greppable in its single executable: its events are proven by tests/hosts/test_more_hosts.py
and test_session_end_hosts.py instead."""

import re

import pytest

from client.hooks.install import TARGETS
from tests.hosts.hosts import cache_dir

pytestmark = pytest.mark.e2e

BUNDLES = {
    "claude-code": "@anthropic-ai/claude-code-linux-x64/claude",
    "qwen": "@qwen-code/qwen-code/cli.js",
    "gemini": "@google/gemini-cli/bundle/*.js",
    "codex": "@openai/codex-linux-x64/vendor/*/bin/codex",
}


def spelled(platform: str, event: str) -> bytes:
    if platform == "codex":  # PreToolUse -> hooks/src/events/pre_tool_use.rs
        return b"hooks/src/events/" + re.sub(r"(?<!^)(?=[A-Z])", "_", event).lower().encode() + b".rs"
    return b'"' + event.encode() + b'"'


@pytest.mark.parametrize("platform", sorted(BUNDLES))
def test_every_registered_event_is_one_the_installed_host_knows(platform):
    files = sorted(cache_dir().joinpath("node_modules").glob(BUNDLES[platform]))
    assert files, f"no bundle for {platform} at {BUNDLES[platform]} under {cache_dir()}; run scripts/setup"
    wanted = {event: spelled(platform, event) for event, _, _ in TARGETS[platform].events}
    found = set()
    for path in files:
        data = path.read_bytes()
        found |= {event for event, text in wanted.items() if text in data}
    assert found == set(wanted), f"{platform}: registered but unknown to the installed host: {set(wanted) - found}"


@pytest.mark.parametrize("platform", sorted(BUNDLES))
def test_a_host_that_has_a_session_end_gets_it_registered(platform):
    # On main Codex 0.169 had hooks/src/events/session_end.rs and no SessionEnd was installed.
    files = sorted(cache_dir().joinpath("node_modules").glob(BUNDLES[platform]))
    has = any(spelled(platform, "SessionEnd") in path.read_bytes() for path in files)
    assert has, f"{platform} no longer names SessionEnd: see tests/unit/test_hooks_session_end.py"
    assert "SessionEnd" in {event for event, _, _ in TARGETS[platform].events}


def test_codex_spelling_is_its_event_file():
    assert spelled("codex", "UserPromptSubmit") == b"hooks/src/events/user_prompt_submit.rs"
