"""HookMemory: what each session was last told by the hooks, kept per runner (Context.hooks)."""

from collections import OrderedDict
from typing import Optional

from runner.core.tasks.task import SessionKey


class HookMemory:
    """Per session: the status last injected (UserPromptSubmit sends only changes) and the
    reason of the last Stop block (the loop guard). Least recently used sessions go first,
    so a runner serving thousands of short sessions stays small."""

    def __init__(self, cap: int = 2048) -> None:
        self.cap = cap
        self._sent: "OrderedDict[SessionKey, str]" = OrderedDict()
        self._blocked: "OrderedDict[SessionKey, str]" = OrderedDict()

    def sent(self, key: SessionKey) -> str:
        return self._sent.get(key, "")

    def started(self, key: SessionKey) -> bool:
        """Was this session ever given its start context (SessionStart or a first prompt)?"""
        return key in self._sent

    def remember_sent(self, key: SessionKey, status: str) -> None:
        self._put(self._sent, key, status)

    def last_block(self, key: SessionKey) -> Optional[str]:
        return self._blocked.get(key)

    def remember_block(self, key: SessionKey, reason: Optional[str]) -> None:
        if reason is None:
            self._blocked.pop(key, None)
        else:
            self._put(self._blocked, key, reason)

    def forget(self, key: SessionKey) -> None:
        self._sent.pop(key, None)
        self._blocked.pop(key, None)

    def _put(self, table: "OrderedDict[SessionKey, str]", key: SessionKey, value: str) -> None:
        table[key] = value
        table.move_to_end(key)
        while len(table) > self.cap:
            table.popitem(last=False)

    def snapshot(self) -> dict:
        return {"sessions_with_status": len(self._sent), "sessions_blocked": len(self._blocked)}
