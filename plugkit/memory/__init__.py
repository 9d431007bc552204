"""Cross-session memory for agents: Markdown files with front matter, an index, recall.

Pure (standard library only, no asyncio): the runner calls it from worker threads,
and a hook may call index_for_context directly.
"""

from plugkit.memory.recall import index_for_context

__all__ = ["index_for_context"]
