"""A shell command line read as the flat list of simple commands it would run, for the work policy.

Not a shell: enough of one to judge a worker's command by what it names. shlex (posix,
punctuation_chars) splits the words and operators, after policy.lift's pre-pass took out what
shlex cannot see (substitutions, comments, here-doc bodies). Every pass is a linear scan;
nesting (`bash -c`, `eval`, substitutions, here-docs fed to a shell) is followed to MAX_DEPTH levels and
deeper text is returned opaque, for a name scan.

Known to be approximate, on the safe side: a quoted `;`, `|`, `(` or `>` counts as an operator
(shlex does not say which tokens were quoted), so `echo ';' rm -rf /` reads as two commands.
"""

from __future__ import annotations

import os
import re
import shlex
from dataclasses import dataclass, field

from plugkit.work.policy.lift import MARK, MARK_BASE, lift

MAX_DEPTH = 4
# Past MAX_TEXT characters a text is judged by a name scan only: shlex builds a word by
# `self.token += c`, quadratic in the word's length.
MAX_TEXT = 256 * 1024
PATH_MAX = 4096
_PUNCT = ";&|()<>\n"
# shlex hands back runs of punctuation (`);`, `>&`, `&&`); these are the operators a run splits into.
_OPS = frozenset({"&>>", "<<<", "<<-", ";;&", "&>", ">>", ">&", ">|", "<&", "<>", "<<", "&&", "||", "|&", ";;",
                  ";&", ">", "<", "|", "&", ";", "(", ")", "\n"})
WRITE_REDIRECTS = frozenset({">", ">>", ">|", "&>", "&>>", "<>", ">&"})
_ASSIGNMENT = re.compile(r"[A-Za-z_][A-Za-z0-9_]*\+?=")
RESERVED = frozenset({"!", "{", "}", "if", "then", "else", "elif", "fi", "do", "done", "while", "until", "coproc"})
# Programs that run the rest of their arguments as a command: name -> (options taking a value,
# positional words to skip before the command). `command -v` only looks a name up (see _unwrap).
WRAPPERS: dict[str, tuple[frozenset[str], int]] = {
    "env": (frozenset({"-u", "--unset", "-C", "--chdir", "-S", "--split-string"}), 0),
    "command": (frozenset(), 0), "builtin": (frozenset(), 0), "exec": (frozenset({"-a"}), 0),
    "nohup": (frozenset(), 0), "time": (frozenset({"-f", "-o"}), 0), "setsid": (frozenset(), 0),
    "nice": (frozenset({"-n", "--adjustment"}), 0), "ionice": (frozenset({"-c", "-n", "-p"}), 0),
    "timeout": (frozenset({"-s", "--signal", "-k", "--kill-after"}), 1),
    "stdbuf": (frozenset({"-i", "-o", "-e"}), 0), "chronic": (frozenset(), 0), "unbuffer": (frozenset(), 0),
    "xargs": (frozenset({"-I", "-i", "-n", "-P", "-L", "-l", "-s", "-d", "-E", "-e", "-a", "--max-args",
                         "--max-procs", "--delimiter", "--arg-file", "--replace"}), 0),
    "busybox": (frozenset(), 0), "watch": (frozenset({"-n", "--interval"}), 0),
    "flock": (frozenset({"-w", "--timeout", "-E", "--conflict-exit-code"}), 1),  # flock LOCKFILE CMD
    "chrt": (frozenset(), 1), "taskset": (frozenset(), 1),  # chrt PRIO CMD, taskset MASK CMD
    # judged by the sudo row from Cmd.wrappers; unwrapped so what they would run is judged too
    "sudo": (frozenset({"-u", "-g", "-p", "-C", "-D", "-r", "-t", "-U", "-T", "-h"}), 0),
    "doas": (frozenset({"-u", "-C"}), 0), "pkexec": (frozenset({"--user"}), 0), "run0": (frozenset({"-u"}), 0),
}
SHELLS = frozenset({"sh", "bash", "zsh", "dash", "ksh", "mksh", "ash", "fish", "yash"})
# The programs fed_by and sub_programs record: only these matter to the policy, and keeping the
# sets this small keeps a 30 000-stage pipeline linear.
FETCHERS = frozenset({"curl", "wget", "fetch"})


