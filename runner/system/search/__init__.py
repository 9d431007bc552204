"""Search's OS side: its SQLite stores, a worktree's overlay over its repository's and its threads
(SearchEngine, the adapter behind core's port in runner/core/search/store.py)."""
