"""The shape of one agent host's row in plugkit/hosts.py: every fact a plugkit table reads about
a host (hooks, tools, markers, worker), typed and frozen, each one a required keyword.

Plain slotted classes rather than dataclasses: the hook's hot path imports the host table on
every tool call of the agent, and `import dataclasses` alone costs ~5 ms there. A row written
without a fact fails where it is written (a TypeError naming the fact), not later in the one
reader that needed it; `_optional` names the facts that have a default, and why.
"""

WRITE, SHELL = "write", "shell"
GATED = (SHELL, WRITE)  # a PreToolUse matcher over a host's shell and write tools


class _Frozen:
    __slots__: tuple[str, ...] = ()
    _optional: dict[str, object] = {}

    def __init__(self, **facts: object) -> None:
        cls = type(self)
        try:
            for name in cls.__slots__:
                object.__setattr__(self, name, facts[name] if name in facts else cls._optional[name])
        except KeyError:
            missing = [n for n in cls.__slots__ if n not in facts and n not in cls._optional]
            raise TypeError(f"{cls.__name__} row{_named(facts)} lacks {', '.join(missing)}") from None
        if len(facts) > len(cls.__slots__) or not facts.keys() <= set(cls.__slots__):
            unknown = sorted(set(facts) - set(cls.__slots__))
            raise TypeError(f"{cls.__name__} row{_named(facts)} has no fact {', '.join(unknown)}")

    def __setattr__(self, name: str, value: object) -> None:
        raise AttributeError(f"{type(self).__name__} rows are frozen")

    def __repr__(self) -> str:
        return f"{type(self).__name__}({', '.join(f'{n}={getattr(self, n)!r}' for n in self.__slots__)})"


def _named(facts: dict) -> str:
    name = facts.get("platform") or facts.get("program") or facts.get("path")
    return f" {name}" if name else ""


class Tools(_Frozen):
    """Which of the host's tools write files and which run a command line, as it registers them."""

    __slots__ = ("source", "write", "shell", "other", "hooked_as")
    _optional = {"hooked_as": {}}  # most hosts hand their hooks the registered name
    source: str  # "<npm package> <version>" the names were read from; "" when none could be
    write: str  # space-separated names
    shell: dict[str, str]  # name -> the tool_input key of its command line
    other: str  # every other tool it registers (tests/hosts fails on a name no role lists)
    hooked_as: dict[str, str]  # registered name -> the name its hooks carry


class Hooks(_Frozen):
    """Where and how `plugkit install` writes the host's hooks."""

    __slots__ = ("fmt", "path", "events", "reads", "personal", "user_path", "timeout_scale", "unit",
                 "named", "note", "keys", "extra")
    _optional = {"personal": "", "user_path": "", "timeout_scale": 1, "unit": "seconds", "named": False,
                 "note": "", "keys": (), "extra": {}}
    fmt: str  # json | toml | flat | plugin (client/hooks/install*.py's mergers)
    path: str  # the project's shared file
    events: tuple[tuple[str, tuple[str, ...] | None, int], ...]  # (event, matcher roles, timeout s)
    reads: tuple[str, ...]  # every workspace path it reads hooks from: a worker never changes them
    personal: str  # its per-person project file (not committed), where --project writes if set
    user_path: str  # where --user writes under ~ when not `path`
    timeout_scale: int  # 1000: it reads timeouts in milliseconds
    unit: str
    named: bool  # entries carry a name and description (Gemini CLI)
    note: str  # one line printed after an install
    keys: tuple[str, ...]  # flat: (command key, timeout key)
    extra: dict[str, str]  # flat: constant keys of each entry

    @property
    def project_path(self) -> str:
        """Where `--project` (the default) writes, relative to the workspace."""
        return self.personal or self.path


class Worker(_Frozen):
    """How `plugkit work` runs the host headless on one item, and what a sandbox gives it."""

    __slots__ = ("program", "argv", "done", "model_env", "home_state", "env")
    _optional = {"env": ()}
    program: str  # looked up on PATH
    argv: tuple[str, ...]  # after the program; PROMPT and the words in workers.EXPANSIONS are filled in
    done: str  # one line: how it says it is done (`plugkit work --help`)
    model_env: tuple[str, ...]  # prefixes of the variables it reads to reach its model (its scope)
    home_state: tuple[str, ...]  # its state under $HOME (a trailing / is a dir): a private copy
    env: tuple[tuple[str, str], ...]  # set over the caller's for an unattended run; never auth


PROMPT = "{prompt}"


class AgentHost(_Frozen):
    """One agent host: how people and processes show it, its hooks, its tools, its worker."""

    __slots__ = ("platform", "label", "adapter", "programs", "packages", "entries", "markers", "tools",
                 "hooks", "prompt_starts", "asks_person", "worker")
    _optional = {"prompt_starts": False, "asks_person": False}
    platform: str  # plugkit install --platform
    label: str
    adapter: str  # the module that reads its events and renders its answers (client/hooks/)
    programs: tuple[str, ...]  # names on PATH and in /proc/PID/comm or argv[0]
    packages: tuple[str, ...]  # command-line fragments of the installed package
    entries: tuple[str, ...]  # workspace files or directories that show it is configured
    markers: tuple[str, ...]  # environment variables its tools' shells carry
    tools: Tools
    hooks: Hooks
    prompt_starts: bool  # fires no SessionStart headless: its first prompt may start the runner
    asks_person: bool  # its hooks can put a question to the person (an `ask` is not a deny)
    worker: Worker | None  # None: `plugkit work` cannot run it
