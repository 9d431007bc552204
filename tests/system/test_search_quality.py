"""The search eval as a gate: plugkit's NDCG@10 on judged queries must stay above the floor set
from the first measurement (scripts/bench_search.py), and above what `grep -rl` gives an agent.

First measurement (2026-11-25): stdlib NDCG@10 0.982 (BM25 alone 0.737, grep 0.870);
plugkit repo 0.858 (BM25 alone 0.520, grep 0.189)."""

import importlib.util
import os

import pytest

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def _bench():
    spec = importlib.util.spec_from_file_location("bench_search", os.path.join(ROOT, "scripts", "bench_search.py"))
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


@pytest.mark.skipif(not os.path.exists("/usr/bin/python3.11"), reason="needs Debian's python3.11 standard library")
def test_stdlib_search_quality_stays_above_its_floor(tmp_path):
    bench = _bench()
    result = bench.evaluate(bench.stdlib_root(), bench.STDLIB_QUERIES, str(tmp_path))
    assert result["plugkit"]["ndcg@10"] >= bench.STDLIB_FLOOR, result
    assert result["plugkit"]["ndcg@10"] > result["grep -rl"]["ndcg@10"], result
    assert result["plugkit"]["ndcg@10"] > result["bm25"]["ndcg@10"], result


def test_repo_search_quality_stays_above_its_floor(tmp_path):
    bench = _bench()
    result = bench.evaluate(ROOT, bench.REPO_QUERIES, str(tmp_path))
    assert result["plugkit"]["ndcg@10"] >= bench.REPO_FLOOR, result
    assert result["plugkit"]["mrr"] > result["grep -rl"]["mrr"], result
