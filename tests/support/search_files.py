"""A small corpus written from a dict of files and indexed by a real SearchManager (no git), asked
as the bench asks (limit 10, no history): the ranking unit tests' fixtures."""

import contextlib
import pathlib

from runner.core.search.manager import SearchManager


@contextlib.contextmanager
def indexed_at(root: pathlib.Path, home: pathlib.Path, files: dict[str, str]):
    """`files` written under root and indexed; yields ask(question) -> Answer."""
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    manager = SearchManager(str(home), semantic_layer=False)
    try:
        manager.query(str(root), "start")
        manager.workspace(str(root)).wait(60)
        yield lambda q: manager.query(str(root), q, limit=10, history=False)
    finally:
        manager.close()


def indexed(tmp_path_factory, files: dict[str, str], name: str):
    """indexed_at for a module fixture."""
    return indexed_at(tmp_path_factory.mktemp(name), tmp_path_factory.mktemp("home"), files)


def ask(tmp_path: pathlib.Path, files: dict[str, str], question: str):
    """One question's answer over a repository of `files` (a test's own index)."""
    with indexed_at(tmp_path / "repo", tmp_path / "home", files) as asked:
        return asked(question)