@dataclass(frozen=True)
class Cmd:
    """One simple command as it would run: words unquoted, wrappers (env, nohup, xargs..) removed."""

    argv: tuple[str, ...]
    cwd: str | None  # where it runs; None once a `cd` went somewhere the text cannot tell
    redirects: tuple[tuple[str, str], ...] = ()  # (operator, target word)
    fed_by: frozenset[str] = frozenset()  # FETCHERS earlier in its pipeline (with their substitutions)
    upstream: tuple[str, ...] = ()  # argv of the command piping into it (what `xargs` passes on)
    sub_programs: frozenset[str] = frozenset()  # FETCHERS inside its $(..), `..`, <(..)
    via_xargs: bool = False
    wrappers: tuple[str, ...] = ()  # the wrappers it ran behind (`sudo` is judged from here too)
    opaque: str = ""  # why this text could not be parsed ("" when it was)
    words: tuple[str, ...] = ()  # as written, wrappers included: what a reason quotes
    prog: str = field(init=False)  # the program's name: argv[0] without its directory

    def __post_init__(self) -> None:
        object.__setattr__(self, "prog", program(self.argv[0]) if self.argv else "")

    def text(self, limit: int = 80) -> str:
        s = MARK.sub("$(..)", " ".join(self.words or self.argv)).replace("\n", " ")
        return s if len(s) <= limit else s[:limit - 3] + "..."


def program(word: str) -> str:
    """`/usr/bin/rm`, `\\rm`, `'rm'` are all rm (quotes and backslashes are gone after shlex)."""
    return os.path.basename(word.rstrip("/")) or word


def dynamic(word: str) -> bool:
    """The word holds something only the running shell knows: $VAR, $(..), `..`."""
    return "$" in word or "`" in word or bool(MARK.search(word))



def _tokens(flat: str) -> list[tuple[bool, str]]:
    """(is_operator, text) pairs. Raises ValueError where shlex cannot split (a trailing `\\`)."""
    lex = shlex.shlex(flat, posix=True, punctuation_chars=_PUNCT)
    lex.whitespace = " \t\r"  # a newline separates commands: it is an operator here
    lex.whitespace_split = True
    lex.commenters = ""  # comments are gone already (_lift knows where a word starts)
    out: list[tuple[bool, str]] = []
    for tok in lex:
        if tok and all(ch in _PUNCT for ch in tok):
            i = 0
            while i < len(tok):
                size = next(s for s in (3, 2, 1) if tok[i:i + s] in _OPS or s == 1)
                out.append((True, tok[i:i + size]))
                i += size
        else:
            out.append((False, tok))
    return out


def opaque(text: str, why: str, cwd: str | None) -> Cmd:
    """Best-effort words of a text that was not parsed, for a name scan."""
    words = text.translate(str.maketrans({ch: " " for ch in _PUNCT + "'\"`\\$"})).split()
    return Cmd(tuple(words), cwd, opaque=why)


def parse(text: str, cwd: str | None, depth: int = 0) -> list[Cmd]:
    """Every simple command in `text`, nested ones included (substitutions, `sh -c`, here-docs)."""
    if depth > MAX_DEPTH:
        return [opaque(text, "nested too deeply to judge", cwd)]
    if len(text) > MAX_TEXT:
        return [opaque(text, "too long to judge", cwd)]
    flat, subs, bodies, unparsed = lift(text)
    if unparsed:
        return [opaque(text, unparsed, cwd)]
    try:
        tokens = _tokens(flat)
    except ValueError as exc:
        return [opaque(text, str(exc).lower(), cwd)]
    return _Walk(subs, bodies, depth).run(tokens, cwd)


