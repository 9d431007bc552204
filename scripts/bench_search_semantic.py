"""The semantic layer's cost and worth (issue 46), measured side by side with BM25 alone:
  cost: runner RSS with the layer minus without it after indexing and embedding a corpus, chunks
        embedded per second (and the projected time for 20,000 chunks), query p50 while the filler runs;
  worth: NDCG@10 and recall@200 lines per category on the untuned sets, layer on vs off.
Run: .venv/bin/python scripts/bench_search_semantic.py [cost|worth|all] [--set attrs|packaging]
     [--model NAME (a row of runner/system/embedder.MODELS)] [--corpus DIR] [--fill-cap S]
     [--dense-weight W]
Each cost run is its own process, so one model's memory never counts in another's row."""

import json
import re
import os
import shutil
import statistics
import subprocess
import sys
import sysconfig
import tempfile
import time

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))

from runner.core.search import semantic  # noqa: E402
from runner.core.search.manager import SearchManager  # noqa: E402

STDLIB_DIRS = ("email", "json", "http", "logging", "asyncio", "concurrent", "importlib", "xml")
PROBES = ("parse the header of a message", "retry when the connection drops", "where is the lock released",
          "read the configuration file", "format a log record")


def _arg(argv: list[str], name: str, default: str | None = None) -> str | None:
    return argv[argv.index(name) + 1] if name in argv else default


def _use_model(name: str | None) -> None:
    """Point the layer at one row of the model table (the default row where none is named)."""
    if name:
        from runner.system import embedder
        semantic.load = lambda: embedder.load(name)


def stdlib_corpus(dest: str) -> str:
    """A few thousand chunks of the standard library, copied so the index sees a plain tree."""
    lib = sysconfig.get_paths()["stdlib"]
    for d in STDLIB_DIRS:
        shutil.copytree(os.path.join(lib, d), os.path.join(dest, d), ignore=shutil.ignore_patterns("__pycache__", "test*"))
    return dest


def _rss_mib() -> float:
    with open("/proc/self/status") as f:
        return next(int(line.split()[1]) for line in f if line.startswith("VmRSS:")) / 1024


def cost_child(corpus: str, layer: bool, model: str | None, cap_s: float) -> dict:
    """One runner's search in this process: index the corpus (and embed it when the layer is on)."""
    _use_model(model)
    home = tempfile.mkdtemp()
    manager = SearchManager(home, semantic_layer=layer)
    try:
        manager.query(corpus, "start", limit=1)
        index = manager.workspace(corpus)
        index.wait(3600)
        out: dict = {"layer": layer, "chunks": index.store.embedded()[1]}
        if layer:
            waits, notes, first, t_first, c_first = [], set(), None, None, 0.0
            deadline = time.monotonic() + cap_s  # the rate needs no whole fill: a slow model is cut off
            while time.monotonic() < deadline:
                done, total = index.store.embedded()
                if done and first is None:
                    first, t_first, c_first = done, time.monotonic(), time.process_time()
                if index.embedder is not None and not index.embedding and done == total:
                    break
                probe = PROBES[len(waits) % len(PROBES)]
                started = time.perf_counter()
                a = manager.query(corpus, probe)  # while the filler runs: must not wait for it
                waits.append(time.perf_counter() - started)
                notes.add(re.sub(r"\d+", "N", a.semantic or ""))
                time.sleep(0.2)
            done, total = index.store.embedded()
            span = time.monotonic() - (t_first or time.monotonic())
            rate = (done - (first or 0)) / span if span > 0 else 0.0  # 0: not one batch landed within --fill-cap
            # Per CPU-second too: the machine's other load slows the wall clock, not the work per chunk.
            cpu = time.process_time() - c_first if first is not None else 0.0
            out.update(embedded=done, chunks_per_s=round(rate, 1), proj_20k_s=round(20000 / rate) if rate else None,
                       chunks_per_cpu_s=round((done - first) / cpu, 1) if cpu > 0 else None,
                       query_p50_ms_filling=round(statistics.median(waits) * 1000, 1) if waits else None,
                       notes=sorted(n for n in notes if n))
        warm = []
        for probe in PROBES * 3:  # warm queries, every vector in (the matrix loaded) where the layer is on
            started = time.perf_counter()
            manager.query(corpus, probe)
            warm.append(time.perf_counter() - started)
        out["query_p50_ms_warm"] = round(statistics.median(warm) * 1000, 1)
        out["rss_mib"] = round(_rss_mib())
        return out
    finally:
        manager.close()
        shutil.rmtree(home, ignore_errors=True)


