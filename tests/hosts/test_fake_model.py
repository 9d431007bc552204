"""The fake model itself: the turn a request gets comes from its history, never from a
counter, so side requests and host-made assistant messages cannot advance the script."""

import json
import urllib.request

from tests.hosts.api_gemini import _fill
from tests.hosts.model_server import ModelServer
from tests.hosts.script import PROMPT, Call, Say, Script

TOOLS = [{"type": "function", "function": {"name": "run_shell_command", "parameters": {}}}]


def post(url: str, body: dict) -> dict:
    req = urllib.request.Request(url, json.dumps(body).encode(), {"Content-Type": "application/json"})
    with urllib.request.urlopen(req, timeout=10) as resp:
        return json.loads(resp.read())


def test_turns_follow_the_history_not_the_request_count():
    script = Script([Call("run_shell_command", {"command": "exec:python\nprint(6*7)"}), Say("Done here.")])
    with ModelServer(script) as server:
        url = f"{server.url}/v1/chat/completions"
        first = post(url, {"messages": [{"role": "assistant", "content": "Got it."},  # the host's own
                                        {"role": "user", "content": PROMPT}], "tools": TOOLS})
        call = first["choices"][0]["message"]["tool_calls"][0]["function"]
        assert call["name"] == "run_shell_command" and json.loads(call["arguments"])["command"].startswith("exec:")
        side = post(url, {"messages": [{"role": "user", "content": "title this chat"}]})  # no tools: a side request
        assert side["choices"][0]["message"]["content"] == "ok"
        # The call comes back JSON-encoded in the history, as the OpenAI APIs carry it.
        history = [{"role": "user", "content": PROMPT},
                   {"role": "assistant", "tool_calls": [{"function": call}]},
                   {"role": "tool", "content": "42"}]
        second = post(url, {"messages": history, "tools": TOOLS})
        assert second["choices"][0]["message"]["content"] == "Done here."
    assert [s.turn for s in script.main] == [0, 1] and script.reply_to(0).newest == "tool\n42"
    assert len(script.seen) == 3 and not script.seen[1].main


def test_side_requests_wanting_json_get_their_schema_filled():
    schema = {"type": "object", "properties": {"next_speaker": {"type": "string", "enum": ["model", "user"]},
                                               "complexity_score": {"type": "integer", "minimum": 1}}}
    assert _fill(schema) == {"next_speaker": "user", "complexity_score": 1}
