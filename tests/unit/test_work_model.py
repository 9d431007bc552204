"""The run's plain data: what the store writes reads back the same, the wire shape carries every
field, a person's view of a run is bounded and says why it halted first."""

import os
import json

from client.show.work import MAX_ITEMS, run_lines
from plugkit.vocab import WORK_ITEM_STATES
from runner.core.work.model import END, LIVE, RETRIED, TERMINAL, ItemRun, Run
from runner.core.work.store import RunStore
from runner.rpc.shapes import work_run


def a_run(n: int = 2) -> Run:
    run = Run(id="r1", workspace="/w", worker="command", parallel=3, afk=True, merge="ff", branch="main",
              base="abc", started_at=1.0, stall_min=10.0, command=["agent"])
    for i in range(n):
        it = ItemRun(id=f"w{i}", subject=f"item {i}")
        it.enter("spawning", 2.0)  # the moves the table allows: queued -> spawning -> running
        it.enter("running", 2.0)
        it.phase("spawn", 2.0)
        run.items[it.id] = it
    return run


def test_the_store_reads_back_what_it_wrote(tmp_path):
    store = RunStore(str(tmp_path))
    run = a_run()
    run.items["w0"].enter("blocked", 5.0, "merge_conflict", "it conflicts")
    store.save(run)
    back = store.load("/w")
    assert back is not None and back.to_json() == run.to_json()
    assert store.load("/elsewhere") is None
    (kept,) = (tmp_path / "work").glob("*/*.json")
    kept.write_text("{not json")
    assert store.load("/w") is None  # unreadable: a new run starts clean, nothing crashes


def test_the_store_keeps_each_run_newest_last_and_finds_one_by_its_prefix(tmp_path):
    store = RunStore(str(tmp_path))
    legacy = a_run()
    legacy.id, legacy.started_at = "0abc", 0.5
    (tmp_path / "work").mkdir()
    # The one file per workspace of earlier versions is read as the oldest run.
    from runner.core.work.store import workspace_key
    (tmp_path / "work" / (workspace_key("/w") + ".json")).write_text(json.dumps(legacy.to_json()))
    for n in range(4):
        run = a_run(1)
        run.id, run.started_at = f"{n}f{n}f", 10.0 + n
        store.save(run)
    assert store.load("/w").id == "3f3f"
    assert [r.id for r in store.runs("/w")] == ["3f3f", "2f2f", "1f1f", "0f0f", "0abc"]
    assert store.find("/w", "1f").id == "1f1f" and store.find("/w", "0a").id == "0abc"
    assert store.find("/w", "f") is None and store.find("/w", "../x") is None  # no such run; never a path
    store.prune("/w", keep=2)
    assert [r.id for r in store.runs("/w")] == ["3f3f", "2f2f", "0abc"]


def test_a_journal_reads_back_past_a_line_cut_by_a_crash(tmp_path):
    from runner.core.work.journal import RunJournal, read

    run = a_run(1)
    path = str(tmp_path / "r1.events.jsonl")
    journal = RunJournal(run, path, clock=lambda: 7.0)
    it = run.items["w0"]
    journal.boot(it)
    journal.tool(it, "Bash", "rm -rf /", "deny", "outside the worktree\nmore")
    with open(path, "a") as fh:
        fh.write('{"seq": 3, "t": 7.0, "ite')  # the runner died mid-write
    back = read(path)
    assert [e["kind"] for e in back] == ["boot", "tool"]
    assert back[1]["text"] == "Bash rm -rf /: denied (outside the worktree)"
    again = RunJournal(run, path, clock=lambda: 8.0)
    again.exec(it, 5, "bash", "echo hi\nmore")
    assert [e["seq"] for e in read(path)] == [1, 2, 3] and read(path)[2]["text"] == "exec:bash task_5: echo hi"


def test_states_and_reasons_are_the_vocabulary():
    assert set(LIVE) | set(TERMINAL) == set(WORK_ITEM_STATES)
    assert RETRIED <= set(END)


def test_the_wire_shape_carries_every_item_field():
    info = work_run(a_run())
    assert info.items[0].phases == {"spawn": 2.0} and info.items[0].state == "running"
    assert json.loads(info.model_dump_json())["afk"] is True


def test_a_person_reads_why_first_and_a_bounded_list():
    run = a_run(MAX_ITEMS + 5)
    run.state, run.halt = "halted", "w3 is critical and waits for a person's approval"
    lines = run_lines(json.loads(work_run(run).model_dump_json()))
    assert lines[0] == "run r1 halted: w3 is critical and waits for a person's approval"
    assert any("and 5 more" in line for line in lines)
    assert len(lines) <= MAX_ITEMS + 4
    assert run_lines(None)[0].startswith("no plugkit work run")


def test_a_live_runs_side_files_are_private_never_read_as_runs_and_go_when_it_ends(tmp_path):
    store = RunStore(str(tmp_path))
    run = a_run()
    store.save(run)
    store.write_side(run, "env", {"API_KEY": "secret"})
    store.write_side(run, "refs", {"w0": {"refs/heads/main": "abc"}})
    env = store.side(run, "env")
    assert env is not None and os.stat(env).st_mode & 0o777 == 0o600  # it may hold credentials
    assert [r.id for r in store.runs("/w")] == [run.id]  # X.env.json is no run of its own
    assert store.read_side(run, "env") == {"API_KEY": "secret"}
    run.enter("done", None, 9.0)
    store.save(run)
    assert store.read_side(run, "env") is None and store.read_side(run, "refs") is None
