"""Where runs are kept: one JSON file per workspace under `$PLUGKIT_HOME/work/`, rewritten
atomically after every change. A runner that dies mid-run finds the run at its next start
and ends what was live as `runner_restarted`: its workers died with it (the boot reaper and
the cgroups see to that), and what landed is on the branch already."""

import hashlib
import json
import os
import tempfile
from typing import Optional

from runner.core.work.model import Run


def _name(workspace: str) -> str:
    return hashlib.sha256(os.fsencode(workspace)).hexdigest()[:24] + ".json"


class RunStore:
    def __init__(self, home: Optional[str]) -> None:
        self.dir = os.path.join(home, "work") if home else None

    def save(self, run: Run) -> None:
        if self.dir is None:
            return
        os.makedirs(self.dir, mode=0o700, exist_ok=True)
        data = json.dumps(run.to_json(), ensure_ascii=False).encode()
        fd, tmp = tempfile.mkstemp(prefix=".run.", suffix=".tmp", dir=self.dir)
        try:
            with os.fdopen(fd, "wb") as fh:
                fh.write(data)
            os.replace(tmp, os.path.join(self.dir, _name(run.workspace)))
        except BaseException:
            try:
                os.unlink(tmp)
            except OSError:
                pass
            raise

    def load(self, workspace: str) -> Optional[Run]:
        if self.dir is None:
            return None
        try:
            with open(os.path.join(self.dir, _name(workspace)), "rb") as fh:
                run = Run.from_json(json.load(fh))
        except (OSError, ValueError, TypeError, KeyError):
            return None  # none yet, or unreadable: a new run starts clean
        return run if run.workspace == workspace else None