def cost(corpus: str | None, model: str | None, cap_s: str) -> list[str]:
    with tempfile.TemporaryDirectory() as tmp:
        corpus = corpus or stdlib_corpus(os.path.join(tmp, "corpus"))
        rows = {}
        for layer in (False, True):
            cmd = [sys.executable, __file__, "_cost_child", corpus, "1" if layer else "0", cap_s] + (["--model", model] if model else [])
            got = subprocess.run(cmd, capture_output=True, text=True)
            if got.returncode:
                raise SystemExit(got.stderr[-2000:])
            rows[layer] = json.loads(got.stdout.strip().splitlines()[-1])
    on, off = rows[True], rows[False]
    if not on["chunks_per_s"]:
        return [f"semantic layer cost, model {model or 'default'}: fewer than two batches embedded within --fill-cap {cap_s} s"]
    return [f"semantic layer cost, model {model or 'default'}: {on['chunks']} chunks, {on['embedded']} embedded",
            f"  runner RSS: BM25 alone {off['rss_mib']} MiB, with the layer {on['rss_mib']} MiB "
            f"(+{on['rss_mib'] - off['rss_mib']} MiB)",
            f"  embedding: {on['chunks_per_s']} chunks/s wall -> 20,000 chunks in ~{on['proj_20k_s']} s; "
            f"{on['chunks_per_cpu_s']} chunks per CPU-second",
            f"  query p50: BM25 alone {off['query_p50_ms_warm']} ms; with the layer, while the filler runs "
            f"{on['query_p50_ms_filling']} ms (answers said: {on['notes']}), once filled {on['query_p50_ms_warm']} ms"]


def worth(names: list[str], model: str | None) -> list[str]:
    import bench_search_untuned as u
    from bench_search import ndcg10, plugkit_ranking

    _use_model(model)
    lines = []
    for name in names:
        root, queries = u.corpus_root(name), u.load(name)
        per: dict[str, dict[str, list[tuple[float, float]]]] = {}
        with tempfile.TemporaryDirectory() as home:
            for layer in (False, True):
                manager = SearchManager(os.path.join(home, str(layer)), semantic_layer=layer)
                try:
                    manager.query(root, "start", limit=1)
                    manager.ready(root, 3600)
                    for q in queries:
                        ranked = plugkit_ranking(manager, root, q["query"])
                        read, _ = u.plugkit_read(manager, root, q["query"])
                        recall, _ = u.budgeted(root, read, u._judged_lines(q))
                        row = (ndcg10(ranked, q["relevant"]), recall)
                        for key in (q["category"], "all"):
                            per.setdefault(key, {}).setdefault("on" if layer else "off", []).append(row)
                finally:
                    manager.close()
        lines.append(f"{u.pin(name)} ({u.SETS[name][1]}), model {model or 'default'}: NDCG@10 / recall@200, BM25 alone -> with the layer")
        for cat in sorted(per, key=lambda c: (c == "all", c)):
            off, on = per[cat]["off"], per[cat]["on"]
            mean = lambda rows, i: sum(r[i] for r in rows) / len(rows)  # noqa: E731
            lines.append(f"  {cat:<11} n={len(off):>2}  {mean(off, 0):.3f} -> {mean(on, 0):.3f} ({mean(on, 0) - mean(off, 0):+.3f})"
                         f"   rec {mean(off, 1):.2f} -> {mean(on, 1):.2f}")
    return lines


def main(argv: list[str]) -> int:
    if argv and argv[0] == "_cost_child":
        print(json.dumps(cost_child(argv[1], argv[2] == "1", _arg(argv, "--model"), float(argv[3]))), flush=True)
        os._exit(0)  # a filler cut off by --fill-cap may still be inside the model: no interpreter teardown under it
    what = argv[0] if argv and not argv[0].startswith("--") else "all"
    if "--dense-weight" in argv:  # the fusion's knob, to compare on the dev set (never tune on the held-out one)
        semantic.DENSE_WEIGHT = float(_arg(argv, "--dense-weight"))
    model = _arg(argv, "--model")
    names = [_arg(argv, "--set")] if "--set" in argv else ["attrs", "packaging"]
    if what in ("cost", "all"):
        print("\n".join(cost(_arg(argv, "--corpus"), model, _arg(argv, "--fill-cap", "180"))), flush=True)
    if what in ("worth", "all"):
        print("\n".join(worth(names, model)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
