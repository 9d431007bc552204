"""What the fake model says: a script of turns, and the requests it has received.

A turn is a tool call (a name and its arguments, already in the host's own spelling) or
the final text. Which turn a request gets is read from the request itself (how many of
the script's turns its history already holds, in order), not from a counter: hosts send
side requests (titles, routing, memory, next-speaker checks), retry, and put assistant
messages of their own in the history, and none of that may advance the script.
"""

import json
import threading
import time
from dataclasses import dataclass, field


@dataclass(frozen=True)
class Call:
    """A tool call, as the host names the tool and its arguments. A freeform tool
    (Codex's apply_patch) takes one text: args["input"]."""

    name: str
    args: dict
    freeform: bool = False


@dataclass(frozen=True)
class Say:
    text: str


@dataclass(frozen=True)
class Hang:
    """A turn the fake model never answers: the request is held open until the server stops
    (a worker stuck on its model, for the stall watchdog). It never shows in a history."""

    why: str = "hang"


@dataclass(frozen=True)
class Limit:
    """A turn the model refuses with its API's own usage-limit answer (an HTTP 429 naming the
    reset, epoch seconds, as the provider's API sends it: each API module's `limited`), so the
    host prints its usage-limit message. It never shows in a history: the script stays on it,
    and the attempt after the wait is routed to a script of its own by its prompt."""

    reset_at: float
    claim: str = "five_hour"  # which limit (Anthropic: the unified limit's representative claim)


@dataclass
class Seen:
    """One request as it arrived: the API's body, plus what the fake read from it."""

    api: str
    path: str
    body: dict
    main: bool  # it offered tools and carries the prompt: the conversation, not a side request
    said: list  # the text of each model turn in its history
    newest: str  # the text after the last assistant turn: tool results, hook context, prompts
    everything: str  # every text in the request (system prompt included)
    turn: int = 0  # how many of the script's turns its history holds
    at: float = field(default_factory=time.monotonic)
    answered_at: float = 0.0
    answer: object = None


def mark(turn: Call | Say | Hang | Limit) -> str:
    """The text that shows a turn of the script in a history (every API keeps it verbatim)."""
    if isinstance(turn, Hang):
        return f"\0never said: {turn.why}"  # no history holds it: the script stays on this turn
    if isinstance(turn, Limit):
        return "\0never said: a usage limit"
    if isinstance(turn, Say):
        return turn.text
    return next((v for v in turn.args.values() if isinstance(v, str) and v), turn.name)


PROMPT = "e2e: follow the script"


class Script:
    """Turns played in order; after the last one, "Done." (hosts may ask again)."""

    def __init__(self, turns: list, prompt: str = PROMPT) -> None:
        self.turns = list(turns)
        self.prompt = prompt
        self.seen: list[Seen] = []
        self.lock = threading.Lock()

    def played(self, said: list[str]) -> int:
        k = 0
        for text in said:
            if k < len(self.turns):
                m = mark(self.turns[k])
                # OpenAI APIs carry arguments as a JSON string: the mark arrives escaped.
                if m in text or json.dumps(m)[1:-1] in text:
                    k += 1
        return k

    def play(self, seen: Seen):
        seen.main = seen.main and self.prompt in seen.everything
        seen.turn = self.played(seen.said)
        with self.lock:
            self.seen.append(seen)
        if not seen.main:
            return None  # the API module answers side requests with plain text
        if seen.turn < len(self.turns):
            return self.turns[seen.turn]
        return Say("Done.")

    def reply_to(self, turn: int) -> Seen | None:
        """The first conversation request sent after the model's turn number `turn` (0-based)."""
        return next((s for s in self.main if s.turn == turn + 1), None)

    @property
    def main(self) -> list[Seen]:
        with self.lock:
            return [s for s in self.seen if s.main]

    def after_call(self, name: str | None = None) -> list[Seen]:
        """The main requests that came right after a tool call we sent."""
        main = self.main
        out = []
        for prev, nxt in zip(main, main[1:]):
            if isinstance(prev.answer, Call) and (name is None or prev.answer.name == name) and nxt.turn > prev.turn:
                out.append(nxt)
        return out


class Scripts:
    """Several conversations against one fake model (parallel workers): each request goes to
    the script whose prompt text it carries (a worker's prompt starts `work item <id>: ...`,
    and a script's prompt is that line); a request carrying none is a side request,
    recorded in `side` and answered as any script answers one."""

    def __init__(self, scripts: list[Script]) -> None:
        self.scripts = list(scripts)
        self.side: list[Seen] = []
        self.lock = threading.Lock()

    def play(self, seen: Seen):
        for script in self.scripts:
            if script.prompt in seen.everything:
                return script.play(seen)
        seen.main = False
        with self.lock:
            self.side.append(seen)
        return None

    def __getitem__(self, prompt_start: str) -> Script:
        return next(s for s in self.scripts if s.prompt.startswith(prompt_start))
