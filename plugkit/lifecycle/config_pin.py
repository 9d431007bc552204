""".plugkit/config.toml held by the runner: the settings in force are the ones its ledger holds.

From the moment a workspace opts in, the runner keeps its settings (gates, verify,
verify_lang, verify_timeout_s, ready_limit, work_merge) in its ledger, as it keeps the
phase and the items; the file is a view of them. A change found in the file is:
- stronger (STRENGTH says so): adopted, the ledger follows the file;
- anything else (weaker, or a change the table cannot rank, such as one check for another):
  a `tampered` finding, shown wherever tampering is shown, blocking COMPLETE, while the
  held value stays in force; until a person confirms the file (`plugkit gate
  confirm-config`, judged like an approval) or the file says the held value again.
So `sed -i s/enforce/off/ .plugkit/config.toml` changes nothing the gates do.

Pure: the ledger (`ws.ledger`, the runner's gate store) is asked for `config_held(root)`
and told `hold_config(root, text, now)`; without a ledger (unit tests of the model) the
file is the config.
"""

import json
import time
from dataclasses import dataclass, fields, replace
from typing import Any, Optional

from plugkit.lifecycle import config as config_mod
from plugkit.lifecycle.config import GateConfig
from plugkit.lifecycle.workspace import Workspace

VIEW = ".plugkit/config.toml"
CONFIRM = "plugkit gate confirm-config"
ANY = object()  # in STRENGTH: any value other than those listed before it
# toml key -> its values from weakest to strongest. A change to a higher rank is adopted;
# any other change (lower, or between two values of one rank, or of a key with no ranks) is
# a person's to confirm. verify: no check < a check; one check for another is not ranked.
STRENGTH: dict[str, tuple[Any, ...]] = {
    "gates": ("off", "advisory", "enforce"),
    "verify": (None, ANY),
    "verify_lang": (),
    "verify_timeout_s": (),
    "ready_limit": (),
    "work_merge": (),
    "work_check_paths": (),  # a list has no rank here: any change of it is a person's to confirm
    "work_credentials": (),  # what workers may hold: any change is a person's to confirm
    # Sending workers (with their credentials) to a cluster is the weaker setting: back to local
    # is adopted, out to a cluster is a person's to confirm; and where the cluster is, always.
    "work_runtime": ("ray", "local"),
    "work_cluster": (),
    "exec_sandbox": (False, True),  # turning it on is adopted; off is a person's to confirm
    "work_network": ("host", "loopback-model"),
    # CI before COMPLETE: requiring it is adopted; dropping it or changing where it is asked
    # (provider, command, repository, API) is a person's to confirm (an agent's own fake API would do).
    "ci": (None, ANY),
    "ci_command": (),
    "ci_repo": (),
    "ci_api_url": (),
    "work_ci": (False, True),  # waiting for CI before landing is adopted; not waiting is a person's to confirm
    # Workers started again by a runner after a crash, with no person there: turning that off is
    # adopted, turning it back on is a person's to confirm.
    "work_resume": (True, False),
    # What reaches each worker from the main checkout, and code run in its sandbox: a person's to confirm.
    "work_include": (),
    "work_share": (),
    "work_setup": (),
    "work_ports": (),
    "work_ports_env": (),
    # A container engine is root on the host, even behind the proxy's rules: turning it off is
    # adopted, turning it on is a person's to confirm.
    "work_docker": (True, False),
    "work_day_tokens": (),  # ranked by LOWER_IS_STRONGER: a lower cap is adopted, a higher one is a person's
    "work_day_cost": (),
}
# Caps: none < any cap, and a lower cap is stronger than a higher one (raising it spends more).
LOWER_IS_STRONGER = frozenset({"work_day_tokens", "work_day_cost"})
# Settings the file alone decides: they only add context for the model and grant nothing, so
# turning one off is no tampering for a person to confirm.
FREE = frozenset({"digest_at_start"})
assert set(STRENGTH) | FREE == set(config_mod.KEYS), "every setting is held, and ranked here, or free"
_FIELD = {key: name for key, (name, _check) in config_mod.KEYS.items() if key not in FREE}


@dataclass(frozen=True)
class Drift:
    """One setting the file says differently from what the runner holds, not adopted."""

    key: str
    view: Any  # what the file says (after parsing: a typo reads as the default)
    held: Any


def _rank(key: str, value: Any) -> Optional[int]:
    order = STRENGTH[key]
    for i, v in enumerate(order):
        if v is ANY or v == value:
            return i
    return None


def stronger(key: str, held: Any, seen: Any) -> bool:
    if key in LOWER_IS_STRONGER:
        return seen is not None and (held is None or seen < held)
    a, b = _rank(key, held), _rank(key, seen)
    return a is not None and b is not None and b > a


def values(cfg: GateConfig) -> dict[str, Any]:
    """JSON-shaped (a tuple as a list), so a value read back from the ledger compares equal."""
    return {key: _json(getattr(cfg, name)) for key, name in _FIELD.items()}


def _json(value: Any) -> Any:
    return list(value) if isinstance(value, tuple) else value


def _config(held: dict[str, Any], problems: tuple[str, ...]) -> GateConfig:
    known = {f.name for f in fields(GateConfig)}
    return replace(GateConfig(), **{_FIELD[k]: tuple(v) if isinstance(v, list) else v
                                    for k, v in held.items() if k in _FIELD and _FIELD[k] in known},
                   problems=problems)


def _held(ws: Workspace) -> Optional[dict[str, Any]]:
    text = ws.ledger.config_held(ws.root)
    return None if text is None else json.loads(text)


def _hold(ws: Workspace, held: dict[str, Any]) -> None:
    ws.ledger.hold_config(ws.root, json.dumps(held, sort_keys=True), time.time())


def compare(held: dict[str, Any], seen: GateConfig) -> tuple[dict[str, Any], list[Drift]]:
    """(what to hold now: held plus the file's stronger values, the file's other changes)."""
    now, drift = dict(held), []
    for key, value in values(seen).items():
        if key not in held:  # a setting added to plugkit after the pin was taken
            now[key] = value
        elif value != held[key]:
            if stronger(key, held[key], value):
                now[key] = value
            else:
                drift.append(Drift(key, value, held[key]))
    return now, drift


def effective(ws: Workspace) -> GateConfig:
    """The settings in force. Takes the pin on first sight of an opted-in workspace and adopts
    stronger values from the file; never lets the file weaken what is held."""
    seen = config_mod.load(ws.config_path)
    if ws.ledger is None:
        return seen
    held = _held(ws)
    if held is None:
        if ws.opted_in:
            _hold(ws, values(seen))
        return seen
    now, _drift = compare(held, seen)
    if now != held:
        _hold(ws, now)
    return replace(_config(now, seen.problems), **{k: getattr(seen, k) for k in FREE})


def drift(ws: Workspace) -> list[Drift]:
    """The file's changes the runner does not take (the `tampered` findings of config.toml)."""
    if ws.ledger is None:
        return []
    held = _held(ws)
    return [] if held is None else compare(held, config_mod.load(ws.config_path))[1]


def confirm(ws: Workspace) -> list[Drift]:
    """A person's confirmation (judged by the caller): the file's settings become the held
    ones. Returns what changed. Call with the workspace lock held."""
    seen = config_mod.load(ws.config_path)
    held = _held(ws)
    changed = [] if held is None else compare(held, seen)[1]
    _hold(ws, values(seen))
    return changed
