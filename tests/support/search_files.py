"""A small corpus written from a dict of files and indexed by a real SearchManager (no git), asked
as the bench asks (limit 10, no history): the ranking unit tests' module fixture."""

import contextlib

from runner.core.search.manager import SearchManager


@contextlib.contextmanager
def indexed(tmp_path_factory, files: dict[str, str], name: str):
    root = tmp_path_factory.mktemp(name)
    for rel, text in files.items():
        (root / rel).parent.mkdir(parents=True, exist_ok=True)
        (root / rel).write_text(text)
    manager = SearchManager(str(tmp_path_factory.mktemp("home")), semantic_layer=False)
    try:
        manager.query(str(root), "start")
        manager.workspace(str(root)).wait(60)
        yield lambda q: manager.query(str(root), q, limit=10, history=False)
    finally:
        manager.close()
