"""memory.* — cross-session memories (plugkit/memory/). Params and results as pydantic models (the wire contract)."""

from typing import Literal, Optional

from pydantic import Field

from plugkit.protocol import Result, SessionParams


# --- memory.* (cross-session memories: plugkit/memory/) -------------------------------

MemoryType = Literal["user", "feedback", "project", "reference"]
MemoryScope = Literal["project", "user"]


class MemoryAddParams(SessionParams):
    type: MemoryType
    name: str = Field(min_length=1, max_length=64)
    # Looser than the rule (under 80) so the rule's own message, which says what to do, is the one seen.
    description: Optional[str] = Field(default=None, max_length=400)
    text: str = Field(min_length=1, max_length=64 << 10)
    scope: Optional[MemoryScope] = None  # default: "user" for type user, else "project"
    replace: bool = False


class MemoryNameParams(SessionParams):
    name: str = Field(min_length=1, max_length=256)


class MemorySearchParams(SessionParams):
    text: str = Field(min_length=1, max_length=1000)
    limit: int = Field(default=10, ge=1, le=100)


class MemoryIndexParams(SessionParams):
    max_lines: int = Field(default=40, ge=2, le=200)
    max_bytes: int = Field(default=4096, ge=512, le=64 << 10)


class MemoryInfo(Result):
    name: str
    description: str
    type: MemoryType
    scope: MemoryScope
    created: str
    updated: str
    file: str
    stale: list[str] = []  # what it names that the workspace no longer has; empty: nothing found missing
    body: Optional[str] = None  # memory.show and memory.add only
    score: Optional[float] = None  # memory.search only


class MemoryList(Result):
    memories: list[MemoryInfo]
    problems: list[str] = []  # memory files that could not be read, and why


class MemoryIndex(Result):
    text: str  # "" when there are no memories
    shown: int
    total: int
