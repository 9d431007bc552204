"""Lazy[T]: one value built on first use, for parts that cost an import the runner should
not pay before its first answer (the lifecycle model, pyppeteer, pyserial). Stdlib only."""

from typing import Callable, Generic, Optional, TypeVar

T = TypeVar("T")


class Lazy(Generic[T]):
    """`get()` builds the value once and returns it ever after; `peek()` never builds.

    Not a proxy: callers say `get()` where they need the value, so its type is the
    built one's and "not built yet" (nothing to release, nothing to show) stays visible.
    The runner calls it from its event loop only, so no lock guards the build.
    """

    __slots__ = ("_build", "_value")

    def __init__(self, build: Callable[[], T]) -> None:
        self._build = build
        self._value: Optional[T] = None

    def get(self) -> T:
        if self._value is None:
            self._value = self._build()
        return self._value

    def peek(self) -> Optional[T]:
        return self._value

    @property
    def built(self) -> bool:
        return self._value is not None
