"""Where a work item's status changes: every move is asserted against plugkit.vocab.ITEM_ALLOWED,
and the rules a person relies on are put on the state, not on one edge, so no path goes round them:

- a critical-risk item is in_progress or completed only with a person's approval (`admit`,
  checked after every change: a status moved, a risk raised, a `.prd` adopted);
- an item is completed only on a receipt of its own check (the item's `verify`, else the
  workspace's), run green by the runner at the git HEAD of the moment (`proof_problem`);
- a check, once an item has one, is changed only by a person (`check_change`): an agent that
  may rewrite the check may make it `true`, so "weaker" is simply "different".
"""

from dataclasses import dataclass
from typing import Optional

from plugkit.lifecycle import prd
from plugkit.lifecycle.errors import Conflict, Forbidden
from plugkit.lifecycle.evidence import Receipt, sha256_bytes
from plugkit.lifecycle.model import State
from plugkit.vocab import APPROVED_ONLY_STATES, ITEM_ALLOWED

COMPLETED = "completed"
IN_PROGRESS = "in_progress"


@dataclass(frozen=True)
class Site:
    """What the runner sees at the moment of a change: the workspace's own check and git's HEAD."""

    verify: Optional[str] = None  # the workspace's check (verify in .plugkit/config.toml)
    lang: str = "bash"  # the language row every check runs in (verify_lang)
    repo: bool = False  # a git repository: a receipt must name the HEAD it ran at
    head: Optional[str] = None


@dataclass(frozen=True)
class Person:
    """Whether the caller is a person (the approvals' own judgement of its process ancestry)."""

    ok: bool = False
    why: str = "no person was asked"


def check_of(item: prd.Item, site: Site) -> Optional[str]:
    return item.verify or site.verify


def waiting_for_approval(items: list[prd.Item], st: State) -> list[prd.Item]:
    """Critical items no person approved, whatever their status: the rules never let one past
    pending without it, but a ledger from before them may hold one further on."""
    return [i for i in items if i.risk == "critical" and i.id not in st.approvals]


def admit(item: prd.Item, st: State) -> None:
    if item.risk == "critical" and item.status in APPROVED_ONLY_STATES and item.id not in st.approvals:
        raise Forbidden(f"{item.id} is critical-risk: a person must approve it first "
                        f"(the user runs `plugkit approve {item.id}`)")


def proof_problem(item: prd.Item, receipt: Receipt, site: Site) -> Optional[str]:
    """Why this receipt does not prove the item's check passed (None: it does). With
    site.repo False the HEAD is not asked about (no repository, or an import of old work)."""
    check = check_of(item, site) or ""
    t = receipt.task
    if t is None or t.code_sha256 != sha256_bytes(check.encode("utf-8", "surrogatepass")) or t.lang != site.lang:
        return f"receipt {receipt.id} is not a receipt of {item.id}'s check (`{check[:80]}` in {site.lang})"
    if t.state != COMPLETED or t.exit_code != 0:
        return f"receipt {receipt.id}: {item.id}'s check ended {t.state} (exit code {t.exit_code})"
    if site.repo and receipt.head is None:
        return f"receipt {receipt.id} ran {item.id}'s check at no known git HEAD"
    if site.repo and receipt.head != site.head:
        return f"receipt {receipt.id}: HEAD moved since {item.id}'s check ran at {receipt.head[:12]}"
    return None


def require_proof(item: prd.Item, receipts: list[Receipt], site: Site) -> None:
    if not receipts:
        raise Conflict(f"completing {item.id} requires naming evidence receipts: `plugkit prd verify "
                       f"{item.id}` runs its check and gives one")
    if not check_of(item, site):
        raise Conflict(f"{item.id} has no check to complete on: add one (`plugkit prd update {item.id} "
                       "--verify CMD`) or set verify in .plugkit/config.toml")
    problems = [p for r in receipts if (p := proof_problem(item, r, site)) is not None]
    if len(problems) == len(receipts):
        raise Conflict(f"{problems[0]}; `plugkit prd verify {item.id}` runs it and gives one")


def move(items: list[prd.Item], item: prd.Item, to: str, st: State, site: Site,
         receipts: list[Receipt]) -> None:
    """The one place an item's status changes (item is changed in place)."""
    if to not in ITEM_ALLOWED[item.status]:
        raise Conflict(f"{item.id} cannot go from {item.status} to {to} "
                       f"(from {item.status}: {', '.join(sorted(ITEM_ALLOWED[item.status]))})")
    if to in APPROVED_ONLY_STATES:
        waiting = prd.unfinished_blockers(items, item)
        if waiting:
            raise Conflict(f"{item.id} is blocked by unfinished {', '.join(waiting)}")
    before = item.status
    item.status = to
    try:
        admit(item, st)
        if to == COMPLETED:
            require_proof(item, receipts, site)
            st.item_bases.pop(item.id, None)
        elif to == IN_PROGRESS and site.head and item.id not in st.item_bases:
            st.item_bases[item.id] = site.head  # the first start only: a restart cannot move it
    except Exception:
        item.status = before
        raise


def check_change(item: prd.Item, new: Optional[str], site: Site, person: Person) -> None:
    """Adding a check where the item had none (its own nor the workspace's) is anyone's act;
    any other change of it is a person's."""
    current = check_of(item, site)
    if current is None or new == current or person.ok:
        return
    raise Forbidden(f"changing {item.id}'s check is a person's act ({person.why}): the user runs "
                    f"`plugkit prd update {item.id} --verify CMD` in their own terminal")
