"""A new worktree's first search in a ~2,000-file repository: this tree's base index + overlay
against the seeded copy (a filtered copy of the main checkout's index) of the baseline ref, each
in its own process over the same repository, in the same run. Also the rows each leaves in the
worktree's own index file (the overlay's size against the copy's).

Baseline: the sources at $BENCH_BASELINE_REF (default `main`), extracted with `git archive`.
CASES plugs into scripts/bench.py (add "bench_search_worktree" to EXTRA_MODULES)."""

import json
import os
import subprocess
import sys
import tempfile
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
sys.path.insert(0, str(Path(__file__).resolve().parent.parent))

from bench import Row, sized  # noqa: E402

ROOT = Path(__file__).resolve().parent.parent
GIT = ["git", "-c", "user.name=bench", "-c", "user.email=b@b", "-c", "init.defaultBranch=main"]

# Run in the tree under test (sys.path[0]): builds the main checkout's index, then times the new
# worktree's first query until its index is complete, and counts the rows of its own index file.
DRIVER = r"""
import json, os, sqlite3, sys, time
main, tree, home = sys.argv[1:4]
from runner.core.search.manager import SearchManager
m = SearchManager(home, semantic_layer=False)
m.query(main, "handler_0"); m.workspace(main).wait(600)
began = time.perf_counter()
a = m.query(tree, "handler_7")
m.workspace(tree).wait(600)
first = time.perf_counter() - began
found = any(h.path == "pkg/m7.py" for h in a.hits) or any(d.path == "pkg/m7.py" for d in a.definitions)
began = time.perf_counter()
for _ in range(20):
    m.query(tree, "respond handler_42")
warm = (time.perf_counter() - began) / 20
db = m._db(os.path.realpath(tree))
m.close()
con = sqlite3.connect(db)
rows = sum(con.execute(f"SELECT count(*) FROM {t}").fetchone()[0] for t in ("files", "chunks", "defs"))
print(json.dumps({"first_s": first, "warm_s": warm, "rows": rows, "found": found, "size": os.path.getsize(db)}))
"""


def _repo(where: Path, files: int) -> tuple[Path, Path]:
    main = where / "repo"
    (main / "pkg").mkdir(parents=True)
    for i in range(files):
        body = "".join(f"    value_{j} = request.get('k{j}', {j})\n" for j in range(30))
        (main / "pkg" / f"m{i}.py").write_text(f'"""Module {i}."""\n\n\ndef handler_{i}(request):\n{body}'
                                               f"    return respond({i})\n")
    subprocess.run([*GIT, "init", "-q"], cwd=main, check=True)
    subprocess.run([*GIT, "add", "-A"], cwd=main, check=True)
    subprocess.run([*GIT, "commit", "-qm", "handlers"], cwd=main, check=True)
    return main, main / ".plugkit" / "worktrees" / "1"


def _tree_at(ref: str, where: Path) -> Path:
    where.mkdir()
    archive = subprocess.run(["git", "archive", ref], cwd=ROOT, capture_output=True, check=True).stdout
    subprocess.run(["tar", "-x", "-C", str(where)], input=archive, check=True)
    return where


def _first_query(src: Path, main: Path, tree: Path, home: Path) -> dict:
    subprocess.run([*GIT, "worktree", "add", "-q", "-b", home.name, str(tree)], cwd=main, check=True)
    for i in range(10):  # the worker's edits: what differs from the base
        (tree / "pkg" / f"m{i * 7}.py").write_text(f"def handler_{i * 7}(request):\n    return 'edited {i}'\n")
    done = subprocess.run([sys.executable, "-c", DRIVER, str(main), str(tree), str(home)], cwd=src,
                          env=dict(os.environ, PYTHONPATH=str(src)), capture_output=True, text=True, timeout=900)
    if done.returncode != 0:
        raise RuntimeError(done.stderr[-2000:])
    out = json.loads(done.stdout.strip().splitlines()[-1])
    subprocess.run([*GIT, "worktree", "remove", "--force", str(tree)], cwd=main, check=True)
    return out


def case_worktree(files: int) -> list[Row]:
    ref = os.environ.get("BENCH_BASELINE_REF", "main")
    with tempfile.TemporaryDirectory(prefix="plugkit-bench-wt-") as tmp:
        where = Path(tmp)
        main, _ = _repo(where, files)
        baseline = _tree_at(ref, where / "baseline")
        ours = _first_query(ROOT, main, main / ".plugkit" / "worktrees" / "ours", where / "home-ours")
        theirs = _first_query(baseline, main, main / ".plugkit" / "worktrees" / "base", where / "home-base")
    ratio = ours["first_s"] / theirs["first_s"]
    return [
        Row(f"search: new worktree's first query ({files} files, 10 edited)", f"{ours['first_s'] * 1000:.0f} ms",
            f"seeded copy ({ref}) {theirs['first_s'] * 1000:.0f} ms", f"{ratio:.2f}x", "<= 1.0x",
            ratio <= 1.0 and ours["found"]),
        Row("search: the worktree's own index rows (files+chunks+defs)", str(ours["rows"]),
            f"seeded copy {theirs['rows']}", f"{ours['rows'] / max(theirs['rows'], 1):.3f}x", "< 0.05x",
            ours["rows"] < 0.05 * theirs["rows"]),
        Row("search: the worktree's own index file", f"{ours['size'] / 1024:.0f} KiB",
            f"seeded copy {theirs['size'] / 1024:.0f} KiB", f"{ours['size'] / max(theirs['size'], 1):.3f}x", "-", True),
        Row("search: warm query in the worktree", f"{ours['warm_s'] * 1000:.1f} ms",
            f"seeded copy {theirs['warm_s'] * 1000:.1f} ms", f"{ours['warm_s'] / theirs['warm_s']:.2f}x",
            "<= 1.2x", ours["warm_s"] <= 1.2 * theirs["warm_s"]),
    ]


CASES = {"search_worktree": lambda quick: case_worktree(sized(quick, 2000, 300))}

if __name__ == "__main__":
    for r in case_worktree(int(sys.argv[1]) if len(sys.argv) > 1 else 2000):
        print(f"{r.case:<60} {r.ours:<12} {r.baseline:<28} {r.ratio:<8} {r.target:<10} {'pass' if r.ok else 'FAIL'}")
