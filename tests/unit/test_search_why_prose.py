"""A "why" question written in plain words asks what code does ("why does a body line starting with From
get a '>' in front"): its code is ranked as its plain-words twin's ("how does ..."), by the words in
context, not by short definitions named by one common word of it (`line`, `body`), which ranked first
when every "why" kept the exact-match ranking. Its commits still lead the text answer (kind "why")."""

from tests.support.search_files import indexed_at

FILES = {
    "mail/generator.py": (
        "class Generator:\n"
        "    '''Writes a message out as text.'''\n\n"
        "    def _write_lines(self, lines):\n"
        "        for line in lines:\n"
        "            # a body line starting with From gets a greater-than sign in front, so a mailbox\n"
        "            # reader does not take it for the start of the next message\n"
        "            if self.mangle_from and line.startswith('From '):\n"
        "                line = '>' + line\n"
        "            self.write(line)\n"),
    "text/line.py": "def line(text):\n    '''One line of text.'''\n    return text.splitlines()[0]\n",
    "text/body.py": "def body(message):\n    '''The body of a message.'''\n    return message.payload\n",
    **{f"misc/mod{i}.py": f"def helper{i}(value):\n    '''Return value plus {i}.'''\n    return value + {i}\n"
       for i in range(4)},
}
WHY = "why does a body line starting with From get a greater-than sign in front"
HOW = "how does a body line starting with From get a greater-than sign in front"


def test_a_why_question_in_plain_words_ranks_its_code_as_its_plain_words_twin(tmp_path):
    with indexed_at(tmp_path / "repo", tmp_path / "home", FILES) as ask:
        why, how = ask(WHY), ask(HOW)
    assert (why.kind, how.kind) == ("why", "concept")
    assert how.hits and how.hits[0].path == "mail/generator.py"
    assert [h.path for h in why.hits] == [h.path for h in how.hits]
    assert [d.name for d in why.definitions] == [d.name for d in how.definitions]
    assert "line" not in [d.name for d in why.definitions]  # one common word's definition is not the answer
