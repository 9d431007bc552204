"""Memories on disk: round trips, index limits, the rules, staleness and search (no runner)."""

import os
import threading

import pytest

from plugkit.memory import index_for_context
from plugkit.memory.recall import references, search, stale_reasons
from plugkit.memory.rules import Draft, Refused
from plugkit.memory.store import INDEX, LINE_MAX, Memory, MemoryStore, NotFound, find_workspace, parse, render

WHY = "\nWhy: a mock once hid a real bug.\nHow to apply: in every new test."


@pytest.fixture
def ws(tmp_path):
    root = tmp_path / "ws"
    (root / ".git").mkdir(parents=True)
    (root / "src").mkdir()
    (root / "src" / "app.py").write_text("def load_config(path):\n    return path\n\n# usage: app --dry-run\n")
    return root


@pytest.fixture
def store(ws, tmp_path):
    return MemoryStore.for_cwd(str(ws / "src"), str(tmp_path / "home"))


def fb(name: str, body: str = "Use hand-written fakes." + WHY, **kw) -> Draft:
    return Draft(type="feedback", name=name, body=body, **kw)


def refusal(store, draft: Draft) -> Refused:
    with pytest.raises(Refused) as info:
        store.add(draft)
    return info.value


# --- round trip -----------------------------------------------------------------------------

def test_add_list_show_forget_round_trip(store, ws):
    saved = store.add(fb("No mocks", description="fakes over mocks"))
    assert store.workspace == str(ws)  # found from a subdirectory through .git
    assert saved.path == str(ws / ".plugkit" / "memory" / "no-mocks.md")
    assert [m.name for m in store.all()[0]] == ["No mocks"]
    shown = store.get("no MOCKS")  # by slug
    assert (shown.description, shown.type, shown.scope) == ("fakes over mocks", "feedback", "project")
    assert shown.body == saved.body and shown.created == saved.created
    index = (ws / ".plugkit" / "memory" / INDEX).read_text()
    assert "- [feedback] No mocks: fakes over mocks (no-mocks.md)" in index
    assert store.forget("No mocks").name == "No mocks"
    assert store.all() == ([], [])
    assert "No mocks" not in (ws / ".plugkit" / "memory" / INDEX).read_text()
    with pytest.raises(NotFound):
        store.get("No mocks")
    with pytest.raises(NotFound):
        store.forget("No mocks")


def test_type_user_is_user_wide_and_user_flag_moves_others(store, tmp_path, ws):
    me = store.add(Draft(type="user", name="Prefers terse answers", body="Short replies, no recap."))
    assert me.scope == "user" and me.path.startswith(str(tmp_path / "home" / "memory"))
    ref = store.add(Draft(type="reference", name="Bug tracker", body="Bugs live in Linear project PLUG.",
                          scope="user"))
    assert ref.scope == "user"
    assert not (ws / ".plugkit").exists()  # nothing was written into the workspace
    assert oct(os.stat(me.path).st_mode & 0o777) == "0o600"
    assert refusal(store, Draft(type="user", name="x", body="y", scope="project")).rule == "scope"


def test_names_are_unique_across_scopes_and_replace_keeps_created(store):
    first = store.add(fb("Test runner"), now="2024-01-01T00:00:00Z")
    assert refusal(store, fb("test-runner", scope="user")).rule == "unique"
    moved = store.add(fb("test runner", "Run pytest -q." + WHY, scope="user"), replace=True,
                      now="2024-02-01T00:00:00Z")
    assert (moved.created, moved.updated, moved.scope) == (first.created, "2024-02-01T00:00:00Z", "user")
    assert not os.path.exists(first.path)
    assert [m.scope for m in store.all()[0]] == ["user"]


def test_concurrent_adds_under_the_lock_keep_every_memory_and_the_index(store, ws):
    def add(i: int) -> None:
        store.add(Draft(type="reference", name=f"note {i}", body=f"Dashboard number {i} is on grafana."))

    threads = [threading.Thread(target=add, args=(i,)) for i in range(16)]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    index = (ws / ".plugkit" / "memory" / INDEX).read_text().splitlines()
    assert len(store.all()[0]) == 16 and len([ln for ln in index if ln.startswith("- [")]) == 16


# --- front matter ----------------------------------------------------------------------------

@pytest.mark.parametrize("name", ['colon: "quotes" # hash', "it's 'single'", "true", "123", " padded ",
                                  "émoji ✓ — dash", "back\\slash", "- leading dash", "line\u2028sep"])
