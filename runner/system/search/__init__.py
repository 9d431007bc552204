"""Search's OS side: its SQLite stores, a worktree's seed copy and its background threads
(SearchEngine, the adapter behind core's port in runner/core/search/store.py)."""
