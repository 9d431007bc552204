"""A scripted coding agent for `plugkit work --worker command` tests: reads the prompt on
stdin, finds its item on the first line (`work item <id>:`), and does what the plan file
($PLUGKIT_E2E_WORK_PLAN, JSON {item: [step, ...]}) says for that item, one attempt after
another ({item: [[steps of try 1], [steps of try 2]]} when the tries differ).

Steps: ["write", path, text], ["commit", message], ["say", text], ["sleep", s],
["hang"], ["exit", code], ["hook", tool_name, tool_input] (a PreToolUse through the real
`plugkit hook`, its answer printed), ["cli", verb, ...] (a plugkit verb, its answer printed),
["shell", line], ["beat", n, every_s] (n quiet hook calls), ["prompt"] (prints the prompt it got),
["stop"] (a Stop through the real `plugkit hook`, its answer printed), ["limit", host, s] (the
host's usage-limit message, as that host prints it, with a reset s seconds ahead; s null: none),
["otlp", tokens] (an OTLP/JSON metrics export of that many input tokens, shaped as Claude Code's,
to $OTEL_EXPORTER_OTLP_ENDPOINT with $OTEL_EXPORTER_OTLP_HEADERS: what a host does with the
variables the runner set), ["until", path] (waits for a file the test writes into its worktree).
"""

import json
import os
import re
import subprocess
import sys
import time
import urllib.error
import urllib.request

CLI = [sys.executable, "-m", "client.cli"]
# What each host prints when its model's limit stops it (plugkit/work/limits.py quotes the sources).
LIMITS = {
    "gemini": lambda s: ("[API Error: You exceeded your current quota, please check your plan and billing "
                         f"details. Please retry in {s}s. (Status: RESOURCE_EXHAUSTED)]"),
    "claude-code": lambda s: f"Claude AI usage limit reached|{int(time.time() + s)}",
    "gemini-daily": lambda s: "You have exhausted your daily quota on this model.",
}


def hook(tool_name: str, tool_input: dict, event: str = "PreToolUse") -> str:
    data = {"session_id": "worker-host", "cwd": os.getcwd(), "hook_event_name": event,
            "tool_name": tool_name, "tool_input": tool_input}
    done = subprocess.run(CLI + ["hook", event, "--platform", "claude-code"], input=json.dumps(data),
                          capture_output=True, text=True, timeout=60)
    return done.stdout.strip() or f"(nothing; stderr: {done.stderr.strip()[-300:]})"


def otlp(tokens: int) -> str:
    """One delta export of claude_code.token.usage, as the JS OTLP JSON serializer builds it."""
    point = {"attributes": [{"key": "model", "value": {"stringValue": "scripted-model"}},
                            {"key": "type", "value": {"stringValue": "input"}}],
             "startTimeUnixNano": str(time.time_ns()), "timeUnixNano": str(time.time_ns()), "asDouble": tokens}
    metric = {"name": "claude_code.token.usage", "unit": "tokens",
              "sum": {"aggregationTemporality": 1, "isMonotonic": True, "dataPoints": [point]}}
    body = {"resourceMetrics": [{"resource": {"attributes": []},
                                 "scopeMetrics": [{"scope": {"name": "agent"}, "metrics": [metric]}]}]}
    headers = dict(h.split("=", 1) for h in os.environ.get("OTEL_EXPORTER_OTLP_HEADERS", "").split(",") if "=" in h)
    request = urllib.request.Request(os.environ["OTEL_EXPORTER_OTLP_ENDPOINT"] + "/v1/metrics",
                                     json.dumps(body).encode(), {"Content-Type": "application/json", **headers})
    try:
        with urllib.request.urlopen(request, timeout=30) as answer:
            return f"{answer.status} {answer.read().decode()}"
    except urllib.error.HTTPError as exc:
        return f"{exc.code} {exc.read().decode()}"


def main() -> int:
    prompt = sys.stdin.read()
    item = re.search(r"work item ([A-Za-z0-9_.-]+):", prompt.splitlines()[0]).group(1)
    with open(os.environ["PLUGKIT_E2E_WORK_PLAN"]) as fh:
        plan = json.load(fh)[item]
    if plan and isinstance(plan[0][0], list):  # one list of steps per attempt
        # The attempt is the last field of the worker's session id (plugkit-work-RUN-ITEM-N):
        # a sandboxed worker cannot keep a counter outside its worktree, which each try gets fresh.
        n = int(os.environ["PLUGKIT_SESSION_ID"].rsplit("-", 1)[1]) - 1
        plan = plan[min(n, len(plan) - 1)]
    print(f"agent on {item}", flush=True)
    for step in plan:
        kind, args = step[0], step[1:]
        if kind == "write":
            os.makedirs(os.path.dirname(args[0]) or ".", exist_ok=True)
            with open(args[0], "w") as fh:
                fh.write(args[1])
        elif kind == "commit":
            subprocess.run(["git", "add", "-A"], check=True)
            subprocess.run(["git", "commit", "-qm", args[0]], check=True)
        elif kind == "prompt":
            print(prompt, flush=True)
        elif kind == "say":
            print(args[0], flush=True)
        elif kind == "sleep":
            time.sleep(args[0])
        elif kind == "hang":
            time.sleep(3600)
        elif kind == "exit":
            return args[0]
        elif kind == "hook":
            print("hook answer:", hook(args[0], args[1]), flush=True)
        elif kind == "cli":  # a plugkit verb typed by the worker, its answer printed; the worker
            # drops its task tag first (the client's own refusal), so the runner must judge it
            env = {k: v for k, v in os.environ.items() if k != "PLUGKIT_TASK_ID"}
            done = subprocess.run(CLI + list(args), capture_output=True, text=True, timeout=60, env=env)
            print(f"cli rc={done.returncode}: {done.stdout.strip()} {done.stderr.strip()}", flush=True)
        elif kind == "shell":  # a shell line, as an agent's Bash tool would run it
            subprocess.run(args[0], shell=True, check=False)
        elif kind == "limit":
            print(LIMITS[args[0]](args[1]), file=sys.stderr, flush=True)
        elif kind == "stop":
            print("stop answer:", hook("", {}, "Stop"), flush=True)
        elif kind == "otlp":
            print("otlp answer:", otlp(args[0]), flush=True)
        elif kind == "until":
            while not os.path.exists(args[0]):
                time.sleep(0.05)
        elif kind == "beat":
            for _ in range(args[0]):
                hook("Bash", {"command": "true"})
                time.sleep(args[1])
    return 0


if __name__ == "__main__":
    sys.exit(main())
