"""What the gate tests share: a check's receipt as the runner seals it, and a ledger in memory
(plugkit.lifecycle.authority's port) with the key its records are signed with."""

from plugkit.lifecycle import authority, gating, item_ops, mutables
from plugkit.lifecycle.evidence import TaskWitness, sha256_bytes

CHECK = "make test"
RECEIPT_AT = 1000.0  # when check_receipt's receipts are sealed
KEY = b"k" * 32


def check_receipt(ws, code=CHECK, exit_code=0, head=None, lang="bash", item="w1"):
    """What the runner seals after running `code` as a task (a witness of its end)."""
    state = "completed" if exit_code == 0 else "failed"
    task = TaskWitness(task_id=1, session_id="s", lang=lang, code_sha256=sha256_bytes(code.encode()),
                       state=state, exit_code=exit_code, truncated=False)
    seen = mutables.Witness(task_id=1, state=state, exit_code=exit_code, output="ok\n", truncated=False)
    return item_ops.evidence_add(ws, gating.Witnessed(seen, task), None, item, "", RECEIPT_AT, head)


class MemoryLedger:
    def __init__(self) -> None:
        self.rows: dict[str, authority.Record] = {}
        self.receipts: set[tuple[str, str]] = set()
        self.configs: dict[str, str] = {}

    def get(self, root, items=True):
        return self.rows.get(root)

    def put(self, root, record, now):
        self.rows[root] = record

    def put_state(self, root, state, state_view, now):
        rec = self.rows.get(root)
        if rec is None:
            return False
        self.rows[root] = authority.Record(state, rec.items, state_view, rec.items_view)
        return True

    def known(self, root):
        return root in self.rows

    def add_receipt(self, root, receipt_id, task_id, now):
        self.receipts.add((root, receipt_id))

    def has_receipt(self, root, receipt_id):
        return (root, receipt_id) in self.receipts

    def config_held(self, root):
        return self.configs.get(root)

    def hold_config(self, root, held, now):
        self.configs[root] = held