def test_front_matter_round_trips_odd_characters(name):
    m = Memory(name=name, description=f"d {name}", type="reference", created="2024-01-01T00:00:00Z",
               updated="2024-01-02T00:00:00Z", body="---\nbody with a fence\n---")
    back = parse(render(m))
    assert (back.name, back.description, back.body, back.created, back.updated) == \
        (name, f"d {name}", m.body, m.created, m.updated)


def test_hand_written_front_matter_and_broken_files_are_reported(store, ws):
    folder = ws / ".plugkit" / "memory"
    folder.mkdir(parents=True)
    (folder / "hand.md").write_text("---\nname: 'Hand ''written'''\ntype: reference\n---\nSee the wiki page.\n")
    (folder / "broken.md").write_text("no front matter here\n")
    memories, problems = store.all()
    assert [m.name for m in memories] == ["Hand 'written'"]
    assert memories[0].description == "See the wiki page."
    assert len(problems) == 1 and "broken.md" in problems[0] and "front matter" in problems[0]
    assert "1 memory file(s) unreadable" in index_for_context(str(ws), "/nonexistent-home")


# --- index limits ----------------------------------------------------------------------------

def test_index_keeps_200_lines_under_150_chars_newest_first(store, ws):
    long = "x" * 79
    for i in range(205):
        store.add(Draft(type="reference", name=f"{i:03d} " + "n" * 60, description=long,
                        body=f"Reference number {i} lives on the team wiki."), now=f"2024-01-01T00:{i // 60:02d}:{i % 60:02d}Z")
    lines = (ws / ".plugkit" / "memory" / INDEX).read_text().splitlines()
    assert len(lines) == 200
    assert all(len(line) <= LINE_MAX < 150 for line in lines)
    assert lines[2].startswith("- [reference] 204 ")  # newest first
    assert "8 older memories" in lines[-1]


def test_index_is_rewritten_atomically(store, ws):
    store.add(fb("one"))
    path = ws / ".plugkit" / "memory" / INDEX
    before = os.stat(path).st_ino
    store.add(fb("two"))
    assert os.stat(path).st_ino != before  # a new file renamed over the old, not rewritten in place
    leftovers = [n for n in os.listdir(path.parent) if n.endswith(".tmp")]
    assert leftovers == [] and path.read_text().count("- [feedback]") == 2


def test_context_index_is_bounded_and_flags_stale(store, ws, tmp_path):
    for i in range(60):
        store.add(Draft(type="reference", name=f"ref {i}", description="d" * 79,
                        body=f"Notes for src/app.py number {i}."))
    store.add(Draft(type="reference", name="gone", body="The parser lives in src/old_parser.py now."))
    text = index_for_context(str(ws), str(tmp_path / "home"))
    lines = text.splitlines()
    assert len(lines) <= 40 and len(text.encode()) <= 4096
    assert all(len(line) < 150 for line in lines)
    assert "[STALE: missing src/old_parser.py]" in lines[1]
    assert lines[-1].startswith("- ... ") and "more" in lines[-1]
    assert index_for_context(str(tmp_path), str(tmp_path / "nohome")) == ""


# --- rules -----------------------------------------------------------------------------------

@pytest.mark.parametrize("kind", ["feedback", "project"])
def test_feedback_and_project_need_why_and_how(store, kind):
    no_how = refusal(store, Draft(type=kind, name="n", body="Do it.\nWhy: because."))
    assert no_how.rule == "reasons" and "How to apply:" in no_how.reason and "Why:" not in no_how.reason
    assert "Why:" in refusal(store, Draft(type=kind, name="n", body="Do it.\nHow to apply: always")).reason
    assert refusal(store, Draft(type=kind, name="n", body="Do it.\nWhy:\nHow to apply: x")).rule == "reasons"
    store.add(Draft(type=kind, name="n", body="Do it.\n**Why:** it broke\n- How to apply: always"))
    store.add(Draft(type="reference", name="r", body="No reasons needed for a pointer to the wiki."))


@pytest.mark.parametrize("body", ["src/app.py", "  `runner/rpc/dispatch.py:42`  ", "setup.py", "/etc/hosts"])
def test_refuses_a_body_that_is_only_a_path(store, body):
    r = refusal(store, Draft(type="reference", name="p", body=body))
    assert r.rule == "derived" and "only a file path" in r.reason


