"""plugkit/confined.py, the one way the runner reads a file for a caller: only a regular file,
reached from the root without a link on the way, never a FIFO (real files, links and FIFOs in a
temporary tree). And the semantic layer's filling thread reads chunks through it (a fake
embedder records what it was given; numpy only, no model)."""

import os
import threading

import numpy as np
import pytest

from plugkit import confined
from runner.core.search import chunks, semantic, tokens
from runner.system.search.store import SqliteStore


@pytest.fixture
def tree(tmp_path):
    root, outside = tmp_path / "root", tmp_path / "outside"
    (root / "src").mkdir(parents=True)
    outside.mkdir()
    (outside / "secret.py").write_text("SECRET = 'swordfish'\n")
    (root / "src" / "own.py").write_text("OWN = 1\n")
    os.symlink(outside / "secret.py", root / "link.py")
    os.symlink(outside, root / "linked_dir")
    os.symlink("src/own.py", root / "inside_link.py")
    os.mkfifo(root / "pipe.py")
    return root


def test_only_a_regular_file_inside_the_root_is_read(tree):
    root = str(tree)
    assert confined.read_in(root, "src/own.py", 100) == b"OWN = 1\n"
    assert confined.read_in(root, "src/own.py", 3) == b"OWN"
    for refused in ("link.py", "linked_dir/secret.py", "inside_link.py", "pipe.py", "src", "../outside/secret.py",
                    "/etc/passwd", "missing.py", ""):
        assert confined.read_in(root, refused, 100) is None, refused
    with pytest.raises(FileNotFoundError):
        confined.open_fd(root, "missing.py")
    with pytest.raises(OSError):
        confined.open_beneath(root, str(tree / "link.py"))
    with confined.open_beneath(root, str(tree / "src" / "own.py")) as fh:
        assert fh.read() == b"OWN = 1\n"
    assert confined.list_in(root, "src") == ["own.py"] and confined.list_in(root, "linked_dir") == []


class RecordingEmbedder:
    def __init__(self) -> None:
        self.texts: list[str] = []

    name = "recording"  # the fill stamps the store with the model's name

    def encode(self, texts):
        self.texts += texts
        return [np.zeros(4, dtype=np.float32) for _ in texts]


def test_the_filling_thread_reads_no_chunk_through_a_link(tree, tmp_path):
    (tree / "src" / "b.py").write_text("def swapped():\n    return 1\n")
    store = SqliteStore(str(tmp_path / "index.sqlite"), tokens.expand)
    for rel in ("src/own.py", "src/b.py"):
        cs, ds = chunks.cut(rel, (tree / rel).read_text())
        store.put_file(rel, 0.0, 1, 1.0, "python", cs, ds)
    # Indexed as a file, then swapped for a link out before the vectors are filled.
    (tree / "src" / "b.py").unlink()
    os.symlink(tmp_path / "outside" / "secret.py", tree / "src" / "b.py")
    embedder = RecordingEmbedder()
    semantic.fill(store, str(tree), embedder, threading.Event())
    store.close()
    assert embedder.texts and any("OWN = 1" in t for t in embedder.texts), embedder.texts
    assert not any("swordfish" in t for t in embedder.texts), embedder.texts
