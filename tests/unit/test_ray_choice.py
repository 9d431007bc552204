"""Which nodes can run their slots' attempts at once (runner.node.choice.shortfall): Ray sizes a
node's pool of worker processes by its CPU count, so a node offering more plugkit_worker slots
than CPUs ran a wave one attempt after another, each in a fresh process; the attempt's log says
so and how to start the node."""

from runner.node.choice import shortfall


def test_a_node_with_fewer_cpus_than_slots_is_named_with_its_fix():
    why = shortfall({"plugkit_worker": 4.0, "CPU": 1.0, "memory": 1e9})
    assert why is not None and "4 plugkit_worker slot(s) but 1 CPU(s)" in why and "--num-cpus 4" in why, why


def test_a_node_whose_cpus_cover_its_slots_is_not():
    assert shortfall({"plugkit_worker": 4.0, "CPU": 4.0}) is None
    assert shortfall({"plugkit_worker": 2.0, "CPU": 8.0}) is None
