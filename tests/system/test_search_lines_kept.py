"""A hit's file lines are kept between queries for its index (runner/core/search/files.py read_lines):
only while the file opened is the one they were read from, never through a link planted since, and
within a budget."""

import os

from runner.core.search import files, tokens
from runner.system.search.store import SqliteStore


def test_kept_lines_follow_the_file_and_never_a_link_planted_over_it(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    (root / "a.py").write_text("one\ntwo\n")
    (tmp_path / "secret.txt").write_text("the secret\n")
    store = SqliteStore(str(tmp_path / "index.sqlite"), tokens.expand)
    reads = []
    real = os.read
    monkeypatch.setattr(files.os, "read", lambda fd, n: (reads.append(fd), real(fd, n))[1])
    try:
        assert files.read_lines(str(root), "a.py", store) == ["one", "two"]
        read_once = len(reads)
        assert files.read_lines(str(root), "a.py", store) == ["one", "two"] and len(reads) == read_once  # kept
        (root / "a.py").write_text("uno\ndos\n")  # in place, same size: its mtime moved (set past the clock's tick)
        st = os.stat(root / "a.py")
        os.utime(root / "a.py", ns=(st.st_atime_ns, st.st_mtime_ns + 10**9))
        assert files.read_lines(str(root), "a.py", store) == ["uno", "dos"]
        os.replace(root / "a.py", root / "old.py")
        os.symlink(tmp_path / "secret.txt", root / "a.py")  # a sandbox's link where the file was
        assert files.read_lines(str(root), "a.py", store) == []
        os.unlink(root / "a.py")
        assert files.read_lines(str(root), "a.py", store) == []
        other = SqliteStore(str(tmp_path / "other.sqlite"), tokens.expand)  # another index keeps its own
        try:
            (root / "b.py").write_text("b\n")
            files.read_lines(str(root), "b.py", store)
            before = len(reads)
            files.read_lines(str(root), "b.py", other)
            assert len(reads) > before
        finally:
            other.close()
    finally:
        store.close()


def test_kept_lines_stay_within_their_budget(tmp_path, monkeypatch):
    root = tmp_path / "ws"
    root.mkdir()
    monkeypatch.setattr(files, "KEPT_BYTES", 3000)
    store = SqliteStore(str(tmp_path / "index.sqlite"), tokens.expand)
    try:
        for i in range(10):
            (root / f"m{i}.py").write_text(f"# {i}\n" + "x = 1\n" * 200)  # ~1,200 bytes each
            assert files.read_lines(str(root), f"m{i}.py", store)[0] == f"# {i}"
        held, kept = files._kept[store]
        assert held <= 3000 and len(kept) == 2 and list(kept) == ["m8.py", "m9.py"]  # the last shown
    finally:
        store.close()