@pytest.mark.parametrize("body", ["89ae02a", "89ae02a7c4d1e0f5b6a3c2d1e0f9a8b7c6d5e4f3", " `DEADBEEF1` "])
def test_refuses_a_body_that_is_only_a_git_hash(store, body):
    r = refusal(store, Draft(type="reference", name="h", body=body))
    assert r.rule == "derived" and "only a git hash" in r.reason and "git show" in r.reason


def test_description_name_and_text_limits(store):
    assert "under 80" in refusal(store, fb("n", description="d" * 80)).reason
    assert refusal(store, fb("n", description="two\nlines")).rule == "description"
    assert refusal(store, fb("n" * 65)).rule == "name"
    assert refusal(store, fb("???")).rule == "name"
    assert refusal(store, Draft(type="reference", name="e", body="  \n")).rule == "text"
    assert refusal(store, Draft(type="opinion", name="t", body="x y")).rule == "type"
    long_first_line = store.add(Draft(type="reference", name="auto", body="w " * 100))
    assert len(long_first_line.description) < 80 and long_first_line.description.endswith("…")


# --- staleness -------------------------------------------------------------------------------

def test_deleted_file_makes_a_memory_stale(store, ws):
    m = store.add(Draft(type="reference", name="config", body="Config is parsed in src/app.py and ./src/app.py."))
    assert stale_reasons([m], str(ws)) == {}
    (ws / "src" / "app.py").unlink()
    assert stale_reasons([m], str(ws)) == {"config": ["missing ./src/app.py", "missing src/app.py"]}


def test_renamed_function_and_dropped_flag_make_a_memory_stale(store, ws):
    m = store.add(Draft(type="reference", name="loader",
                        body="Call `load_config()` from app.py; run `app --dry-run` first."))
    assert stale_reasons([m], str(ws)) == {}
    (ws / "src" / "app.py").write_text("def read_settings(path):\n    return path\n# usage: app --check\n")
    assert stale_reasons([m], str(ws)) == {"loader": ["`load_config()` not found", "`--dry-run` not found"]}


def test_prose_that_only_looks_like_paths_is_not_checked(ws):
    refs = references("Use and/or the /health route; Node.js and `git commit --amend` are fine. "
                      "See [docs](docs/x.md) and http://example.com/a.py `git show HEAD:src/x.py`.")
    m = Memory(name="prose", description="d", type="reference", created="", updated="",
               body="Prefer and/or; ping /health; `git push --force-with-lease` only; Node.js 20.")
    assert refs.flags == set() and "Node.js" not in refs.paths and "docs/x.md" in refs.paths
    assert not any("example.com" in p or "HEAD" in p for p in refs.paths)
    assert stale_reasons([m], str(ws)) == {}


def test_user_wide_memories_only_check_absolute_paths(store, ws, tmp_path):
    m = store.add(Draft(type="user", name="me", body=f"Edits src/nothing.py and `gone()`; keeps notes in {tmp_path}/notes.txt"))
    assert stale_reasons([m], str(ws)) == {"me": [f"missing {tmp_path}/notes.txt"]}


# --- search ----------------------------------------------------------------------------------

def test_search_ranks_name_over_description_over_body(store):
    store.add(Draft(type="reference", name="pytest flags", body="Use -q for quiet output."), now="2024-01-01T00:00:00Z")
    store.add(Draft(type="reference", name="ci", description="which pytest flags CI uses",
                    body="CI runs the suite."), now="2024-01-02T00:00:00Z")
    store.add(Draft(type="reference", name="misc", body="Somewhere pytest is mentioned once."), now="2024-01-03T00:00:00Z")
    store.add(Draft(type="reference", name="other", body="Nothing relevant."))
    ranked = search(store.all()[0], "pytest flags")
    assert [m.name for _s, m in ranked] == ["pytest flags", "ci", "misc"]
    assert ranked[0][0] > ranked[1][0] > ranked[2][0] > 0
    assert search(store.all()[0], "kubernetes") == []
    assert len(search(store.all()[0], "pytest", limit=2)) == 2


def test_find_workspace_falls_back_to_the_cwd(tmp_path):
    (tmp_path / "a" / "b").mkdir(parents=True)
    assert find_workspace(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    (tmp_path / "a" / ".plugkit").mkdir()  # a bare .plugkit/ is not a marker (the gates agree)
    assert find_workspace(str(tmp_path / "a" / "b")) == str(tmp_path / "a" / "b")
    (tmp_path / "a" / ".plugkit" / "memory").mkdir()
    assert find_workspace(str(tmp_path / "a" / "b")) == str(tmp_path / "a")