class _Walk:
    """Groups tokens into simple commands, tracking `cd` and pipelines."""

    def __init__(self, subs: list[str], bodies: list[str], depth: int):
        self.subs, self.bodies, self.depth = subs, bodies, depth
        self.out: list[Cmd] = []
        self.heredocs = 0
        self.last_body: str | None = None  # the here-doc of the command finished last

    def run(self, tokens: list[tuple[bool, str]], cwd: str | None) -> list[Cmd]:
        words: list[str] = []
        redirects: list[tuple[str, str]] = []
        cwds: list[str | None] = []  # saved at each `(`: a subshell's cd does not leak out
        groups: list[frozenset[str]] = []  # FETCHERS run inside each open ( ) or { }
        closed: frozenset[str] = frozenset()  # ... inside the group that just closed: `(curl x) | sh`
        fed: frozenset[str] = frozenset()
        upstream: tuple[str, ...] = ()
        piped_body: str | None = None
        i = 0
        while i <= len(tokens):
            is_op, tok = tokens[i] if i < len(tokens) else (True, "")
            if is_op and tok and (tok[0] in "<>" or tok.startswith("&>")):
                target = tokens[i + 1][1] if i + 1 < len(tokens) and not tokens[i + 1][0] else ""
                if words and words[-1].isdigit() and len(words[-1]) <= 2:
                    words.pop()  # `2>` names a descriptor (shlex splits it off as a word of its own)
                redirects.append((tok, target))
                i += 2 if target else 1
                continue
            if not is_op and not (tok in ("{", "}") and not words):
                words.append(tok)
                i += 1
                continue
            cmd = self.finish(words, redirects, cwd, fed, upstream, piped_body)
            piped_body = self.last_body if tok in ("|", "|&") else None
            ran = closed
            if cmd is not None:
                if cmd.prog in ("cd", "pushd", "popd", "chdir"):
                    cwd = change_dir(cmd.argv, cwd)
                ran = ({cmd.prog} & FETCHERS) | cmd.sub_programs
                if groups:
                    groups[-1] |= ran
            closed = frozenset()
            if tok in ("|", "|&"):
                fed, upstream = fed | ran, cmd.argv if cmd is not None else ()
            else:
                fed, upstream = frozenset(), ()
            if tok in ("(", "{"):
                if tok == "(":
                    cwds.append(cwd)
                groups.append(frozenset())
            elif tok in (")", "}") and groups:
                if tok == ")" and cwds:
                    cwd = cwds.pop()
                closed = groups.pop()
                if groups:
                    groups[-1] |= closed
            words, redirects = [], []
            i += 1
        return self.out

    def finish(self, words, redirects, cwd, fed, upstream, stdin_body=None) -> Cmd | None:
        """The command `words` make, with what it runs nested appended first. stdin_body: the
        here-doc of the command piping into it (`cat <<EOF | sh`)."""
        heredocs = sum(op in ("<<", "<<-") for op, _ in redirects)
        self.heredocs += heredocs
        body = self.bodies[self.heredocs - 1] if heredocs and 0 < self.heredocs <= len(self.bodies) else None
        self.last_body = body
        argv, wrappers, via_xargs, chdirs = _unwrap(words)
        for d in chdirs:
            cwd = change_dir(("cd", d), cwd)
        subs = [ord(m.group()) - MARK_BASE for w in (*words, *(t for _, t in redirects)) for m in MARK.finditer(w)]
        sub_programs: set[str] = set()
        for k in subs:
            if k < len(self.subs):
                for inner in parse(self.subs[k], cwd, self.depth + 1):
                    self.out.append(inner)
                    sub_programs |= ({inner.prog} & FETCHERS) | inner.sub_programs
        if not argv and not redirects and not wrappers:
            return None  # `sudo -i` alone is still a command: its wrapper is what is judged
        script = None
        if argv and program(argv[0]) == "eval":  # eval joins its words with spaces and runs them as shell text
            script = " ".join(argv[1:])
        elif argv and program(argv[0]) in SHELLS:
            script = shell_script(argv)
            if script is None and all(a.startswith("-") for a in argv[1:]):  # it reads its program from stdin
                script = body if body is not None else stdin_body
        if script is not None:  # judged command by command; not a substitution (`sh -c 'curl -o f u'` is fine)
            self.out.extend(parse(script, cwd, self.depth + 1))
        cmd = Cmd(tuple(argv), cwd, tuple(redirects), fed, upstream, frozenset(sub_programs), via_xargs,
                  tuple(wrappers), words=tuple(words))
        self.out.append(cmd)
        return cmd


