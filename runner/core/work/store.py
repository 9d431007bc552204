"""Where runs are kept: one directory per workspace under `$PLUGKIT_HOME/work/`, one JSON
file per run (rewritten atomically after every change) and its event journal beside it
(runner/core/work/journal.py). Files are named by start time, so the newest is the last
name; the oldest beyond KEEP are pruned when a run starts. A runner that dies mid-run finds
the run at its next start (its live marker) and resumes it, or ends what was live as
`runner_restarted` (runner/core/work/resume.py): its workers died with it (the boot reaper
and the cgroups see to that), and what landed is on the branch already.

The single `<workspace>.json` file of earlier versions is read as one more past run.

Beside a live run, two files let a runner started after a crash resume it
(runner/core/work/resume.py): `.env.json`, the environment its workers inherit (the
caller's: it may hold credentials, so 0600 in the 0700 home, and deleted when the run
ends), and `.refs.json`, the ref snapshots its workers are judged against."""

import hashlib
import json
import os
import re
import tempfile
from typing import Iterator, Optional

from runner.core.work.model import Run

LIVE = "live"  # one file per workspace with a live run, naming its root: what a new runner looks at first
KEEP = 50  # runs kept per workspace: `plugkit work runs` lists them, status/logs/trace reach them
_RUN_ID = re.compile(r"[0-9a-f]{1,32}")
_RUN_FILE = re.compile(r"[0-9]{15}-[A-Za-z0-9_-]{1,64}\.json")  # not a run's side file (X.env.json)


def workspace_key(workspace: str) -> str:
    return hashlib.sha256(os.fsencode(workspace)).hexdigest()[:24]


def write_atomic(path: str, data: bytes) -> None:
    """Atomically, 0600 (mkstemp's mode), in a 0700 directory made if missing."""
    os.makedirs(os.path.dirname(path), mode=0o700, exist_ok=True)
    fd, tmp = tempfile.mkstemp(prefix=".run.", suffix=".tmp", dir=os.path.dirname(path))
    try:
        with os.fdopen(fd, "wb") as fh:
            fh.write(data)
        os.replace(tmp, path)
    except BaseException:
        try:
            os.unlink(tmp)
        except OSError:
            pass
        raise


class RunStore:
    def __init__(self, home: Optional[str]) -> None:
        self.dir = os.path.join(home, "work") if home else None

    def _ws_dir(self, workspace: str) -> Optional[str]:
        return os.path.join(self.dir, workspace_key(workspace)) if self.dir else None

    def _file(self, run: Run) -> Optional[str]:
        d = self._ws_dir(run.workspace)
        return os.path.join(d, f"{int(run.started_at * 1000):015d}-{run.id}.json") if d else None

    def journal_path(self, run: Run) -> Optional[str]:
        path = self._file(run)
        return path[:-len(".json")] + ".events.jsonl" if path else None

    def side(self, run: Run, kind: str) -> Optional[str]:
        """A live run's side file (`env`, `refs`): gone once the run ends."""
        path = self._file(run)
        return f"{path[:-len('.json')]}.{kind}.json" if path else None

    def write_side(self, run: Run, kind: str, data: object) -> None:
        path = self.side(run, kind)
        if path is not None:
            write_atomic(path, json.dumps(data).encode())

    def read_side(self, run: Run, kind: str) -> Optional[object]:
        path = self.side(run, kind)
        try:
            with open(path or "", "rb") as fh:
                return json.load(fh)
        except (OSError, ValueError):
            return None

    def save(self, run: Run) -> None:
        path = self._file(run)
        if path is None:
            return
        write_atomic(path, json.dumps(run.to_json(), ensure_ascii=False).encode())
        self._mark(run)

    def _mark(self, run: Run) -> None:
        """A live run leaves a marker a runner started after a crash finds without reading every run."""
        assert self.dir is not None
        marker = os.path.join(self.dir, LIVE, workspace_key(run.workspace))
        if run.ended_at is None:
            if not os.path.exists(marker):
                os.makedirs(os.path.dirname(marker), mode=0o700, exist_ok=True)
                with open(marker, "w", encoding="utf-8") as fh:
                    fh.write(run.workspace)
        else:
            for path in (marker, self.side(run, "env"), self.side(run, "refs")):
                try:
                    os.unlink(path or "")
                except FileNotFoundError:
                    pass

    def live_roots(self) -> list[str]:
        """The workspaces whose latest run was live when its runner last wrote it."""
        d = os.path.join(self.dir, LIVE) if self.dir else None
        roots = []
        for name in (os.listdir(d) if d and os.path.isdir(d) else []):
            try:
                with open(os.path.join(d, name), encoding="utf-8") as fh:
                    roots.append(fh.read())
            except OSError:
                continue
        return roots

    def _names(self, workspace: str) -> list[str]:
        """The workspace's run files, oldest first (by the start time in their names)."""
        d = self._ws_dir(workspace)
        try:
            names = sorted(n for n in os.listdir(d) if _RUN_FILE.fullmatch(n)) if d else []
        except OSError:
            names = []
        return names

    def _read(self, path: str, workspace: str) -> Optional[Run]:
        try:
            with open(path, "rb") as fh:
                run = Run.from_json(json.load(fh))
        except (OSError, ValueError, TypeError, KeyError):
            return None  # unreadable: left out, never a crash
        return run if run.workspace == workspace else None

    def _legacy(self, workspace: str) -> Optional[Run]:
        return self._read(os.path.join(self.dir, workspace_key(workspace) + ".json"), workspace) if self.dir else None

    def load(self, workspace: str) -> Optional[Run]:
        """The workspace's latest run, or None."""
        for name in reversed(self._names(workspace)):
            run = self._read(os.path.join(self._ws_dir(workspace) or "", name), workspace)
            if run is not None:
                return run
        return self._legacy(workspace)

    def runs(self, workspace: str) -> Iterator[Run]:
        """Every kept run of the workspace, newest first."""
        for name in reversed(self._names(workspace)):
            run = self._read(os.path.join(self._ws_dir(workspace) or "", name), workspace)
            if run is not None:
                yield run
        legacy = self._legacy(workspace)
        if legacy is not None:
            yield legacy

    def find(self, workspace: str, run_id: str) -> Optional[Run]:
        """A kept run by its id (or a unique prefix of it)."""
        if not _RUN_ID.fullmatch(run_id):
            return None
        hits = [n for n in self._names(workspace) if n.split("-", 1)[-1].startswith(run_id)]
        if len(hits) == 1:
            return self._read(os.path.join(self._ws_dir(workspace) or "", hits[0]), workspace)
        legacy = self._legacy(workspace) if not hits else None
        return legacy if legacy is not None and legacy.id.startswith(run_id) else None

    def prune(self, workspace: str, keep: int = KEEP) -> None:
        d = self._ws_dir(workspace)
        for name in self._names(workspace)[:-keep] if d else []:
            stem = os.path.join(d, name[:-len(".json")])
            for path in (stem + ".json", stem + ".events.jsonl", stem + ".env.json", stem + ".refs.json"):
                try:
                    os.unlink(path)
                except OSError:
                    pass
