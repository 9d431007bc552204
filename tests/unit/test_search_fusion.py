"""Pure parts of search: reciprocal rank fusion, a patch read into paths and bounded hunks, and
the history reconciled with what HEAD reaches."""

from runner.core.search import history, semantic


def test_rrf_rewards_agreement_over_one_lists_top():
    fused = semantic.rrf([["a", "b", "c"], ["b", "d", "a"]])
    assert fused == ["b", "a", "d", "c"]  # in both lists beats one list's top; ranks, not scores


def test_a_patch_gives_paths_and_bounded_changed_lines():
    patch = ("\ndiff --git a/src/net.py b/src/net.py\n--- a/src/net.py\n+++ b/src/net.py\n@@ -1 +1 @@\n"
             "-    return get(url, timeout=5)\n+    return get(url, timeout=30, backoff_jitter=True)\n"
             "diff --git a/old name.py b/new name.py\n+x\n" + "+" + "y" * 5000 + "\n")
    paths, diff = history._patch(patch)
    assert paths == ["src/net.py", "new name.py"]
    assert "backoff_jitter=True" in diff and "timeout=5" in diff and "+++" not in diff
    assert len(diff) <= history.MAX_DIFF_CHARS


def test_reconcile_adds_the_reachable_and_drops_the_rewritten():
    add, drop = history.reconcile(["old", "kept"], ["new", "kept"])
    assert add == ["new"] and drop == ["old"]
    assert history.reconcile(["a"], ["a"]) == ([], [])


def test_a_weighted_fusion_keeps_bm25s_order_where_the_lists_disagree_by_one_rank():
    assert semantic.rrf([["a", "b"], ["b", "a"]], weights=(1.0, semantic.DENSE_WEIGHT)) == ["a", "b"]


def test_vectors_join_only_questions_in_plain_words():
    assert semantic.joins("concept", "convert a string like yes or on to a boolean")
    # A pasted error the classifier took for prose: its exact words answer it, not its neighbours.
    assert not semantic.joins("concept", "packaging.version.InvalidVersion: Invalid version: 'latest'")
    assert not semantic.joins("concept", "TypeError: 'run' must be bool.")
    for kind in ("identifier", "qualified", "error", "usage", "why"):
        assert not semantic.joins(kind, "who calls fetch_page")
