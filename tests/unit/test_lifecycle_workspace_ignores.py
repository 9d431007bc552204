"""`.plugkit/.gitignore`: plugkit's own files stay out of git, and a file an older plugkit wrote
gains what plugkit owns now (a run's worktrees) without losing a line a person added."""

from plugkit.lifecycle.workspace import OWNED_IGNORES, Workspace


def test_a_new_workspace_ignores_everything_plugkit_owns(tmp_path):
    ws = Workspace(str(tmp_path))
    ws.ensure_dir()
    lines = (tmp_path / ".plugkit" / ".gitignore").read_text().splitlines()
    assert set(OWNED_IGNORES) <= set(lines) and "worktrees/" in lines


def test_an_older_file_gains_the_missing_lines_and_keeps_the_persons(tmp_path):
    (tmp_path / ".plugkit").mkdir()
    ignore = tmp_path / ".plugkit" / ".gitignore"
    ignore.write_text("state.json\nevidence/\nmy-notes.txt")
    Workspace(str(tmp_path)).ensure_dir()
    lines = ignore.read_text().splitlines()
    assert lines[:3] == ["state.json", "evidence/", "my-notes.txt"]
    assert set(OWNED_IGNORES) <= set(lines) and len(lines) == len(set(lines))
    before = ignore.read_text()
    Workspace(str(tmp_path)).ensure_dir()
    assert ignore.read_text() == before  # nothing added twice
