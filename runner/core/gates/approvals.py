"""Who may approve a critical item: a person, at their own terminal or in the host's prompt.

approval.grant (and every other act reserved to a person: `gate confirm-config`, changing
an item's check) is judged by its caller's process ancestry and terminal
(runner.system.peers), never by what the call says about itself:
- a plugkit task anywhere above the caller (or an orphan the runner adopted): refused;
  a task is the agent's code, whatever it unset or claims;
- an agent host above it (Claude Code, Codex, ...): refused, unless the host asked the
  person first: the PreToolUse hook answered `ask` for exactly this command on a
  platform that shows a permission prompt, the shell the host started runs that very
  command, and it comes within PROMPT_TTL_S; such an approval is recorded as given in
  the host's prompt, and the prompt is used up;
- neither: a person's terminal, which must be there, in a process whose environment
  (and its ancestors') carries no host's marker (plugkit.hosts): the caller has a controlling terminal
  whose session holds no agent host, task or adopted orphan. Proven, not assumed: "no
  agent found" is not a person (a `setsid` child reparented to init finds no agent above
  it, and has no terminal). Recorded with the OS user, terminal and pid.
A caller the runner cannot identify is refused: it cannot tell a person from a task.
"""

import time
from dataclasses import dataclass
from typing import Callable, Optional

from plugkit.hosts import HOSTS
from runner.system.peers import Caller

PROMPT_TTL_S = 120.0
ASK_PLATFORMS = frozenset(h.platform for h in HOSTS if h.asks_person)  # hosts whose hooks can ask the person
MAX_PROMPTS = 64


@dataclass(frozen=True)
class Prompt:
    root: str
    item_id: Optional[str]
    command: str  # as the hook saw it, quotes removed
    at: float


@dataclass(frozen=True)
class Judgement:
    ok: bool
    channel: str  # "terminal" | "host_prompt" | "" when refused
    reason: str


def _plain(text: str) -> str:
    return " ".join(text.translate(str.maketrans("", "", "'\"\\")).split())


class ApprovalDesk:
    def __init__(self, clock: Callable[[], float] = time.monotonic) -> None:
        self.clock = clock
        self._prompts: list[Prompt] = []

    def asked(self, root: str, platform: str, command: str, item_id: Optional[str]) -> None:
        """The hook sent an approve attempt to the host's permission prompt."""
        if platform not in ASK_PLATFORMS:
            return  # the adapter turns `ask` into a deny there: nothing will run
        self._prompts = (self._prompts + [Prompt(root, item_id, _plain(command), self.clock())])[-MAX_PROMPTS:]

    def judge(self, root: str, item_id: str, caller: Optional[Caller]) -> Judgement:
        if caller is None:
            return Judgement(False, "", "the runner cannot tell which process is asking, so it cannot tell a "
                                        "person from the agent")
        if caller.task is not None:
            return Judgement(False, "", f"asked from inside a plugkit task ({caller.task}): a task is the "
                                        "agent's code")
        if caller.agent is None:
            return self._terminal(caller)
        shell = _plain(" ".join(caller.shell_cmdline))
        now = self.clock()
        for prompt in self._prompts:
            if (prompt.root == root and prompt.item_id == item_id and now - prompt.at <= PROMPT_TTL_S
                    and prompt.command and prompt.command in shell):
                self._prompts.remove(prompt)  # one prompt, one approval
                return Judgement(True, "host_prompt", "")
        return Judgement(False, "", f"asked from inside {caller.agent}'s process tree without the person "
                                    "confirming it in the host's permission prompt")

    @staticmethod
    def _terminal(caller: Caller) -> Judgement:
        if caller.marked is not None:
            return Judgement(False, "", f"its environment was set by an agent host ({caller.marked}): a shell "
                                        "the agent started, detached from it")
        if not caller.ctty:
            return Judgement(False, "", "it has no terminal of its own (detached with setsid, or run by a tool "
                                        "through a pipe): a person types at a terminal")
        if caller.tty_holder is not None:
            return Judgement(False, "", f"its terminal is held by {caller.tty_holder}, not by a person alone")
        return Judgement(True, "terminal", "")

    def snapshot(self) -> dict:
        return {"prompts_waiting": len(self._prompts)}
