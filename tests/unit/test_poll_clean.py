"""Pure parts of a poll: colour codes out, `\r` progress down to its last state (across
reads too), and a Go body wrapped so the compiler's line numbers are the agent's."""

from client.show.poll import Cleaner, collapse
from plugkit.languages.projects import wrap_go_body


class Sink:
    def __init__(self) -> None:
        self.text = ""

    def write(self, stream: str, text: str) -> int:
        self.text += text
        return len(text)


def test_collapse_keeps_the_last_state_and_drops_colour():
    assert collapse("\x1b[32mok\x1b[0m\n") == "ok\n"
    assert collapse("10%\r20%\r30%\rdone\n") == "done\n"
    assert collapse("50%\r\n") == "50%\n"  # a CRLF line end keeps its text
    assert collapse("\x1b]0;title\x07plain") == "plain"


def test_progress_split_between_reads_is_shown_once():
    sink = Sink()
    out = Cleaner(sink, True)
    out.write("stdout", "line 1\nprogress 10%\r")
    out.write("stdout", "progress 90%\rprogress 100%\r")
    out.write("stdout", "\nafter\n")
    out.flush()
    assert sink.text == "line 1\nprogress 100%\nafter\n"


def test_raw_passes_everything():
    sink = Sink()
    out = Cleaner(sink, False)
    out.write("stdout", "\x1b[1ma\rb\n")
    assert sink.text == "\x1b[1ma\rb\n"


def test_go_body_keeps_its_line_numbers():
    body = 'import (\n\t"fmt"\n)\n// say it\nfmt.Println(1)\n'
    wrapped = wrap_go_body(body)
    assert wrapped.startswith('package main; import (')
    lines = wrapped.split("\n")
    assert lines[4] == "func main() { fmt.Println(1)" and wrapped.endswith("\n}\n")