def shell_script(argv) -> str | None:
    """The text `sh -c TEXT` (also -lc, -ec, `-o pipefail -c`, `-c -- TEXT`) runs."""
    i = 1
    while i < len(argv):
        w = argv[i]
        if w.startswith("-") and not w.startswith("--") and "c" in w[1:]:
            rest = argv[i + 1:]
            rest = rest[1:] if rest and rest[0] == "--" else rest
            return rest[0] if rest else None
        if not w.startswith(("-", "+")):
            return None
        i += 2 if w in ("-o", "+o", "-O", "+O", "--rcfile", "--init-file") else 1
    return None


def _unwrap(words: list[str]) -> tuple[list[str], list[str], bool, list[str]]:
    """(the program and its arguments, the wrappers it ran behind, through xargs, the directories
    `env -C` changed to). Drops assignments, reserved words, wrappers with their options; `env -S
    STRING` splits STRING into words as env does. Bounded: each round removes at least one word."""
    wrappers: list[str] = []
    chdirs: list[str] = []
    via_xargs = False
    words = list(words)
    i = 0
    while i < len(words):
        w = words[i]
        if _ASSIGNMENT.match(w) or w in RESERVED:
            i += 1
            continue
        name = program(w)
        row = WRAPPERS.get(name)
        if row is None:
            break
        takes_value, positional = row
        wrappers.append(name)
        via_xargs = via_xargs or name == "xargs"
        i += 1
        while i < len(words) and words[i].startswith("-") and words[i] != "-":
            if words[i] == "--":
                i += 1
                break
            if name == "command" and words[i] in ("-v", "-V"):
                return [], wrappers, via_xargs, chdirs  # `command -v rm` looks rm up, runs nothing
            if name == "env" and words[i] in ("-S", "--split-string") and i + 1 < len(words):
                words[i:i + 2] = words[i + 1].split()
                continue
            if name == "env" and words[i] in ("-C", "--chdir") and i + 1 < len(words):
                chdirs.append(words[i + 1])
            i += 2 if words[i] in takes_value else 1
        while name == "env" and i < len(words) and _ASSIGNMENT.match(words[i]):
            i += 1
        i += positional
    return words[i:], wrappers, via_xargs, chdirs


def change_dir(argv: tuple[str, ...], cwd: str | None) -> str | None:
    """Where `cd ARG` leaves the shell; None when the text cannot tell (`cd -`, `cd $X`, `popd`)."""
    args = [a for a in argv[1:] if not (a.startswith("-") and a != "-")]
    if program(argv[0]) == "popd" or (args and (args[0] == "-" or dynamic(args[0]))):
        return None
    target = os.path.expanduser(args[0] if args else "~")
    if len(target) + len(cwd or "") > PATH_MAX:
        return None  # no such directory can exist; and a cwd growing without bound would cost quadratic time
    if target.startswith("~"):
        return None
    if not os.path.isabs(target) and cwd is None:
        return None
    return os.path.normpath(os.path.join(cwd or "/", target))
