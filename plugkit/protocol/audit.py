"""audit.*: the gate ledger's hash chain, checked and acknowledged (runner.system.stores.gate_chain)."""

from typing import Optional

from plugkit.protocol import Result


class LedgerBreak(Result):
    seq: int  # the record named; one past the chain's end for a table row no record accounts for
    text: str
    acknowledged: bool


class AuditReport(Result):
    """audit.verify: ok when no break is left unacknowledged."""

    ok: bool
    records: int
    breaks: list[LedgerBreak]
    sealed_at: Optional[int] = None  # the record whose hash was just signed as the head


class AuditAcked(Result):
    acknowledged: list[str]
    user: str
