"""Pasted errors in the shapes an agent pastes them from the standard library (issue 46, session 47's
stdlib-errors-dev set): a traceback's frames and a warning's `path:line:` name the failing code and lead
the answer; a logged line (`ERROR:asyncio:...`) is a pasted error; the values a message was formatted
with split its phrases, a run of two words counting half a run of three. Indexed for real (SQLite FTS5)."""

import pytest

from runner.core.search import exact, frames, kind
from tests.support.search_files import indexed

MOVE_BODY = "".join(f"        step{i} = prepare(src, dst, {i})\n" for i in range(30))
FILES = {
    # The file a traceback's frames name (as /usr/lib/python3.11/shutil.py): its words are not the message's.
    "shutil.py": ("def copyfile(src, dst):\n    with open(src, 'rb') as fsrc:\n        return fsrc.read()\n\n\n"
                  "def move(src, dst):\n    try:\n        rename(src, dst)\n    except OSError:\n" + MOVE_BODY
                  + "        copyfile(src, dst)\n    return dst\n"),
    # A file that says the message's words many times: BM25's answer, not where it failed.
    "perms.py": ("def explain():\n    \"\"\"Permission denied: a permission error is denied permission; denied, "
                 "permission denied, permission denied.\"\"\"\n    return 'permission denied'\n"),
    # A file the agent's own script frame names nothing in.
    "build.py": "def main():\n    return 'build'\n",
    "asyncio/tasks.py": ("class Task:\n    def __del__(self):\n        if self.pending:\n"
                         "            self.loop.call_exception_handler({'message': 'Task was destroyed but it is pending!'})\n"),
    "asyncio/notes.py": ("def describe_task():\n    \"\"\"A task, a pending task, a destroyed task: ERROR asyncio task "
                         "pending destroyed.\"\"\"\n    return 'task pending destroyed error asyncio'\n"),
    # An HTTP error's prefix ("400 Bad Request: ") is every such error's: the raise site spells the rest.
    "web/exceptions.py": ("class BadRequest(Exception):\n    \"\"\"400 Bad Request: the browser sent a bad request.\"\"\"\n\n\n"
                          "class SecurityError(BadRequest):\n    \"\"\"A bad request for security reasons.\"\"\"\n"),
    "web/utils.py": ("from web.exceptions import SecurityError\n\n\ndef host_is_trusted(host, trusted):\n"
                     "    for ref in trusted:\n        if ref == host:\n            return True\n"
                     "    raise SecurityError(f\"Host {host!r} is not trusted.\")\n"),
}


@pytest.fixture(scope="module")
def searched(tmp_path_factory):
    with indexed(tmp_path_factory, FILES, "shapes") as ask:
        yield ask


CHAINED = '''Traceback (most recent call last):
  File "/usr/lib/python3.11/shutil.py", line 8, in move
    rename(src, dst)
OSError: [Errno 18] Invalid cross-device link: 'a' -> '/mnt/a'

During handling of the above exception, another exception occurred:

Traceback (most recent call last):
  File "/home/me/build.py", line 3, in <module>
    shutil.move("a", "/mnt/a")
  File "/usr/lib/python3.11/shutil.py", line 40, in move
    copyfile(src, dst)
  File "/usr/lib/python3.11/shutil.py", line 2, in copyfile
    with open(src, 'rb') as fsrc:
PermissionError: [Errno 13] Permission denied: 'a\''''


def test_a_traceback_s_frames_lead_innermost_first(searched):
    a = searched(CHAINED)
    assert a.kind == "error"
    assert [(h.path, h.symbol) for h in a.hits[:2]] == [("shutil.py", "copyfile"), ("shutil.py", "move")], a.hits
    assert a.definitions and a.definitions[0].name == "copyfile", a.definitions  # where it was raised


def test_a_frame_s_path_is_its_longest_suffix_the_workspace_holds(searched, tmp_path):
    (tmp_path / "pkg").mkdir()
    (tmp_path / "pkg" / "mod.py").write_text("x = 1\n")
    (tmp_path / "mod.py").write_text("y = 2\n")
    assert frames.indexed_path(str(tmp_path), "/srv/app/.venv/lib/pkg/mod.py") == "pkg/mod.py"
    assert frames.indexed_path(str(tmp_path), "/home/me/other.py") is None
    assert frames.indexed_path(str(tmp_path), "/etc/../pkg/mod.py") == "pkg/mod.py"  # never a `..` of its own
    assert frames.places('  File "/a/b.py", line 3, in f\n  File "/a/c.py", line 9, in g\n') == [
        ("/a/c.py", 9, "g"), ("/a/b.py", 3, "f")]
    # a recursion error's thousand frames: each place once, the innermost few only (each costs opens)
    deep = "".join(f'  File "/a/m{i % 50}.py", line {i % 7}, in f\n' for i in range(1000))
    got = frames.places(deep)
    assert len(got) == frames.MAX_PLACES and len(set(got)) == len(got) and got[0] == ("/a/m49.py", 999 % 7, "f")


def test_a_warning_s_path_and_line_name_the_chunk_that_warned(searched):
    a = searched("/usr/lib/python3.11/shutil.py:2: ResourceWarning: permission denied permission")
    assert a.hits[0].path == "shutil.py" and a.hits[0].symbol == "copyfile", a.hits


def test_a_logged_line_is_a_pasted_error_whose_message_follows_level_and_logger(searched):
    for line in ("ERROR:asyncio:Task was destroyed but it is pending!",
                 "2024-05-01 10:00:00,123 ERROR asyncio: Task was destroyed but it is pending!",
                 "WARNING: the disk is full"):
        assert kind.classify(line) == "error", line
    assert exact.message_grams("ERROR:asyncio:Task was destroyed but it is pending!")[0] == "task was destroyed"
    for question in ("how is an ERROR logged", "make the ERROR level quieter"):
        assert kind.classify(question) == "concept", question
    a = searched("ERROR:asyncio:Task was destroyed but it is pending!")
    assert a.hits[0].path == "asyncio/tasks.py", a.hits


def test_a_formatted_message_s_values_split_its_phrases():
    assert exact.message_grams("ValueError: time data '2024-13-45' does not match format '%Y-%m-%d'") == [
        "time data", "does not match", "not match format"]
    assert exact.message_grams("http.client.IncompleteRead: IncompleteRead(10 bytes read, 5 more expected)") == [
        "bytes read", "more expected"]
    assert exact.message_grams("json.decoder.JSONDecodeError: Expecting ',' delimiter: line 1 column 10 (char 9)") == [
        "expecting delimiter"]  # a quote holding no word is the message's own text
    # a KeyError shows its message's repr: the quotes around all of it hold no value
    assert exact.message_grams("zoneinfo._common.ZoneInfoNotFoundError: 'No time zone found with key X'")[0] == "no time zone"


def test_a_run_of_two_words_counts_half_of_three(searched):
    a = searched("web.exceptions.SecurityError: 400 Bad Request: Host 'evil.example.com:8000' is not trusted.")
    assert a.hits[0].path == "web/utils.py", [(h.path, h.line) for h in a.hits]
