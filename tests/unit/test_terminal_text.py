"""client/show/terminal_text.py: what another program wrote, made safe for a terminal."""

from client.show.terminal_text import safe


def test_every_control_sequence_goes_and_a_colour_stays_only_when_asked():
    text = ("a\x1b]52;c;cm0=\x07b\x1b]8;;http://x\x1b\\c\x1bP1$qm\x1b\\d\x1b[2A\x1b[2Ke\u009b31mf"
            "\x1b[31mred\x1b[0m\x08\x7f\x00g\r\n\t")
    assert safe(text, colour=True) == "abcde31mf\x1b[31mred\x1b[0mg\r\n\t"
    assert safe(text) == "abcde31mfredg\r\n\t"


def test_a_sequence_cut_between_two_writes_cannot_form_again():
    first, second = safe("x\x1b]52;c;cm0"), safe("=\x07y")
    assert "\x1b" not in first + second and "\x07" not in first + second
    assert safe("x\x1b") + safe("]0;t\x07") == "x]0;t"


def test_plain_text_is_returned_as_it_is():
    text = "plain é ü 日本 \U0001F600\n"
    assert safe(text) is text
