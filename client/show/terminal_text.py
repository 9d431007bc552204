"""Text from someone else (a sandboxed worker's output, its commit subjects and file names, the
runner's log of them) made safe for the person's terminal: a terminal obeys control sequences
in what it prints, and some act outside the screen (OSC 52 sets the clipboard, a title or a
DCS query can be answered into the shell's input). Every escape sequence, C1 control and C0
control but tab, newline and carriage return goes; at a terminal a colour (SGR) may stay.
Stateless per chunk: an ESC is never passed on, so a sequence split between two writes cannot
form again. `re` is imported on the first text holding a control character only."""

import sys

_PATTERN = None
# OSC / DCS / SOS / PM / APC strings (to their terminator, or the end of the text), CSI sequences,
# any other ESC with the character after it, a lone ESC, C1 controls, C0 controls but \t \n \r.
_SEQUENCES = (r"\x1b[\]PX^_][^\x07\x1b]*(?:\x07|\x1b\\)?|\x1b\[[0-?]*[ -/]*[@-~]?|\x1b[\s\S]?"
              r"|[\x80-\x9f]|[\x00-\x08\x0b\x0c\x0e-\x1a\x1c-\x1f\x7f]")
_SGR = "\x1b["


def _controls(text: str) -> bool:
    return any(ord(c) < 32 and c not in "\t\n\r" or 0x7f <= ord(c) <= 0x9f for c in text)


def safe(text: str, colour: bool = False, cr: bool = True) -> str:
    """text without control sequences; with colour, SGR sequences (`ESC [ ... m`) kept; without
    cr, no carriage return either (in one-line fields of a plan a CR only serves to print a second
    text over the first: the subject a person reads before approving)."""
    global _PATTERN
    if not cr and "\r" in text:
        text = text.replace("\r", "")
    if not _controls(text):
        return text
    if _PATTERN is None:
        import re

        _PATTERN = re.compile(_SEQUENCES)

    def keep(m) -> str:
        seq = m.group(0)
        if colour and seq.startswith(_SGR) and seq.endswith("m") and all(c in "0123456789;:" for c in seq[2:-1]):
            return seq
        return ""

    return _PATTERN.sub(keep, text)


class Guard:
    """A text stream's write() through safe(); colour only when the stream is a terminal."""

    def __init__(self, stream, cr: bool = True) -> None:
        self._stream = stream
        self._cr = cr
        try:
            self._colour = stream.isatty()
        except (AttributeError, ValueError):
            self._colour = False

    def write(self, text: str) -> int:
        self._stream.write(safe(text, self._colour, self._cr))
        return len(text)

    def __getattr__(self, name: str):
        return getattr(self._stream, name)


def guard_output(cr: bool = True) -> None:
    """sys.stdout and sys.stderr through Guard, for a verb that prints what others wrote (cr:
    keep carriage returns, as a program's progress lines use them)."""
    if not isinstance(sys.stdout, Guard):
        sys.stdout = Guard(sys.stdout, cr)
    if not isinstance(sys.stderr, Guard):
        sys.stderr = Guard(sys.stderr, cr)
