"""`gate.confirm_config`: a person takes the settings `.plugkit/config.toml` says now, weaker
ones included (plugkit.lifecycle.config_pin holds them until then).

Judged exactly as an approval (runner.core.gates.approvals): the caller's process, found
by the runner from the connection, must be a person at a terminal of their own; an agent
host's prompt never asked for this command, so under a host it is refused.
"""

import asyncio
import contextlib
import os
import time
from dataclasses import dataclass
from collections import Counter
from typing import Any, Callable, Optional, Protocol

from plugkit import enforce_pins
from plugkit.lifecycle import config_pin, state as state_mod
from plugkit.lifecycle.workspace import Workspace
from plugkit.refusals import Forbidden
from runner.core.gates.approvals import ApprovalDesk
from runner.system import logs, peers

log = logs.get("plugkit.gates")
NOT_AN_ITEM = "\0settings"  # no host prompt is ever recorded for it: only a terminal confirms


class Gates(Protocol):
    """What this module uses of the GateManager (which imports it: no cycle)."""

    desk: ApprovalDesk
    counters: Counter
    home: Optional[str]

    async def call(self, ws: Workspace, fn: Callable[..., Any], *args: Any) -> Any: ...


@dataclass(frozen=True)
class Confirmed:
    changed: list[str]  # "KEY: HELD -> NOW"
    user: str
    tty: Optional[str]


def _take(ws: Workspace, who: peers.Caller) -> list[str]:
    changed = [f"{d.key}: {d.held!r} -> {d.view!r}" for d in config_pin.confirm(ws)]
    if changed:
        with state_mod.transaction(ws) as st:
            st.notice(f"settings confirmed by {who.user} on {who.tty} at {time.strftime('%H:%M:%S')}: "
                      + "; ".join(changed))
    return changed


async def confirm(gates: Gates, ws: Workspace, peer: Optional[tuple], port: int,
                  runner_pid: int) -> Confirmed:
    who = await asyncio.to_thread(peers.caller, peer, port, runner_pid)
    verdict = gates.desk.judge(ws.root, NOT_AN_ITEM, who)
    if not verdict.ok or who is None:
        gates.counters["config_confirm_refused"] += 1
        log.warning("gate_config_confirm_refused", workspace=ws.root, why=verdict.reason,
                    chain=list(who.chain) if who else None)
        raise Forbidden(f"confirmation refused: {verdict.reason}. A person confirms the settings from their "
                        f"own terminal: `{config_pin.CONFIRM}`")
    changed = await gates.call(ws, _take, who)
    if gates.home is not None and config_pin.effective(ws).mode != "enforce":
        # The hooks' fail-closed pin (plugkit/enforce_pins.py) follows the person's decision.
        with contextlib.suppress(FileNotFoundError):
            os.unlink(enforce_pins.pin_path(gates.home, ws.root))
    log.warning("gate_config_confirmed", workspace=ws.root, user=who.user, tty=who.tty, changed=changed)
    return Confirmed(changed, who.user, who.tty)
