"""exec:browser's line commands as data: usage and summary per command.

Shared by the runner (which parses and runs them) and the client (which prints
`plugkit exec:browser --help` without a runner). Standard library only.
"""

WAIT_DEFAULT_MS = 30_000
SCREENSHOT_DIR = ".plugkit/evidence/screenshots"

# name -> (usage, summary); the runner pairs each row with its parser and handler.
COMMANDS = {
    "goto": ("goto URL", "open URL and wait for its load event; prints the HTTP status and final URL"),
    "reload": ("reload", "reload the page and wait for its load event"),
    "screenshot": ("screenshot [PATH]", "PNG of the viewport, written inside the session's directory "
                   f"(default {SCREENSHOT_DIR}/task_N.png); prints the path"),
    "viewport": ("viewport W H", "resize the page's viewport to W x H pixels"),
    "wait": ("wait SELECTOR [MS]", f"wait until SELECTOR matches an element (default {WAIT_DEFAULT_MS} ms)"),
    "click": ("click SELECTOR", "click the first element matching SELECTOR"),
    "type": ("type SELECTOR TEXT", "focus SELECTOR and type TEXT ('quote' a selector with spaces)"),
    "close": ("close", "close this session's page (must be the last line)"),
}


def commands_text() -> str:
    width = max(len(usage) for usage, _ in COMMANDS.values())
    rows = "\n".join(f"  {usage.ljust(width)}  {summary}" for usage, summary in COMMANDS.values())
    return f"Commands (one per line, before the JavaScript):\n{rows}"


USAGE = f"""usage: plugkit exec:browser [--session ID] [--cwd D] [--timeout S] [--wait S] [--json] [--file F | CODE | -]

Run JavaScript in this session's private page of the runner's headless Chromium.
CODE is zero or more command lines, then JavaScript to the end. The JavaScript runs as
the body of an async function: `return x` prints x as JSON, top-level `await` works.

{commands_text()}

Output: stdout gets one line per command, then the JSON of the returned value.
stderr gets the page's [console.*], [pageerror] and [dialog.*] lines, and a thrown error's stack.
Each session keeps its own cookies and storage between tasks; `close` or session end drops them.
A bare host:port after goto means http://. No stdin or env.
Environment: PLUGKIT_CHROMIUM (default: chromium on PATH), PLUGKIT_BROWSER_IDLE_S (default 300).
Examples:
  plugkit exec:browser $'goto localhost:3000\\nreturn document.title'
  plugkit exec:browser $'viewport 1280 720\\nscreenshot'"""
