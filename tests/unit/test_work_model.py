"""The run's plain data: what the store writes reads back the same, the wire shape carries every
field, a person's view of a run is bounded and says why it halted first."""

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
    (tmp_path / "work" / next(p.name for p in (tmp_path / "work").iterdir())).write_text("{not json")
    assert store.load("/w") is None  # unreadable: a new run starts clean, nothing crashes


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
