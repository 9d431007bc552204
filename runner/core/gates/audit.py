"""`audit.verify` and `audit.ack`: the ledger's hash chain checked (its head signed on the way),
and its breaks acknowledged by a person, judged as approvals are (runner.core.gates.approvals):
a terminal of its own, no agent host, task or adopted orphan above it."""

import asyncio
from collections import Counter
from dataclasses import dataclass
from typing import Optional, Protocol

from plugkit.refusals import Conflict, Forbidden
from runner.core.gates.approvals import ApprovalDesk
from runner.system.stores.gate_chain import Break
from runner.system.stores.gates import GateStore
from runner.system import logs, peers

log = logs.get("plugkit.gates")
NOT_AN_ITEM = "\0ledger"  # no host prompt is ever recorded for it: only a terminal acknowledges


class Gates(Protocol):
    desk: ApprovalDesk
    counters: Counter

    def ledger(self) -> Optional[GateStore]: ...

    def clock(self) -> float: ...


@dataclass(frozen=True)
class Audit:
    records: int
    breaks: list[Break]
    sealed_at: Optional[int]  # the seq of the head signed now


def _store(gates: Gates) -> GateStore:
    store = gates.ledger()
    if store is None:
        raise Conflict("this runner keeps no ledger (no home)")
    return store


async def verify(gates: Gates) -> Audit:
    store = _store(gates)
    breaks, records = await asyncio.to_thread(store.audit)
    # Sign the head only over an intact chain: a signature over a broken one would vouch for it.
    sealed = None if any(not b.acknowledged for b in breaks) else \
        await asyncio.to_thread(store.seal, "audit verify", gates.clock())
    gates.counters["audit_breaks" if breaks else "audit_clean"] += 1
    return Audit(records, breaks, sealed)


async def acknowledge(gates: Gates, root: str, peer: Optional[tuple], port: int,
                      runner_pid: int) -> tuple[list[str], str]:
    store = _store(gates)
    who = await asyncio.to_thread(peers.caller, peer, port, runner_pid)
    verdict = gates.desk.judge(root, NOT_AN_ITEM, who)
    if not verdict.ok or who is None:
        gates.counters["audit_ack_refused"] += 1
        log.warning("gate_ledger_ack_refused", why=verdict.reason)
        raise Forbidden(f"acknowledgement refused: {verdict.reason}. A person acknowledges from their own "
                        "terminal: `plugkit audit ack`")
    breaks, _ = await asyncio.to_thread(store.audit)
    texts = [b.text for b in breaks if not b.acknowledged]
    if texts:
        await asyncio.to_thread(store.acknowledge, texts, {"user": who.user, "tty": who.tty, "pid": who.pid},
                                gates.clock())
        log.warning("gate_ledger_acknowledged", user=who.user, tty=who.tty, breaks=texts[:10])
    return texts, who.user
